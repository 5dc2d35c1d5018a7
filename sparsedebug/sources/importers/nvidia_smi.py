"""Import ``nvidia-smi --query-gpu=... --format=csv`` logs: clocks, power, temperature over time.

Columns are found by their query name (the header text before any ``[unit]``), so
any subset and order works; ``--format=csv,nounits`` is accepted too. Both
``clocks_event_reasons.active`` and the older drivers' ``clocks_throttle_reasons.active``
are decoded from the NVML clock event reason bitmask into named reasons. Logs of
several GPUs (an ``index``, ``uuid`` or ``pci.bus_id`` column) are summarised per GPU.

The summary is evidence for the thermal mechanism: how far the SM clock fell
under load versus its maximum, and how long each reason was active.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sparsedebug.core.bounds import MAX_LOG_READING, check_bounded
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import read_text
from sparsedebug.core.stats import median
from sparsedebug.records.artifacts import ReasonTime, SmiReport, SmiSample, SmiSummary
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import TimeWindow
from sparsedebug.sources.importers.alignment import calendar_problem, overlapping, sample_spans

# NVML clock event reason bits (nvmlClocksEventReason*).
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})
POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake_slowdown", "hw_slowdown"})

# The board power fields of ``--query-gpu``, each its own reading (``nvidia-smi --help-query-gpu``): ``power.draw``
# the last measured power, on Ampere and newer an average over 1 s, instantaneous on older GPUs;
# ``power.draw.instant`` the last instantaneous reading; ``power.draw.average`` the driver's average (Ampere except
# GA100 and newer). A summary's ``power_w`` is the first of these the log has, named in ``power_field``.
POWER_FIELDS = ("power.draw", "power.draw.instant", "power.draw.average")

# Joules per unit of an energy column, by the unit in its header (``[mJ]``); a header without a unit is read in mJ,
# the unit of NVML's counter (``nvmlDeviceGetTotalEnergyConsumption``: mJ since the driver loaded).
ENERGY_UNITS_J: dict[str, float] = {"mj": 1e-3, "j": 1.0, "kj": 1e3, "wh": 3600.0, "kwh": 3.6e6}

_ALIASES: dict[str, tuple[str, ...]] = {
    "timestamp": ("timestamp",),
    "gpu": ("index", "uuid", "pci.bus_id", "gpu_uuid", "gpu_bus_id"),
    "temperature_c": ("temperature.gpu",),
    "sm_clock_mhz": ("clocks.current.sm", "clocks.sm"),
    "mem_clock_mhz": ("clocks.current.memory", "clocks.mem"),
    "max_sm_clock_mhz": ("clocks.max.sm", "clocks.max.sm_clock"),
    "power_w": POWER_FIELDS,
    "power_draw_w": ("power.draw",),
    "power_draw_instant_w": ("power.draw.instant",),
    "power_draw_average_w": ("power.draw.average",),
    "power_limit_w": ("enforced.power.limit", "power.enforced_limit", "power.limit"),
    "util_gpu_pct": ("utilization.gpu",),
    "util_mem_pct": ("utilization.memory",),
    "reasons": ("clocks_event_reasons.active", "clocks_throttle_reasons.active", "clocks_event_reasons_active"),
}
_TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%f")


def decode_reasons(mask: int) -> list[str]:
    """Names of the NVML clock event reasons set in ``mask`` (unknown bits as ``bit_0x...``)."""
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit_{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return names


def _query_name(header: str) -> str:
    return header.split("[", 1)[0].strip().lower()


def _value(text: str, *, keep_nonfinite: bool = False) -> float | None:
    """A cell's number; None for no reading (empty, N/A, [Not Supported], not a number). "nan"/"inf" is no
    reading too, unless ``keep_nonfinite``: then it is returned for the bounds check to refuse by name."""
    cleaned = text.strip()
    if not cleaned or cleaned.startswith("[") or cleaned.lower() in ("n/a", "not supported"):
        return None
    number = cleaned.split()[0]
    try:
        value = float(number)
    except ValueError:
        return None
    return value if keep_nonfinite or math.isfinite(value) else None


# What a reading of each sampled column can be (``core.bounds.check_bounded``): a temperature above absolute zero and
# below 500 C, a clock below 100 GHz (GDDR memory clocks reach 10,501 MHz as nvidia-smi writes them), a share in 0-100
# %.
_BOUNDS: dict[str, tuple[float, float, str]] = {
    "temperature_c": (-273.15, 500.0, "degrees C"),
    "sm_clock_mhz": (0.0, 100_000.0, "MHz"),
    "mem_clock_mhz": (0.0, 100_000.0, "MHz"),
    "util_gpu_pct": (0.0, 100.0, "percent"),
    "util_mem_pct": (0.0, 100.0, "percent"),
}


_CLOCKS = ("sm_clock_mhz", "mem_clock_mhz")

# MHz per unit a clock cell or its header may carry (nvidia-smi writes MHz; a converted or hand-made log may not).
_CLOCK_UNITS = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}

# The slowest a GPU clock that is running can read, in MHz: idle SM clocks are a few hundred MHz (an H200's 345);
# a reading below it that is not 0 is a clock in another unit (``1.98`` for 1.98 GHz), not a clock.
MIN_RUNNING_CLOCK_MHZ = 10.0


def _clock_mhz(value: float, cell: str, header: str, where: str) -> float:
    """A clock reading in MHz, from the unit its cell writes after the number, else its header's (MHz when neither
    says): an unknown unit, or a running clock under :data:`MIN_RUNNING_CLOCK_MHZ`, is refused by name."""
    parts = cell.strip().split()
    unit = parts[1] if len(parts) > 1 else _header_unit(header) or "MHz"
    scale = _CLOCK_UNITS.get(unit.lower())
    if scale is None:
        raise UserError(f"{where} clock {cell.strip()!r}: unit {unit!r} is none of Hz, kHz, MHz, GHz")
    mhz = value * scale
    if 0 < mhz < MIN_RUNNING_CLOCK_MHZ:
        raise UserError(f"{where} clock {cell.strip()!r} is {mhz:g} MHz, below any running GPU clock "
                        f"({MIN_RUNNING_CLOCK_MHZ:g} MHz): a clock in GHz written as MHz? nvidia-smi writes MHz")
    return mhz


def _header_unit(header: str) -> str | None:
    if "[" not in header:
        return None
    return header.split("[", 1)[1].split("]", 1)[0].strip()


def _reading(path: Path, line: int, column: str, text: str) -> float | None:
    """A power or energy cell: None when the log says no reading (empty, N/A, [Not Supported]); a finite,
    non-negative number otherwise; anything else is refused naming the file, line and column."""
    cleaned = text.strip()
    if not cleaned or cleaned.startswith("[") or cleaned.lower() in ("n/a", "not supported"):
        return None
    try:
        value = float(cleaned.split()[0])
    except ValueError:
        raise UserError(f"{path}: line {line}, column {column!r}: {cleaned!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{path}: line {line}, column {column!r}: {cleaned!r} is not a finite, non-negative reading")
    return check_bounded(value, f"{path}: line {line}, column {column!r}:", 0.0, MAX_LOG_READING)


def _energy_column(header: list[str], cells: list[str], path: Path) -> tuple[int, float] | None:
    """The energy counter column (a query name with 'energy' in it) and its joules per unit, if the log has one."""
    for k, name in enumerate(header):
        if "energy" in name:
            unit = _header_unit(cells[k])
            scale = ENERGY_UNITS_J.get((unit or "mJ").lower())
            if scale is None:
                raise UserError(f"{path}: line 1, column {cells[k].strip()!r}: energy unit {unit!r} is none of mJ, J, kJ, Wh, kWh")
            return k, scale
    return None


def _time(text: str) -> datetime | None:
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    return None


def _calendar_reason(text: str, fmt: str) -> str | None:
    """Why ``text``, laid out as ``fmt``, is no date (``alignment.calendar_problem``); None if it is one or is laid out otherwise."""
    try:
        datetime.strptime(text.strip(), fmt)
    except ValueError as exc:
        return calendar_problem(exc)
    return None


def smi_time_utc_s(text: str, utc_offset_h: float) -> float | None:
    """An nvidia-smi timestamp (local wall-clock time, no zone) as UTC seconds since the epoch, given that clock's
    offset from UTC in hours; None when the text is no nvidia-smi timestamp."""
    local = _time(text)
    if local is None:
        return None
    return (local - timedelta(hours=utc_offset_h)).replace(tzinfo=UTC).timestamp()


# Upper bound of a reference max SM clock (``--max-clock``): no GPU's SM clock reaches 10 GHz (the H200's boost is
# 1,980 MHz).
MAX_SM_CLOCK_MHZ = 10_000.0


def check_max_clock(max_clock_mhz: float) -> None:
    """Refuse a reference max SM clock that is not a finite number of MHz in (0, :data:`MAX_SM_CLOCK_MHZ`]."""
    if not math.isfinite(max_clock_mhz) or not 0 < max_clock_mhz <= MAX_SM_CLOCK_MHZ:
        raise UserError(f"--max-clock {max_clock_mhz:g}: expected a clock in MHz, above 0 and at most {MAX_SM_CLOCK_MHZ:,.0f}")


def _check_time_order(path: Path, samples: list[SmiSample]) -> None:
    """Refuse a log whose samples of one GPU go back in time (a log reversed or edited out of order), or whose
    samples all stand at one time (no span to measure anything over): nvidia-smi writes each GPU's rows in time order."""
    last: dict[str, SmiSample] = {}
    for sample in samples:
        before = last.get(sample.gpu)
        if before is not None and sample.t_s < before.t_s:
            raise UserError(
                f"{path}: line {sample.line}: timestamp {sample.time!r} is {before.t_s - sample.t_s:.3f} s before line "
                f"{before.line}'s {before.time!r} (GPU {sample.gpu}): the log's rows must be in time order"
            )
        last[sample.gpu] = sample
    for gpu in last:
        group = [s for s in samples if s.gpu == gpu]
        if len(group) > 1 and group[0].t_s == group[-1].t_s:
            raise UserError(f"{path}: column 'timestamp': all {len(group)} samples of GPU {gpu} are at {group[0].time!r}: "
                            "a log over time has one timestamp a sample")


def _check_max_clock_covers(max_clock_mhz: float | None, samples: list[SmiSample], path: Path) -> None:
    """A reference max clock below a clock the log holds would make a negative clock drop: refused."""
    clocks = [(s.sm_clock_mhz, s) for s in samples if s.sm_clock_mhz is not None]
    if max_clock_mhz is None or not clocks:
        return
    top, where = max(clocks, key=lambda item: item[0])
    if top > max_clock_mhz:
        raise UserError(
            f"--max-clock {max_clock_mhz:g}: below the SM clock of {top:g} MHz that {path} records "
            f"(GPU {where.gpu}, line {where.line}); give the GPU's max clock, at least {top:g} MHz"
        )


@dataclass(frozen=True)
class WindowedSamples:
    """The samples of a clock log that fall in one run's absolute time window, or why none can be taken."""

    samples: list[SmiSample]
    aligned: bool
    # Which samples were taken (file, count, the window's start and length), or why none could be: a coded note.
    note: Note


def samples_in_window(report: SmiReport, window: TimeWindow | None, utc_offset_h: float | None) -> WindowedSamples:
    """The samples of ``report`` whose interval overlaps ``window`` (absolute UTC).

    nvidia-smi timestamps are local wall-clock time without a zone: ``utc_offset_h`` is that
    clock's offset from UTC in hours (0 for a UTC machine); without it, or without the run's
    window, the log cannot be aligned and the result says so (``aligned`` False). A sample
    stands for the time until the next one, so a window shorter than the sampling interval
    still gets the sample that covers it. Any clock log of ``SmiSample`` rows aligns here
    (classify's thermal rules read it; energy reuses it).
    """
    if window is None:
        return WindowedSamples([], False, note("sources.smi_window.no_run_window", file=report.file))
    if utc_offset_h is None:
        return WindowedSamples([], False, note("sources.smi_window.no_utc_offset", file=report.file))
    stamps: list[tuple[float, SmiSample]] = []
    for sample in report.samples:
        t_utc = smi_time_utc_s(sample.time, utc_offset_h)
        if t_utc is not None:
            stamps.append((t_utc, sample))
    stamps.sort(key=lambda item: item[0])
    spans = sample_spans([t for t, _ in stamps])
    inside = [stamps[k][1] for k in overlapping(spans, window.start_utc_s, window.end_utc_s)]
    if not inside:
        return WindowedSamples([], True, note(
            "sources.smi_window.empty", file=report.file, start_utc_s=window.start_utc_s,
            log_first_s=stamps[0][0] if stamps else None, log_last_s=stamps[-1][0] if stamps else None,
        ))
    return WindowedSamples(inside, True, note("sources.smi_window.samples", file=report.file, samples=len(inside),
                                              start_utc_s=window.start_utc_s, seconds=window.end_utc_s - window.start_utc_s))


def load_smi(path: Path, max_clock_mhz: float | None = None, text: str | None = None) -> SmiReport:
    """Parse an nvidia-smi CSV log and summarise clocks, power and clock event reasons per GPU (``max_clock_mhz``:
    :func:`check_max_clock`, and at least every SM clock the log holds: a clock drop is measured below it;
    ``text``: the file's content when the caller has read it already)."""
    if max_clock_mhz is not None:
        check_max_clock(max_clock_mhz)
    if text is None:
        text = read_text(path)
    rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        raise UserError(f"{path}: empty file, expected nvidia-smi --format=csv output")
    header = [_query_name(cell) for cell in rows[0]]
    columns: dict[str, int] = {}
    for key, names in _ALIASES.items():
        for name in names:
            if name in header:
                columns[key] = header.index(name)
                break
    if "timestamp" not in columns:
        raise UserError(
            f"{path}: no 'timestamp' column in the header {rows[0][:3]}...; "
            "log with --query-gpu=timestamp,... --format=csv (with header)"
        )
    energy = _energy_column(header, rows[0], path)
    if "sm_clock_mhz" not in columns and "reasons" not in columns and "power_w" not in columns and energy is None:
        raise UserError(f"{path}: none of clocks.current.sm, power.draw, clocks_event_reasons.active, an energy counter in the header")

    samples: list[SmiSample] = []
    first: datetime | None = None
    for line_no, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise UserError(f"{path}: line {line_no}: {len(row)} fields, header has {len(header)}")
        stamp = _time(row[columns["timestamp"]])
        if stamp is None:
            text = row[columns["timestamp"]]
            reason = next((r for fmt in _TIME_FORMATS if (r := _calendar_reason(text, fmt)) is not None), None)
            if reason is not None:
                raise UserError(f"{path}: line {line_no}: timestamp {text.strip()!r} is no date: {reason}")
            raise UserError(f"{path}: line {line_no}: timestamp {text!r} is not like 2026/11/29 23:42:23.307")
        if first is None:
            first = stamp
        samples.append(_sample(path, rows[0], columns, energy, line_no, row, (stamp - first).total_seconds()))
    if not samples:
        raise UserError(f"{path}: header only, no samples")
    _check_time_order(path, samples)
    given_max: dict[str, float] = {}
    if "max_sm_clock_mhz" in columns:
        column = columns["max_sm_clock_mhz"]
        for line_no, row in enumerate(rows[1:], start=2):
            gpu = row[columns["gpu"]].strip() if "gpu" in columns else "0"
            value = _value(row[column])
            if value is not None:
                value = _clock_mhz(value, row[column], rows[0][column], f"{path}: line {line_no}, column {rows[0][column].strip()!r}:")
                given_max[gpu] = max(value, given_max.get(gpu, 0.0))
    by_gpu: dict[str, list[SmiSample]] = defaultdict(list)
    for sample in samples:
        by_gpu[sample.gpu].append(sample)
    _check_max_clock_covers(max_clock_mhz, samples, path)
    power_field = header[columns["power_w"]] if "power_w" in columns else None
    summaries = [
        _summarise(gpu, group, max_clock_mhz, given_max.get(gpu), "reasons" in columns).model_copy(update={"power_field": power_field})
        for gpu, group in by_gpu.items()
    ]
    reasons_col = rows[0][columns["reasons"]].strip() if "reasons" in columns else None
    return SmiReport(
        file=str(path), columns=[c.strip() for c in rows[0]], reasons_column=reasons_col, samples=samples, summaries=summaries,
        power_field=power_field, energy_column=rows[0][energy[0]].strip() if energy is not None else None,
    )


def _sample(path: Path, cells: list[str], columns: dict[str, int], energy: tuple[int, float] | None, line_no: int,
            row: list[str], t_s: float) -> SmiSample:
    """One data row of an nvidia-smi log (``cells``: the header as written, for messages)."""
    mask: int | None = None
    if "reasons" in columns:
        raw = row[columns["reasons"]].strip()
        if raw and not raw.startswith("["):
            try:
                mask = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
            except ValueError:
                raise UserError(f"{path}: line {line_no}: clock event reasons {raw!r} is not a hex bitmask") from None
            if not 0 <= mask < 1 << 64:  # NVML's reasons are a 64-bit mask; a negative one has endless bits
                raise UserError(f"{path}: line {line_no}: clock event reasons {raw!r} is not a 64-bit bitmask")

    def get(key: str) -> float | None:
        if key not in columns:
            return None
        value = _value(row[columns[key]], keep_nonfinite=True)
        if value is None:
            return None
        where = f"{path}: line {line_no}, column {cells[columns[key]].strip()!r}:"
        if key in _CLOCKS:
            value = _clock_mhz(value, row[columns[key]], cells[columns[key]], where)
        low, high, unit = _BOUNDS[key]
        return check_bounded(value, where, low, high, unit)

    def power(key: str) -> float | None:
        return _reading(path, line_no, cells[columns[key]].strip(), row[columns[key]]) if key in columns else None

    energy_value = _reading(path, line_no, cells[energy[0]].strip(), row[energy[0]]) if energy is not None else None
    return SmiSample(
        line=line_no,
        gpu=row[columns["gpu"]].strip() if "gpu" in columns else "0",
        time=row[columns["timestamp"]].strip(),
        t_s=t_s,
        temperature_c=get("temperature_c"),
        sm_clock_mhz=get("sm_clock_mhz"),
        mem_clock_mhz=get("mem_clock_mhz"),
        power_w=power("power_w"),
        power_draw_w=power("power_draw_w"),
        power_draw_instant_w=power("power_draw_instant_w"),
        power_draw_average_w=power("power_draw_average_w"),
        power_limit_w=power("power_limit_w"),
        energy_j=energy_value * energy[1] if energy is not None and energy_value is not None else None,
        util_gpu_pct=get("util_gpu_pct"),
        util_mem_pct=get("util_mem_pct"),
        reasons_mask=mask,
        reasons=decode_reasons(mask) if mask is not None else [],
    )


def _summarise(gpu: str, samples: list[SmiSample], max_given: float | None, max_column: float | None, has_reasons: bool) -> SmiSummary:
    times = [s.t_s for s in samples]
    intervals = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    typical = median(intervals) if intervals else 0.0
    # each sample stands for the time until the next one; the last for a typical interval
    weights = [max(b - a, 0.0) for a, b in zip(times, times[1:], strict=False)] + [typical]
    clocks = [s.sm_clock_mhz for s in samples if s.sm_clock_mhz is not None]
    observed_max = max(clocks) if clocks else None
    ref: float | None
    if max_given is not None:
        ref, source = max_given, "given"
    elif max_column is not None:
        ref, source = max_column, "clocks.max.sm column"
    else:
        ref, source = observed_max, "max observed"
    if has_reasons:
        active = [s for s in samples if s.reasons_mask is not None and not s.reasons_mask & 0x1]
    else:
        active = [s for s in samples if (s.util_gpu_pct or 0.0) > 0.0]
    active_clocks = [s.sm_clock_mhz for s in active if s.sm_clock_mhz is not None]
    low = min(active_clocks) if active_clocks else None
    mid = median(active_clocks) if active_clocks else None
    reason_seconds: dict[str, float] = defaultdict(float)
    reason_counts: dict[str, int] = defaultdict(int)
    for sample, weight in zip(samples, weights, strict=True):
        for reason in sample.reasons:
            reason_seconds[reason] += weight
            reason_counts[reason] += 1
    order = {name: i for i, name in enumerate(CLOCK_EVENT_REASONS.values())}
    reasons = [
        ReasonTime(reason=name, seconds=reason_seconds[name], samples=reason_counts[name], fraction=reason_counts[name] / len(samples))
        for name in sorted(reason_seconds, key=lambda n: (order.get(n, len(order)), n))
    ]
    powers = [s.power_w for s in samples if s.power_w is not None]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]

    def drop(value: float | None) -> float | None:
        if value is None or ref is None or ref <= 0:
            return None
        return (ref - value) / ref * 100.0

    return SmiSummary(
        gpu=gpu,
        samples=len(samples),
        duration_s=(times[-1] - times[0]) + typical,
        max_sm_clock_mhz=ref,
        max_clock_source=source,
        max_observed_sm_clock_mhz=observed_max,
        active_samples=len(active),
        min_sm_clock_mhz=low,
        median_sm_clock_mhz=mid,
        clock_drop_pct=drop(low),
        median_clock_drop_pct=drop(mid),
        max_temperature_c=max(temps) if temps else None,
        max_power_w=max(powers) if powers else None,
        median_power_w=median(powers) if powers else None,
        reasons=reasons,
        thermal_seconds=sum(w for x, w in zip(samples, weights, strict=True) if THERMAL_REASONS.intersection(x.reasons)),
        power_seconds=sum(w for x, w in zip(samples, weights, strict=True) if POWER_REASONS.intersection(x.reasons)),
    )
