"""What the timing harness counts as noise: its thresholds, the machine's CPU readings, sustained contention.

:class:`NoisePolicy` holds the thresholds of the round flags and of the stability verdict
(:mod:`sparsedebug.core.timing` applies them); :func:`machine_cpu` reads the whole
machine's busy CPU time from ``/proc/stat``, and :func:`windowed_contention` turns
readings taken at round boundaries into the cores other processes kept busy and the
share of the time they held the spare ones (a competitor holding a core throughout).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = [
    "DEFAULT_TICK_MS", "Contention", "NoisePolicy", "Reading", "contention", "load1", "machine_cpu",
    "scheduler_tick_ms", "windowed_contention",
]

# Scheduler tick when the kernel's CONFIG_HZ cannot be read (250 Hz, the common distribution default).
DEFAULT_TICK_MS = 4.0


@dataclass(frozen=True)
class NoisePolicy:
    """Thresholds of the interference flags and of the stability verdict."""

    # ``off_cpu`` when wall - CPU time exceeds this share of the wall time ...
    off_cpu_share: float = 0.25
    # ... and at least this many ms (shorter losses are timer and wake-up noise).
    min_lost_ms: float = 0.5
    # A call of a several-call sample lost to the scheduler when wall - CPU time exceeds this share of its wall time
    # and ``min_lost_ms``: the sample is then the median of the calls that kept the CPU (``core.timing._run_round``).
    call_off_cpu_share: float = 0.05
    # ``outlier`` (and ``preempted``, with context switches) when a round exceeds the variant median by this factor.
    slow_factor: float = 1.5
    # ``tick_quantised`` when the time lost is within this fraction of a tick of a whole number (>= 1) of ticks.
    tick_tolerance: float = 0.25
    # Unstable when a variant's (p90 - p10) / p50 exceeds this after re-measurement ...
    max_spread: float = 1.0
    # ... and p90 - p10 exceeds this many ms.
    min_spread_ms: float = 1.0
    # When more than this share of a variant's final rounds are still flagged ...
    max_flagged_share: float = 0.2
    # ... it is unstable if its per-round ratio to the first variant spreads by more than this ((p90 - p10) / p50).
    max_ratio_spread: float = 0.5
    # Extra rounds allowed for re-measurement; None: as many as the timed rounds.
    remeasure: int | None = None
    # Unstable when other processes kept more than this many cores busy on average over the measurement and left it no
    # idle core (their cores plus this process's exceed the machine's minus half a core).
    max_competing_cores: float = 0.5
    # Shortest measurement whose contention is judged (the machine's CPU clock counts in 10 ms ticks); the measurement
    # is also cut into consecutive windows of at least this length, each judged alike ...
    min_contention_window_s: float = 0.25
    # ... and contention is sustained only when windows covering at least this share of the measured time were
    # contended (a shorter burst disturbs some rounds, which the round flags catch and re-measure).
    min_contended_share: float = 0.8



def load1() -> float | None:
    """The 1-minute load average, or None where unreadable."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return None


def machine_cpu(stat: Path = Path("/proc/stat")) -> tuple[float, int] | None:
    """Busy CPU seconds of the whole machine (user, nice, system, irq, softirq, steal) and its core count."""
    try:
        lines = stat.read_text().splitlines()
        fields = [float(v) for v in lines[0].split()[1:]]
        cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
        hertz = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
    if len(fields) < 8 or cores < 1:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / hertz, cores


# ``(wall s, process CPU s, machine busy CPU s and cores)`` at one instant.
Reading = tuple[float, float, tuple[float, int] | None]


@dataclass(frozen=True)
class Contention:
    """Cores other processes kept busy while measuring, and this process's (all its threads), on average over
    the wall time; and the share of that time in windows where the others held the spare cores."""

    others: float
    ours: float
    cores: int
    contended_share: float = 1.0

    def holds_spare_cores(self, policy: NoisePolicy) -> bool:
        """Whether the others' average exceeds ``NoisePolicy.max_competing_cores`` and left no idle core."""
        return self.others > max(policy.max_competing_cores, self.cores - self.ours - 0.5)

    def sustained(self, policy: NoisePolicy) -> bool:
        """Whether the others held the spare cores throughout (see ``NoisePolicy.max_competing_cores``
        and ``NoisePolicy.min_contended_share``)."""
        return self.holds_spare_cores(policy) and self.contended_share >= policy.min_contended_share


def contention(start: Reading, stop: Reading, policy: NoisePolicy) -> Contention | None:
    """Contention between two readings; None when unreadable or too short."""
    wall = stop[0] - start[0]
    if start[2] is None or stop[2] is None or wall < policy.min_contention_window_s:
        return None
    ours = (stop[1] - start[1]) / wall
    others = max(0.0, (stop[2][0] - start[2][0]) / wall - ours)
    return Contention(others=others, ours=ours, cores=stop[2][1])


def windowed_contention(readings: list[Reading], policy: NoisePolicy) -> Contention | None:
    """Contention over the first to the last reading, with the share of the time in contended windows.

    Consecutive readings (one per round boundary) are merged into windows of at least
    ``NoisePolicy.min_contention_window_s`` (a short tail joins the last window); each window is
    judged as a measurement of its own. None when the whole is unreadable or too short.
    """
    whole = contention(readings[0], readings[-1], policy) if readings else None
    if whole is None:
        return None
    bounds: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(readings)):
        if readings[index][0] - readings[start][0] >= policy.min_contention_window_s:
            bounds.append((start, index))
            start = index
    if start < len(readings) - 1:
        bounds[-1] = (bounds[-1][0], len(readings) - 1)
    contended = 0.0
    for first, last in bounds:
        window = contention(readings[first], readings[last], policy)
        if window is not None and window.holds_spare_cores(policy):
            contended += readings[last][0] - readings[first][0]
    share = contended / (readings[-1][0] - readings[0][0])
    return Contention(others=whole.others, ours=whole.ours, cores=whole.cores, contended_share=share)


@lru_cache(maxsize=1)
def scheduler_tick_ms() -> float:
    """The kernel's scheduler tick (1000 / CONFIG_HZ) from its build config, else :data:`DEFAULT_TICK_MS`."""
    config = Path(f"/boot/config-{platform.release()}")
    try:
        for line in config.read_text().splitlines():
            if line.startswith("CONFIG_HZ="):
                return 1000.0 / float(line.split("=", 1)[1])
    except (OSError, ValueError):
        pass
    return DEFAULT_TICK_MS
