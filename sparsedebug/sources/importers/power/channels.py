"""What each power or energy reading measures, and the period the log shows it changing at."""

from __future__ import annotations

from collections.abc import Sequence

from sparsedebug.records.power import PowerChannel, PowerReading, PowerScope
from sparsedebug.sources.importers.alignment import typical_interval

# What the NVIDIA channels measure (render.words.sources_power.SCOPE_WORDS words each).
BOARD_POWER: PowerScope = "gpu_board_power"
BOARD_ENERGY: PowerScope = "gpu_board_energy"

# A window must span at least this many update periods of the reading to be measured: with fewer, the one or two
# readings that touch it are mostly about time outside it (a power sample stands for its whole interval, a counter's
# difference for the interval between its updates).
MIN_UPDATE_PERIODS = 3


# 2000-01-01 in UTC seconds: seconds since 1970 below it are no capture time of a GPU log, but a clock counted from
# boot (``time.monotonic()``, 30 years of uptime at most).
MIN_WALL_CLOCK_S = 946_684_800.0

# The last second of year 9999 in UTC seconds: a later timestamp is no time at all (and no datetime holds it).
MAX_EPOCH_S = 253_402_300_799.0

# Changes of value a log must show before the time between them is taken as the reading's update period.
MIN_CHANGES = 10


def observed_update_period(times: Sequence[float], values: Sequence[float]) -> float | None:
    """How often the reading changes, as the log shows it: the sampling interval, or the median time between
    changes of value when the log polls faster than the reading updates (it changes at least
    :data:`MIN_CHANGES` times, so a steady reading is not taken for a slow one); never less than the sampling
    interval (a log sampled every 250 ms cannot show a faster update); None for fewer than two readings."""
    if len(times) < 2:
        return None
    sampling = typical_interval(times)
    changes = [t for k, (t, v) in enumerate(zip(times, values, strict=True)) if k == 0 or v != values[k - 1]]
    between = typical_interval(changes) if len(changes) > MIN_CHANGES else 0.0
    period = max(sampling, between)
    return period if period > 0 else None


def with_update_period(channel: PowerChannel, readings: Sequence[PowerReading], relative_s: Sequence[float]) -> PowerChannel:
    """``channel`` with ``update_period_s`` from its readings (one device's, in time order), ``relative_s`` their
    times in seconds on the log's own clock (usable before the log is placed in UTC)."""
    period = observed_update_period(relative_s, [r.value for r in readings])
    return channel.model_copy(update={"update_period_s": period})


def measuring_period(channel: PowerChannel) -> float:
    """The period the too-short rule uses for ``channel``: the longer of its update period and its averaging span."""
    return max(channel.update_period_s or 0.0, channel.averaging_s or 0.0)
