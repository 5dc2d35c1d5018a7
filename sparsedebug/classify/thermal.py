"""Thermal: clocks fell during the run (power cap, thermal slowdown), or time drifted upward across iterations.

Each rule sits on the metric it reads; the fix recipe locks GPU clocks (imported runs
or an nvidia-smi log) or pins the CPU governor (replays).
"""

from __future__ import annotations

import numpy as np

from sparsedebug.classify.context import Context, Fact, Facts, Missing, Result
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.correlation import spearman
from sparsedebug.core.stats import median
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.notes import Note, embed, note
from sparsedebug.records.stats import DEFAULT_ALPHA

THERMAL = RuleSet(Mechanism.THERMAL)

# Fewest in-order latency samples on which a drift across iterations is tested.
DRIFT_MIN_SAMPLES = 9

# GPU busy time growing less than this (last third over first third) while latency drifts: the host drifted, not the
# clocks.
FLAT_BUSY = 1.02


# --------------------------------------------------------------------------- fixes


def thermal_fix(rule: Rule, facts: Facts) -> Fix:
    """Lock GPU clocks (or check the power cap) for GPU runs; pin the CPU governor for replays."""
    if facts.ctx.imported or facts.ctx.smi is not None:
        return Fix(kind="advice", rule=rule.id, metric="smi_min_clock_ratio", direction="up", code="lock_clocks")
    return Fix(kind="advice", rule=rule.id, metric="latency_drift_ratio", direction="down", code="pin_cpu_governor")


# --------------------------------------------------------------------------- rules and their metrics


def thermal_missing(ctx: Context) -> Missing:
    """What would show the clocks: an nvidia-smi log for GPU runs, CPU frequency samples for replays."""
    if ctx.imported:
        return Missing(note("mechanisms.no_smi_log"), note("mechanisms.capture_smi"))
    return Missing(note("mechanisms.no_cpu_clock"), note("mechanisms.capture_cpu_freq"))


# A windowed clock figure scores only when the candidate's window is this much worse than the baseline's.
WORSE_THAN_BASELINE = 1.10


def _unusable(ctx: Context) -> Result | None:
    """Why the attached clock log cannot score this run: not aligned (context only) or no sample in its window."""
    smi = ctx.smi
    assert smi is not None
    if not smi.aligned:
        return Fact(None, smi.source, note("mechanisms.smi_unaligned", **embed("window", smi.window)))
    if smi.samples == 0:
        return Fact(None, smi.source, note("mechanisms.smi_no_sample", **embed("window", smi.window)))
    return None


def _against_baseline(ctx: Context, value: float, base_value: float | None, worse: bool, detail: Note, source: str) -> Result:
    """The candidate's windowed figure, gated unless it differs from the baseline's window for the worse."""
    base = ctx.base_smi
    if ctx.baseline is None or base is None:
        return Fact(value, source, detail)
    if base.samples == 0 or base_value is None:
        detail = note(detail.code, **detail.values, base_window_recorded=base.window is not None, **embed("base_window", base.window))
        return Fact(value, source, detail, gate=note("mechanisms.gate_no_baseline_window"))
    detail = note(detail.code, **detail.values, base_value=base_value)
    return Fact(value, source, detail, gate=None if worse else note("mechanisms.gate_baseline_window_same"))


@THERMAL.rule(
    "thermal.throttle_time", ">", 0.05, "share", 2.0,
    source=["smi clocks_event_reasons.active"],
    description="Share of busy nvidia-smi samples with a power or thermal clock-event reason active.",
    suggest=thermal_fix, artifact="smi",
)
def smi_throttle_share(ctx: Context) -> Result:
    """Busy nvidia-smi samples under a power or thermal clock-event reason over all busy samples."""
    smi = ctx.smi
    if smi is None:
        return thermal_missing(ctx)
    if not ctx.imported:
        return Fact(None, smi.source, note("mechanisms.smi_not_for_replay"))
    if not smi.has_reasons:
        return Missing(note("mechanisms.smi_no_reasons", file=smi.source), note("mechanisms.capture_smi"))
    unusable = _unusable(ctx)
    if unusable is not None:
        return unusable
    if smi.busy_samples == 0:
        return Fact(None, smi.source, note("mechanisms.smi_all_idle", samples=smi.samples))
    reasons = [f"{name} {count}" for name, count in sorted(smi.throttle_reasons.items())]
    share = smi.throttled_busy_samples / smi.busy_samples
    base = ctx.base_smi
    base_share = base.throttled_busy_samples / base.busy_samples if base is not None and base.busy_samples else None
    if base is not None and base.samples and not base.busy_samples:
        base_share = 0.0
    detail = note("mechanisms.smi_throttled", throttled=smi.throttled_busy_samples, busy=smi.busy_samples, reasons=reasons,
                  **embed("window", smi.window))
    worse = base_share is not None and share > base_share * WORSE_THAN_BASELINE and share - base_share > 0.0
    return _against_baseline(ctx, share, base_share, worse, detail, f"{smi.source}: clocks_event_reasons.active")


@THERMAL.rule(
    "thermal.clock_drop", "<", 0.90, "ratio", 2.0,
    source=["smi clocks.sm", "smi clocks.max.sm"],
    description="Lowest busy SM clock as a fraction of the maximum SM clock.",
    suggest=thermal_fix, artifact="smi",
)
def smi_min_clock_ratio(ctx: Context) -> Result:
    """Lowest busy SM clock over the maximum SM clock."""
    smi = ctx.smi
    if smi is None:
        return thermal_missing(ctx)
    if not ctx.imported:
        return Fact(None, smi.source, note("mechanisms.smi_not_for_replay"))
    unusable = _unusable(ctx)
    if unusable is not None:
        return unusable
    if smi.min_busy_sm_clock_mhz is None or not smi.max_sm_clock_mhz:
        return Missing(note("mechanisms.smi_no_clock", file=smi.source), note("mechanisms.capture_smi"))
    ratio = smi.min_busy_sm_clock_mhz / smi.max_sm_clock_mhz
    base = ctx.base_smi
    base_ratio = (base.min_busy_sm_clock_mhz / base.max_sm_clock_mhz
                  if base is not None and base.min_busy_sm_clock_mhz is not None and base.max_sm_clock_mhz else None)
    detail = note("mechanisms.smi_clock", min_mhz=smi.min_busy_sm_clock_mhz, max_mhz=smi.max_sm_clock_mhz,
                  max_source=smi.max_clock_source, **embed("window", smi.window))
    worse = base_ratio is not None and ratio * WORSE_THAN_BASELINE < base_ratio
    return _against_baseline(ctx, ratio, base_ratio, worse, detail, f"{smi.source}: clocks.sm")


@THERMAL.rule(
    "thermal.latency_drift", ">", 1.05, "ratio", 2.0,
    source=["outcome.latency_samples_ms"],
    description="Latency drifts upward across iterations (a significant monotone trend).",
    suggest=thermal_fix, one_run=True, sample_shape=True,
)
def latency_drift_ratio(ctx: Context) -> Result:
    """Last-third over first-third latency p50; gated unless a Spearman test finds an upward trend."""
    samples = ctx.run.outcome.latency_samples_ms
    if len(samples) < DRIFT_MIN_SAMPLES:
        return Missing(note("mechanisms.few_samples_drift", n=len(samples)),
                       note("mechanisms.capture_repeats", at_least=DRIFT_MIN_SAMPLES, ordered=True))
    third = len(samples) // 3
    first, last = median(samples[:third]), median(samples[-third:])
    rho, p = spearman(np.arange(len(samples)), np.asarray(samples, dtype=np.float64))
    detail = note("mechanisms.latency_drift", first_ms=first, last_ms=last, rho=rho, p=p, n=len(samples))
    gate = None if (rho > 0 and p < DEFAULT_ALPHA) else note("mechanisms.gate_no_trend", alpha=DEFAULT_ALPHA)
    busy = ctx.run.schedule.busy_samples_ms
    if gate is None and ctx.imported and len(busy) >= DRIFT_MIN_SAMPLES:
        b_third = len(busy) // 3
        b_first, b_last = median(busy[:b_third]), median(busy[-b_third:])
        if b_first > 0 and b_last / b_first < FLAT_BUSY:
            gate = note("mechanisms.gate_busy_flat", last_ms=b_last, first_ms=b_first)
    return Fact(last / first if first > 0 else 0.0, "outcome.latency_samples_ms in iteration order", detail, gate=gate)
