"""The ``outcome`` stage (statistical): is the whole forward slower, or its quality below a guardrail?

Latency is compared on the raw per-iteration samples (round by round for the two runs of
one interleaved session, :mod:`sparsedebug.core.paired`); the summary also quotes p99
against the budget, the effective speedup versus dense, the output cosine, and whether
a narrowed dense model wins at equal latency.
"""

from __future__ import annotations

from sparsedebug.core.paired import compare_timings
from sparsedebug.core.stats import percentiles
from sparsedebug.locate.common import fmt_cmp, positive, stage_status
from sparsedebug.locate.reference import MachineDrift, discount, session_block
from sparsedebug.records.findings import LayerFinding, MetricFinding, StageFinding
from sparsedebug.records.run import RunRecord

# A traced run is host-bound when the GPU waited on the host for at least this share of its span: its latency is
# mostly host time, and a profiler adds its own cost to every op on the host (traced and untraced order can differ).
HOST_BOUND_SHARE = 0.5


def host_wait_share(run: RunRecord) -> float | None:
    """The share of the run's traced span the GPU waited on the host; None for a run that records no host wait."""
    span = sum(run.schedule.span_samples_ms)
    if run.schedule.host_wait_ms is None or span <= 0:
        return None
    return min(1.0, run.schedule.host_wait_ms / span)


def traced_host_bound(runs: list[RunRecord]) -> float | None:
    """The largest host-wait share among the runs whose latency is traced and host-bound; None when none is."""
    shares = [share for run in runs if run.outcome.latency_timing == "traced"
              and (share := host_wait_share(run)) is not None and share >= HOST_BOUND_SHARE]
    return max(shares) if shares else None


def outcome_stage(
    base: RunRecord, cand: RunRecord, alpha: float, min_effect: float, min_cosine: float | None, drift: MachineDrift | None = None
) -> StageFinding:
    """Compare whole-forward latency; ``min_cosine`` is an optional quality guardrail on the candidate's output cosine.

    A latency change within the machine's own drift of the forward (``drift``) is not a finding.
    """
    metrics: list[MetricFinding] = []
    findings: list[LayerFinding] = []
    parts: list[str] = []
    b_out, c_out = base.outcome, cand.outcome
    if b_out.latency_samples_ms and c_out.latency_samples_ms:
        comp = compare_timings(
            positive(b_out.latency_samples_ms), positive(c_out.latency_samples_ms),
            block=session_block(base, cand), alpha=alpha, min_effect=min_effect,
        )
        comp = discount(comp, drift.forward_band if drift is not None else None)
        timing = c_out.latency_timing or b_out.latency_timing
        host_bound = traced_host_bound([base, cand])
        metrics.append(MetricFinding(metric="latency_ms", comparison=comp, note="whole-forward latency",
                                     latency_timing=timing, traced_host_wait_share=host_bound))
        word = {"slower": "slower", "faster": "faster", "same": "latency"}[comp.direction]
        text = f"{word} {fmt_cmp(comp)}: p50 {comp.base_median:.3f} -> {comp.cand_median:.3f} ms"
        if not comp.enough_samples:
            text += f" ({comp.n_base} vs {comp.n_cand} iterations: too few samples for a rank test)"
        parts.append(text)
        untraced = [run.outcome.latency_file for run in (base, cand) if run.outcome.latency_timing == "untraced"]
        if untraced:
            parts.append("on untraced latencies (" + ", ".join(f for f in untraced if f) + ")")
        elif host_bound is not None:
            parts.append(f"rests on traced latency of a host-bound run (the GPU waited on the host {host_bound:.0%} of the span; "
                         "the profiler's own cost per op is in it): time both runs untraced and pass --latency BASE CAND")
    if c_out.budget_ms is not None and c_out.latency_samples_ms:
        p99 = percentiles(c_out.latency_samples_ms).p99
        parts.append(f"p99 {p99:.3f} ms {'over' if p99 > c_out.budget_ms else 'within'} the {c_out.budget_ms:g} ms budget")
    if c_out.effective_speedup is not None:
        parts.append(f"effective speedup vs dense x{c_out.effective_speedup:.3f}")
    if c_out.quality is not None:
        parts.append(f"output cosine {c_out.quality.cosine:.4f}")
        if min_cosine is not None and c_out.quality.cosine < min_cosine:
            findings.append(
                LayerFinding(stage="outcome", layer="(quality)", kind="quality", regression=True, detail=f"output cosine {c_out.quality.cosine:.4f} below the guardrail {min_cosine}")
            )
    if c_out.equal_latency is not None and not c_out.equal_latency.sparsity_wins:
        parts.append("at equal latency a narrowed dense model has better quality")
    status = stage_status(findings, metrics)
    empty = [run.name for run in (base, cand) if not run.outcome.latency_samples_ms]
    if empty and status == "same":  # absence is never "no change": the forward was not compared
        status = "undecided"
        parts.insert(0, f"no latency samples in {' and '.join(empty)} (0 measured): whole-forward latency not compared")
    return StageFinding(stage="outcome", status=status, summary="; ".join(parts) or "no outcome samples", metrics=metrics, layers=findings)
