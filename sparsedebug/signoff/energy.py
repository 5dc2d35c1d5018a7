"""Energy per side from each run's own window: joules per forward and per token, tokens per joule.

:func:`side_energy` takes one run and a way to measure a window (``energy_in_window`` of a power log,
``sources.importers.power``) and tries, in order: one window per iteration (the run record's
``source.iteration_windows``), windows of 2, 4, ... consecutive iterations, and the span of all its
iterations (or the run's window). The first grouping whose every window is measured gives the figures:
p50 over the windows, with the median's distribution-free interval (order statistics,
``core.tails.quantile_bounds`` at the median, ``alpha / 2`` on each side). A window the log cannot
measure (too short for its update period, not covered, not aligned) leaves the side without figures
and keeps the reason.

Estimates are apart: :func:`target_estimate` multiplies a replay's forward projected on the target GPU
by the board power measured there under load (``sources.target.power``) and is stored as
``SideEnergy.estimate``, never as a measured figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sparsedebug.core.stats import median
from sparsedebug.core.tails import quantile_bounds
from sparsedebug.records.bundle import InputRole
from sparsedebug.records.energy import (
    EnergyEstimate,
    EnergyOver,
    EnergyReport,
    EnergySummary,
    EnergyUnit,
    MachineEnergy,
    RaplReading,
    SideEnergy,
)
from sparsedebug.records.power import PowerLog, WindowEnergy
from sparsedebug.records.run import RunRecord, TimeWindow
from sparsedebug.records.stats import DEFAULT_ALPHA
from sparsedebug.sources.registry import capabilities, replayed

# The energy of one absolute time window from one power log.
Measure = Callable[[TimeWindow | None], WindowEnergy]

def summarise(values: Sequence[float], unit: EnergyUnit, alpha: float = DEFAULT_ALPHA) -> EnergySummary:
    """p50 of ``values`` and the median's distribution-free interval: at ``1 - alpha`` from the order statistics
    (``quantile_bounds`` at the median, ``alpha / 2`` a side) where the values are enough, else their range, whose
    confidence for the median is ``1 - 2 * 0.5**n`` (75% for 3 iterations); none for one value."""
    p50 = median(values)
    n = len(values)
    if n < 2:
        return EnergySummary(unit=unit, p50=p50, low=None, high=None, confidence=0.0, n=n)
    bounds = quantile_bounds(values, 0.5, alpha / 2)
    if bounds.high is not None:
        return EnergySummary(unit=unit, p50=p50, low=bounds.low, high=bounds.high, confidence=1 - alpha, n=n)
    return EnergySummary(unit=unit, p50=p50, low=min(values), high=max(values), confidence=1 - 2 * 0.5**n, n=n)


def _span(windows: Sequence[TimeWindow], source: str) -> TimeWindow:
    return TimeWindow(start_utc_s=windows[0].start_utc_s, end_utc_s=windows[-1].end_utc_s, source=source)


def _groups(windows: list[TimeWindow]) -> list[tuple[int, list[tuple[TimeWindow, int]]]]:
    """Groupings to try, finest first: (iterations per group, [(window, iterations in it)])."""
    out = []
    size = 1
    while size < len(windows):
        count = len(windows) // size
        chunks = [windows[k * size:(k + 1) * size] for k in range(count - 1)] + [windows[(count - 1) * size:]]
        if len(chunks) >= 2:
            out.append((size, [(_span(c, f"iterations {windows.index(c[0])}..{windows.index(c[-1])}"), len(c)) for c in chunks]))
        size *= 2
    return out


@dataclass(frozen=True)
class _Taken:
    over: EnergyOver
    windows: list[WindowEnergy]
    forwards: list[int]


def _measure_run(run: RunRecord, measure: Measure) -> tuple[_Taken | None, list[WindowEnergy]]:
    """The finest grouping of the run's iterations whose every window is measured; else the whole run's attempt."""
    its = list(run.source.iteration_windows)
    whole: TimeWindow | None
    for size, groups in _groups(its):
        energies = [measure(window) for window, _ in groups]
        if all(e.status == "measured" for e in energies):
            return _Taken("iterations" if size == 1 else "windows", energies, [n for _, n in groups]), energies
    if its:
        whole, forwards = _span(its, "all iterations with a latency sample"), len(its)
    else:
        whole, forwards = run.source.window, len(run.outcome.latency_samples_ms)
    energy = measure(whole)
    if energy.status == "measured" and forwards > 0:
        return _Taken("run_window", [energy], [forwards]), [energy]
    return None, [energy]


def side_energy(role: InputRole, run: RunRecord, measure: Measure | None, *, alpha: float = DEFAULT_ALPHA,
                rapl: RaplReading | None = None, estimate: EnergyEstimate | None = None) -> SideEnergy:
    """One side's energy figures from its own window(s), or why there are none."""
    base = SideEnergy(role=role, run=run.name, status="no_log", rapl=rapl, estimate=estimate, tokens_per_forward=run.graph.tokens)
    if run.source.window is None and not run.source.iteration_windows:
        return base.model_copy(update={"status": "no_window", "replayed": replayed(run)})
    if measure is None:
        return base
    taken, tried = _measure_run(run, measure)
    first = tried[0]
    clock = [e.sm_clock_mhz for e in tried if e.sm_clock_mhz is not None]
    state = {
        "windows": tried, "scope": first.channel.scope if first.channel else None, "channel": first.channel.field if first.channel else None,
        "idle_power_w": first.idle_power_w, "power_limit_w": first.power_limit_w, "sm_clock_mhz": median(clock) if clock else None,
        "clock_reasons": sorted({r for e in tried for r in e.clock_reasons}),
    }
    if taken is None:
        return base.model_copy(update={**state, "status": first.status})
    per_forward = [e.joules / n for e, n in zip(taken.windows, taken.forwards, strict=True) if e.joules is not None]
    tokens = run.graph.tokens
    figures: dict[str, object] = {"joules_per_forward": summarise(per_forward, "J/forward", alpha)}
    if tokens:
        figures["joules_per_token"] = summarise([j / tokens for j in per_forward], "J/token", alpha)
        figures["tokens_per_joule"] = summarise([tokens / j for j in per_forward if j > 0], "tokens/J", alpha)
    powers = [e.mean_power_w for e in taken.windows if e.mean_power_w is not None]
    return base.model_copy(update={
        **state, **figures, "status": "measured", "over": taken.over, "forwards_per_window": taken.forwards[0],
        "mean_power_w": median(powers) if powers else None,
    })


def target_estimate(run: RunRecord) -> EnergyEstimate | None:
    """A replay on a GPU profile: its forward projected on the target times the target's board power under load."""
    from sparsedebug.sources.target.power import board_power_under_load
    from sparsedebug.sources.workload.lowering import PROFILES

    target = run.target
    if target is None or target.forward.candidate is None or target.backend not in PROFILES:
        return None
    source = PROFILES[target.backend].target
    power = board_power_under_load(source) if source is not None else None
    if power is None:
        return None
    seconds = target.forward.candidate.total_ms / 1e3
    joules = seconds * power.median_w
    tokens = target.tokens or None
    return EnergyEstimate(
        device=target.device, forward_ms=target.forward.candidate.total_ms, board_power_w=power.median_w,
        board_power_low_w=power.low_w, board_power_high_w=power.high_w, joules_per_forward=joules,
        joules_per_forward_low=seconds * power.low_w, joules_per_forward_high=seconds * power.high_w,
        joules_per_token=joules / tokens if tokens else None, tokens_per_joule=tokens / joules if tokens and joules > 0 else None,
        power_limit_w=power.limit_w, launch=target.launch, forward_basis=target.forward.basis, power_basis=power.basis,
    )


def capture_lines() -> list[str]:
    """The command lines that record a power log usable for a run's window (``CAPTURE_COMMANDS``), best first."""
    from sparsedebug.sources.importers.power import CAPTURE_COMMANDS

    return [c.command for c in CAPTURE_COMMANDS]


def energy_report(
    runs: Sequence[tuple[InputRole, RunRecord]], log: PowerLog | None, *, log_option: str | None = None,
    measure: Measure | None = None, rapl: dict[str, RaplReading] | None = None, rapl_readable: bool = False,
) -> EnergyReport:
    """Every side's energy, the machine's own reading (RAPL or none) and, where a side is unmeasured, what to capture.

    ``measure`` defaults to ``energy_in_window`` over ``log``."""
    if measure is None and log is not None:
        from sparsedebug.sources.importers.power import energy_in_window

        def measure(window: TimeWindow | None, log: PowerLog = log) -> WindowEnergy:
            return energy_in_window(log, window)

    rapl = rapl or {}
    sides = [side_energy(role, run, measure, rapl=rapl.get(role), estimate=target_estimate(run)) for role, run in runs]
    replays = [run for _, run in runs if replayed(run)]
    machine: MachineEnergy
    if not replays:
        machine = "imported"
    elif rapl:
        machine = "rapl_read"
    elif rapl_readable:
        machine = "rapl_unused"
    else:
        machine = "no_reading"
    on_gpu = any(capabilities(run).accelerator or run.target is not None for _, run in runs)
    missing = any(side.status != "measured" for side in sides)
    return EnergyReport(
        log=log.file if log is not None else None, log_option=log_option, log_source=log.source if log is not None else None,
        sides=sides, machine=machine, capture=capture_lines() if missing and on_gpu else [],
    )
