"""The energy of one run's own time window from a power log.

The log is placed against the run by absolute time (UTC), like classify's clock evidence
(:mod:`sparsedebug.sources.importers.alignment`). One channel is used, the best the log has:

1. an energy counter: the difference of the counter, interpolated linearly at the window's edges between the
   readings that bracket them; a counter that goes down between two readings wrapped (32-bit, when adding the
   modulus gives a power a board can draw) or restarted (driver reload: the interval counts from the restart,
   a lower bound), and the note says so;
2. sampled power (an instantaneous reading before an average): integrated with the sampling interval, each
   reading standing for the time until the next one (the last for a typical interval); a reading averaged over
   a span (``power.draw``: 1 s) is placed at the middle of the span it averages;
3. energy totals a source measured over its own windows: each total spread evenly over its window.

A window is ``too_short`` when it spans fewer than :data:`MIN_UPDATE_PERIODS` update periods of the reading
(the period is the longest of the log's sampling interval, the time between changes of the reading and its
averaging span), or, for totals, when less than :data:`TOTAL_INSIDE_FRACTION` of the totals' windows lies inside
it; ``unaligned`` when the run has no absolute window or the log's clock has no known UTC offset;
``not_covered`` when the log does not cover the whole window; ``no_reading`` when the log has no power or
energy channel. Idle power (readings the log marks idle) is kept apart and never counted in the window.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sparsedebug.core.errors import UserError
from sparsedebug.core.stats import median
from sparsedebug.records.notes import Note, note
from sparsedebug.records.power import (
    EnergyMethod,
    EnergyStatus,
    PowerChannel,
    PowerLog,
    PowerQuantity,
    PowerReading,
    WindowEnergy,
)
from sparsedebug.records.run import TimeWindow
from sparsedebug.sources.importers.alignment import overlap_s, overlapping, sample_spans
from sparsedebug.sources.importers.power.channels import BOARD_ENERGY, BOARD_POWER, MIN_UPDATE_PERIODS, measuring_period

# Which channel a window's energy is taken from when a log has several: lower first.
PREFERENCE: dict[PowerQuantity, int] = {"energy_counter": 0, "power_instant": 1, "power_average": 2, "energy_total": 3}

# Totals are spread evenly over their own windows; at least this share of the windows that touch the run's must lie
# inside it, or too much of the figure is power from outside it. 0.75 is the same bar as :data:`MIN_UPDATE_PERIODS`
# for sampled readings: a run spanning 3 source windows touches at most 4 of them.
TOTAL_INSIDE_FRACTION = 0.75

# Above any accelerator board (an H200 is limited to 700 W): a counter wrap implying more is a restart instead.
MAX_BOARD_POWER_W = 10_000.0

# The 32-bit wraps a counter can show after conversion to joules: of a counter in mJ (NVML's unit) and in J.
COUNTER_WRAPS_J = (2.0**32 * 1e-3, 2.0**32)

_METHODS: dict[PowerQuantity, EnergyMethod] = {
    "energy_counter": "counter_difference", "power_instant": "integrated_power", "power_average": "integrated_power",
    "energy_total": "window_total",
}


@dataclass
class _Taken:
    status: EnergyStatus
    why: Note | None = None
    joules: float | None = None
    readings: int = 0
    clocks: list[float] = field(default_factory=list)
    events: list[Note] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)


def energy_in_window(log: PowerLog, window: TimeWindow | None, device: str | None = None) -> WindowEnergy:
    """The energy ``log`` shows inside ``window`` (absolute UTC), or the reason it cannot be measured.

    ``device`` takes one GPU (as the file names it); without it every device the channel has is measured
    and the energies summed (``devices`` names them).
    """
    usable = [c for c in log.channels if any(device is None or r.device == device for r in log.readings.get(c.field, []))]
    if not usable:
        return WindowEnergy(file=log.file, channel=None, status="no_reading", power_limit_w=log.power_limit_w,
                            why=note("sources.window.no_channel", device=device, source=log.source))
    channel = min(usable, key=lambda c: PREFERENCE[c.quantity])
    rows = [r for r in log.readings[channel.field] if device is None or r.device == device]
    devices = list(dict.fromkeys(r.device for r in rows))
    common = {"file": log.file, "channel": channel, "devices": devices, "power_limit_w": log.power_limit_w,
              "idle_power_w": idle_power(log, devices), "update_period_s": measuring_period(channel) or None}
    if window is None:
        return WindowEnergy(**common, status="unaligned", why=note("sources.window.no_run_window"))
    if any(r.t_utc_s is None for r in rows):
        code = ("sources.window.no_timestamps" if all(not r.t_local for r in rows)
                else "sources.window.monotonic_clock" if log.time_base == "monotonic" else "sources.window.no_utc_offset")
        return WindowEnergy(**common, status="unaligned", why=note(code, source=log.source))
    start, end = window.start_utc_s, window.end_utc_s
    if end <= start:
        return WindowEnergy(**common, start_utc_s=start, end_utc_s=end, status="too_short",
                            why=note("sources.window.no_duration", start_utc_s=start, end_utc_s=end))
    taken = [_device_energy(channel, [r for r in rows if r.device == d], start, end) for d in devices]
    failed = next((t for t in taken if t.status != "measured"), None)
    bounds = {"start_utc_s": start, "end_utc_s": end}
    if failed is not None:
        failed_device = devices[taken.index(failed)] if len(devices) > 1 else None
        return WindowEnergy(**common, **bounds, status=failed.status, why=failed.why, failed_device=failed_device)
    joules = sum(t.joules or 0.0 for t in taken)
    duration = end - start
    clocks = [c for t in taken for c in t.clocks]
    events = [e for t in taken for e in t.events]
    reasons = sorted(set().union(*(t.reasons for t in taken)))
    return WindowEnergy(**common, **bounds, status="measured", method=_METHODS[channel.quantity], joules=joules,
                        mean_power_w=joules / duration, readings=sum(t.readings for t in taken),
                        sm_clock_mhz=median(clocks) if clocks else None, clock_reasons=reasons, events=events)


def idle_power(log: PowerLog, devices: list[str]) -> float | None:
    """Idle board power of ``devices`` (summed over them): the median power of the readings the log marks idle,
    from its best power channel, else from a counter's differences over intervals that start idle."""
    powers = sorted((c for c in log.channels if c.quantity in ("power_instant", "power_average")), key=lambda c: PREFERENCE[c.quantity])
    counters = [c for c in log.channels if c.quantity == "energy_counter"]
    total: float | None = None
    for device in devices:
        values: list[float] = []
        for channel in powers:
            values = [r.value for r in log.readings.get(channel.field, []) if r.device == device and r.idle]
            if values:
                break
        if not values and counters:
            rows = sorted((r for r in log.readings.get(counters[0].field, []) if r.device == device and r.t_utc_s is not None),
                          key=lambda r: r.t_utc_s or 0.0)
            values = [(b.value - a.value) / ((b.t_utc_s or 0.0) - (a.t_utc_s or 0.0)) for a, b in zip(rows, rows[1:], strict=False)
                      if a.idle and (b.t_utc_s or 0.0) > (a.t_utc_s or 0.0) and b.value >= a.value]
        if values:
            total = (total or 0.0) + median(values)
    return total


def _coverage(first: float, last: float, start: float, end: float) -> _Taken | None:
    if end < first or start > last:
        return _Taken("not_covered", note("sources.window.outside_log", log_start_utc_s=first, log_end_utc_s=last,
                                          start_utc_s=start, end_utc_s=end))
    if start < first or end > last:
        inside = min(end, last) - max(start, first)
        return _Taken("not_covered", note("sources.window.partly_covered", covered_s=inside, window_s=end - start,
                                          log_start_utc_s=first, log_end_utc_s=last, start_utc_s=start, end_utc_s=end))
    return None


def _too_short(channel: PowerChannel, start: float, end: float) -> _Taken | None:
    period = measuring_period(channel)
    if end - start >= MIN_UPDATE_PERIODS * period * (1 - 1e-6) and end > start:  # the tolerance: float UTC seconds
        return None
    sampled = channel.source in ("nvidia-smi", "dcgm") and channel.quantity != "energy_total"
    return _Taken("too_short", note("sources.window.few_periods", window_s=end - start, min_periods=MIN_UPDATE_PERIODS,
                                    field=channel.field, period_s=period, update_period_s=channel.update_period_s,
                                    averaging_s=channel.averaging_s, part_time_sampled=sampled))


def _device_energy(channel: PowerChannel, rows: list[PowerReading], start: float, end: float) -> _Taken:
    rows = sorted(rows, key=lambda r: r.t_utc_s or 0.0)
    if channel.quantity == "energy_counter":
        return _counter(channel, rows, start, end)
    if channel.quantity == "energy_total":
        return _totals(channel, rows, start, end)
    shift = (channel.averaging_s or 0.0) / 2
    spans = sample_spans([(r.t_utc_s or 0.0) - shift for r in rows])
    problem = _coverage(spans[0][0], spans[-1][1], start, end) or _too_short(channel, start, end)
    if problem is not None:
        return problem
    inside = overlapping(spans, start, end)
    joules = sum(rows[k].value * overlap_s(spans[k], start, end) for k in inside)
    return _Taken("measured", None, joules, len(inside), _clocks(rows[k] for k in inside), reasons=_reasons(rows[k] for k in inside))


def _counter(channel: PowerChannel, rows: list[PowerReading], start: float, end: float) -> _Taken:
    times = [r.t_utc_s or 0.0 for r in rows]
    problem = _coverage(times[0], times[-1], start, end) or _too_short(channel, start, end)
    if problem is not None:
        return problem
    cumulative, events = unwrapped_counter(rows)
    joules = _at(times, cumulative, end) - _at(times, cumulative, start)
    first = max(bisect.bisect_right(times, start) - 1, 0)
    last = min(bisect.bisect_left(times, end), len(times) - 1)
    used = rows[first:last + 1]
    return _Taken("measured", None, joules, len(used), _clocks(used), events, _reasons(used))


# How far above its enforced limit a board's power may read: short excursions over the limit are within the power
# management's averaging, twice the limit is none (and :data:`MAX_BOARD_POWER_W` bounds a board without a limit).
OVER_LIMIT_FACTOR = 2.0


def power_ceiling_w(log: PowerLog) -> float:
    """The most power a reading of ``log`` can show: twice the board's enforced limit when the log records it,
    else :data:`MAX_BOARD_POWER_W`."""
    if log.power_limit_w is None or log.power_limit_w <= 0:
        return MAX_BOARD_POWER_W
    return min(MAX_BOARD_POWER_W, OVER_LIMIT_FACTOR * log.power_limit_w)


def check_plausible(log: PowerLog, seconds: Callable[[PowerReading], float | None]) -> None:
    """Refuse a board log whose readings no board can show: a power reading above :func:`power_ceiling_w`, an energy
    counter that runs backwards with no 32-bit wrap or driver restart that the board's power explains, or one whose
    step implies more power than the ceiling. ``seconds`` gives a reading's time on the log's clock (None: unknown,
    not checked). One line naming the file, the lines, the field and the values."""
    ceiling = power_ceiling_w(log)
    limit = f"{log.power_limit_w:g} W" if log.power_limit_w else None
    for channel in log.channels:
        if channel.scope not in (BOARD_POWER, BOARD_ENERGY):
            continue
        rows = log.readings.get(channel.field, [])
        if channel.quantity in ("power_instant", "power_average"):
            over = next((r for r in rows if r.value > ceiling), None)
            if over is not None:
                raise UserError(f"{log.file}: line {over.line}, {channel.field}: {over.value:g} W is beyond "
                                f"{f'the board limit of {limit}' if limit else 'any board'} "
                                f"(at most {ceiling:g} W is read as a board's power)")
            continue
        if channel.quantity != "energy_counter":
            continue
        for device in dict.fromkeys(r.device for r in rows):
            timed = [(t, r) for r in rows if r.device == device and (t := seconds(r)) is not None]
            timed.sort(key=lambda item: (item[0], item[1].line))
            for (ta, a), (tb, b) in zip(timed, timed[1:], strict=False):
                span = tb - ta
                if span <= 0:
                    continue
                step = b.value - a.value
                restarted = step < 0 and b.value <= ceiling * span
                wrapped = step < 0 and any(0 <= b.value + m - a.value <= ceiling * span for m in COUNTER_WRAPS_J)
                if step < 0 and not (wrapped or restarted):
                    raise UserError(
                        f"{log.file}: line {b.line}, {channel.field}: the energy counter runs backwards, {a.value:g} J "
                        f"(line {a.line}) then {b.value:g} J {span:g} s later; no counter wrap or driver restart explains it"
                    )
                if step > ceiling * span:
                    raise UserError(
                        f"{log.file}: line {b.line}, {channel.field}: the counter rose {step:g} J in {span:g} s since line "
                        f"{a.line}, {step / span:g} W, beyond {f'the board limit of {limit}' if limit else 'any board'} (at most {ceiling:g} W is read as a board's power)"
                    )


def unwrapped_counter(rows: list[PowerReading]) -> tuple[list[float], list[Note]]:
    """A counter's readings (time order) as energy since its first reading, with wraps and restarts undone, and
    one note per wrap or restart (the two lines it happened between)."""
    cumulative = [0.0]
    events: list[Note] = []
    for a, b in zip(rows, rows[1:], strict=False):
        step = b.value - a.value
        if step < 0:
            seconds = max((b.t_utc_s or 0.0) - (a.t_utc_s or 0.0), 1e-9)
            wrap = next((m for m in COUNTER_WRAPS_J if 0 <= b.value + m - a.value <= MAX_BOARD_POWER_W * seconds), None)
            if wrap is not None:
                step = b.value + wrap - a.value
                events.append(note("sources.counter.wrapped", line_before=a.line, line_after=b.line))
            else:
                step = b.value
                events.append(note("sources.counter.restarted", line_before=a.line, line_after=b.line))
        cumulative.append(cumulative[-1] + step)
    return cumulative, events


def _at(times: list[float], values: list[float], t: float) -> float:
    k = bisect.bisect_right(times, t) - 1
    if k >= len(times) - 1:
        return values[-1]
    k = max(k, 0)
    span = times[k + 1] - times[k]
    return values[k] if span <= 0 else values[k] + (values[k + 1] - values[k]) * (t - times[k]) / span


def _totals(channel: PowerChannel, rows: list[PowerReading], start: float, end: float) -> _Taken:
    rows = [r for r in rows if (r.window_s or 0.0) > 0]
    if not rows:
        return _Taken("no_reading", note("sources.window.totals_without_duration", field=channel.field))
    spans = [(r.t_utc_s or 0.0, (r.t_utc_s or 0.0) + (r.window_s or 0.0)) for r in rows]
    covered = sum(overlap_s(s, start, end) for s in spans)
    problem = _coverage(min(s[0] for s in spans), max(s[1] for s in spans), start, end)
    if problem is None and channel.source == "codecarbon":
        problem = _too_short(channel, start, end)  # CodeCarbon's rows are a tracker's flushes, not windows set around the run
    if problem is None and covered < (end - start) * 0.999:
        problem = _Taken("not_covered", note("sources.window.totals_partly_cover", covered_s=covered, window_s=end - start))
    if problem is not None:
        return problem
    inside = [k for k, s in enumerate(spans) if overlap_s(s, start, end) > 0]
    events: list[Note] = []
    ordered = sorted(inside, key=lambda k: spans[k])
    if any(spans[b][0] < spans[a][1] for a, b in zip(ordered, ordered[1:], strict=False)):
        # nested or concurrent windows (Zeus allows them): the one that matches the run's window best
        best = max(inside, key=lambda k: overlap_s(spans[k], start, end) / (max(spans[k][1], end) - min(spans[k][0], start)))
        inside = [best]
        covered = overlap_s(spans[best], start, end)
        events.append(note("sources.totals.overlap_took_closest", label=rows[best].label, line=rows[best].line))
        if covered < (end - start) * 0.999:
            return _Taken("not_covered", note("sources.window.closest_total_partly_covers", covered_s=covered, window_s=end - start))
    share = covered / sum(spans[k][1] - spans[k][0] for k in inside)
    if share < TOTAL_INSIDE_FRACTION:
        return _Taken("too_short", note("sources.window.totals_share_short", window_s=end - start, share=share,
                                        field=channel.field, needed=TOTAL_INSIDE_FRACTION))
    joules = sum(rows[k].value * overlap_s(spans[k], start, end) / (spans[k][1] - spans[k][0]) for k in inside)
    return _Taken("measured", None, joules, len(inside), _clocks(rows[k] for k in inside), events)


def _reasons(rows: Iterable[PowerReading]) -> set[str]:
    return {reason for r in rows for reason in r.reasons if reason != "gpu_idle"}


def _clocks(rows: Iterable[PowerReading]) -> list[float]:
    return [r.sm_clock_mhz for r in rows if r.sm_clock_mhz is not None]
