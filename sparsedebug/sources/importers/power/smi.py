"""nvidia-smi CSV logs as power evidence: each ``power.draw*`` field its own channel, an energy counter when the
query has one, the enforced power limit, clocks and idle state beside every reading.

The CSV is parsed by :func:`sparsedebug.sources.importers.nvidia_smi.load_smi` (timestamps, values, GPU column,
clock event reasons), so the clock evidence and the power evidence of one log are the same rows. What each field
measures is quoted from ``nvidia-smi --help-query-gpu``:

- ``power.draw``: "The last measured power draw for the entire board, in watts. On Ampere or newer devices,
  returns average power draw over 1 sec. On older devices, returns instantaneous power draw." (+/- 5 W)
- ``power.draw.instant``: "The last measured instant power draw for the entire board, in watts." (+/- 5 W)
- ``power.draw.average``: "The last measured average power draw for the entire board, in watts. Only available
  if power management is supported and Ampere (except GA100) or newer devices." NVML documents the average of
  ``nvmlDeviceGetPowerUsage`` on those GPUs as one over 1 s.
- ``enforced.power.limit``: "The power management algorithm's power ceiling, in watts" (``power.limit``, the
  software limit, when the log has only that).

``--help-query-gpu`` (driver 535 and the copies of later lists we found) names no energy field. NVML's counter
(``nvmlDeviceGetTotalEnergyConsumption``: mJ since the driver was last reloaded, Volta and newer) is read when a
logging wrapper adds it as a column whose query name holds ``energy`` (e.g. ``total_energy_consumption [mJ]``);
its unit comes from the header (mJ without one).

nvidia-smi timestamps are local wall-clock time without a zone: readings get UTC times only when the clock's
offset from UTC is known (``utc_offset_h``; logging under ``TZ=UTC`` makes it 0).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from sparsedebug.records.artifacts import SmiReport, SmiSample
from sparsedebug.records.power import PowerChannel, PowerLog, PowerQuantity, PowerReading
from sparsedebug.sources.importers.nvidia_smi import smi_time_utc_s
from sparsedebug.sources.importers.power.channels import BOARD_ENERGY, BOARD_POWER, observed_update_period

# The power fields in the order energy prefers them: the instantaneous reading resolves the window best.
# (What each measures: render.words.sources_power.CHANNEL_NOTES.)
_POWER_COLUMNS: tuple[tuple[str, Callable[[SmiSample], float | None], PowerQuantity, float | None], ...] = (
    ("power.draw.instant", lambda s: s.power_draw_instant_w, "power_instant", None),
    ("power.draw.average", lambda s: s.power_draw_average_w, "power_average", 1.0),
    ("power.draw", lambda s: s.power_draw_w, "power_average", 1.0),
)


def idle_of(sample: SmiSample) -> bool | None:
    """The row's clock event reasons say gpu_idle; without reasons, utilisation 0; None when the row says neither."""
    if sample.reasons_mask is not None:
        return bool(sample.reasons_mask & 0x1)
    if sample.util_gpu_pct is not None:
        return sample.util_gpu_pct == 0
    return None


def power_log_from_smi(report: SmiReport, utc_offset_h: float | None) -> PowerLog:
    """The power evidence of a parsed nvidia-smi log: one channel per power field and energy column it has."""
    getters: list[tuple[PowerChannel, Callable[[SmiSample], float | None]]] = []
    for field, get, quantity, averaging in _POWER_COLUMNS:
        if any(get(s) is not None for s in report.samples):
            getters.append((PowerChannel(source="nvidia-smi", field=field, quantity=quantity, unit="W", scope=BOARD_POWER,
                                         update_period_s=None, averaging_s=averaging), get))
    if report.energy_column is not None and any(s.energy_j is not None for s in report.samples):
        getters.append((PowerChannel(
            source="nvidia-smi", field=report.energy_column.split("[", 1)[0].strip(), quantity="energy_counter", unit="J",
            scope=BOARD_ENERGY, update_period_s=None,
        ), lambda s: s.energy_j))
    channels: list[PowerChannel] = []
    readings: dict[str, list[PowerReading]] = {}
    for channel, get in getters:
        rows = sorted((s for s in report.samples if get(s) is not None), key=lambda s: (s.gpu, s.t_s))
        taken = [_reading(s, get(s), utc_offset_h) for s in rows]
        channels.append(channel.model_copy(update={"update_period_s": _period(rows, get)}))
        readings[channel.field] = sorted(taken, key=lambda r: (r.device, r.line))
    limits = [s.power_limit_w for s in report.samples if s.power_limit_w is not None]
    return PowerLog(file=report.file, source="nvidia-smi", channels=channels, readings=readings,
                    power_limit_w=Counter(limits).most_common(1)[0][0] if limits else None, utc_offset_h=utc_offset_h)


def place_smi_log(log: PowerLog, utc_offset_h: float) -> PowerLog:
    """``log`` with UTC times from its zone-less timestamps, the clock's offset from UTC now known."""
    readings = {
        field: [r.model_copy(update={"t_utc_s": smi_time_utc_s(r.t_local, utc_offset_h)}) for r in rows]
        for field, rows in log.readings.items()
    }
    return log.model_copy(update={"readings": readings, "utc_offset_h": utc_offset_h})


def _reading(sample: SmiSample, value: float | None, utc_offset_h: float | None) -> PowerReading:
    assert value is not None
    return PowerReading(
        device=sample.gpu, t_local=sample.time, line=sample.line, value=value,
        t_utc_s=smi_time_utc_s(sample.time, utc_offset_h) if utc_offset_h is not None else None,
        sm_clock_mhz=sample.sm_clock_mhz, idle=idle_of(sample), reasons=sample.reasons,
    )


def _period(rows: list[SmiSample], get: Callable[[SmiSample], float | None]) -> float | None:
    """The longest per-GPU update period the log shows for one field."""
    by_gpu: dict[str, list[SmiSample]] = defaultdict(list)
    for sample in rows:
        by_gpu[sample.gpu].append(sample)
    periods = []
    for group in by_gpu.values():
        values = [get(s) for s in group]
        period = observed_update_period([s.t_s for s in group], [v for v in values if v is not None])
        if period is not None:
            periods.append(period)
    return max(periods) if periods else None
