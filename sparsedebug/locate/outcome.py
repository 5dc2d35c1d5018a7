"""The ``outcome`` stage (statistical): is the whole forward slower, or its quality below a guardrail?

Latency is compared on the raw per-iteration samples (round by round for the two runs of
one interleaved session, :mod:`sparsedebug.core.paired`); the summary also quotes p99
against the budget, the effective speedup versus dense, the output cosine, and whether
a narrowed dense model wins at equal latency.
"""

from __future__ import annotations

from sparsedebug.core.judgement import judge, judgement_of
from sparsedebug.core.stats import median, percentiles
from sparsedebug.locate.common import cmp_values, positive, stage_status
from sparsedebug.locate.reference import MachineDrift, discount, session_block
from sparsedebug.records.findings import LayerFinding, MetricFinding, StageFinding
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import DEFAULT_MIN_SAMPLES, JudgementRule

# A trace shows the profiler's cost when the GPU waited on the host for at least this share of its span: host time is
# then on the latency's path, and a profiler adds its own cost to every op on the host (traced and untraced order can
# differ; a pair at 28% host wait ran 28% slower traced than untraced).
PROFILER_COST_SHARE = 0.1


def host_wait_share(run: RunRecord) -> float | None:
    """The share of the run's traced span the GPU waited on the host; None for a run that records no host wait."""
    span = sum(run.schedule.span_samples_ms)
    if run.schedule.host_wait_ms is None or span <= 0:
        return None
    return min(1.0, run.schedule.host_wait_ms / span)


def traced_host_bound(runs: list[RunRecord]) -> float | None:
    """The largest host-wait share among the runs whose latency is traced and shows the profiler's cost
    (``PROFILER_COST_SHARE``); None when none does."""
    shares = [share for run in runs if run.outcome.latency_timing == "traced"
              and (share := host_wait_share(run)) is not None and share >= PROFILER_COST_SHARE]
    return max(shares) if shares else None


def profiler_cost(base: RunRecord, cand: RunRecord, factor: float) -> Note | None:
    """The caveat wherever the traces show the profiler's cost, with the untraced figures beside the traced ones.

    A trace shows it when the GPU waited on the host for at least ``PROFILER_COST_SHARE`` of its span, or when
    untraced latencies (``--latency``) were given and a run's traced p50 differs from its untraced p50 by ``factor``
    either way. None for replays and for traces that show neither.
    """
    runs = [run for run in (base, cand) if run.outcome.latency_timing is not None and run.outcome.latency_samples_ms]
    if len(runs) < 2:
        return None
    shares = [share for run in runs if (share := host_wait_share(run)) is not None]
    traced = [median(run.outcome.traced_latency_samples_ms or run.outcome.latency_samples_ms) for run in runs]
    untraced = [median(run.outcome.latency_samples_ms) if run.outcome.latency_timing == "untraced" else None for run in runs]
    apart = any(u is not None and max(t / u, u / t) >= factor for t, u in zip(traced, untraced, strict=True))
    share = max(shares) if shares else None
    if not apart and (share is None or share < PROFILER_COST_SHARE):
        return None
    return note("locate.outcome.profiler_cost", share=share, traced_base=traced[0], traced_cand=traced[1],
                untraced_base=untraced[0], untraced_cand=untraced[1])


def outcome_stage(
    base: RunRecord, cand: RunRecord, alpha: float, min_effect: float, min_cosine: float | None, drift: MachineDrift | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
) -> StageFinding:
    """Compare whole-forward latency; ``min_cosine`` is an optional quality guardrail on the candidate's output cosine.

    A latency change within the machine's own drift of the forward (``drift``) is not a finding.
    """
    metrics: list[MetricFinding] = []
    findings: list[LayerFinding] = []
    facts: list[Note] = []
    b_out, c_out = base.outcome, cand.outcome
    if b_out.latency_samples_ms and c_out.latency_samples_ms:
        comp = judge(
            positive(b_out.latency_samples_ms), positive(c_out.latency_samples_ms),
            JudgementRule(alpha=alpha, factor=min_effect, min_samples=min_samples), block=session_block(base, cand),
        )
        comp = discount(comp, drift.forward_band if drift is not None else None)
        timing = c_out.latency_timing or b_out.latency_timing
        host_bound = traced_host_bound([base, cand])
        metrics.append(MetricFinding(metric="latency_ms", comparison=comp, facts=note("locate.metric.latency_ms"),
                                     latency_timing=timing, traced_host_wait_share=host_bound))
        facts.append(note("locate.outcome.latency", direction=comp.direction, **cmp_values(comp), enough=comp.enough_samples))
        untraced = [run.outcome.latency_file for run in (base, cand) if run.outcome.latency_timing == "untraced"]
        if untraced:
            facts.append(note("locate.outcome.untraced", files=[f for f in untraced if f]))
        cost = profiler_cost(base, cand, min_effect)
        if cost is not None:
            facts.append(cost)
    if c_out.budget_ms is not None and c_out.latency_samples_ms:
        p99 = percentiles(c_out.latency_samples_ms).p99
        facts.append(note("locate.outcome.budget", p99=p99, budget=c_out.budget_ms, over=p99 > c_out.budget_ms))
    if c_out.effective_speedup is not None:
        facts.append(note("locate.outcome.speedup", speedup=c_out.effective_speedup))
    if c_out.quality is not None:
        facts.append(note("locate.outcome.cosine", cosine=c_out.quality.cosine))
        if min_cosine is not None and c_out.quality.cosine < min_cosine:
            findings.append(LayerFinding(stage="outcome", layer="(quality)", kind="quality", regression=True,
                                         facts=note("locate.finding.quality", cosine=c_out.quality.cosine, guardrail=min_cosine)))
    if c_out.equal_latency is not None and not c_out.equal_latency.sparsity_wins:
        facts.append(note("locate.outcome.dense_wins"))
    status = stage_status(findings, metrics)
    empty = [run.name for run in (base, cand) if not run.outcome.latency_samples_ms]
    if empty and status == "same":  # absence is never "no change": the forward was not compared
        status = "undecided"
        facts.insert(0, note("locate.outcome.no_samples", runs=empty))
    headline = metrics[0].comparison if metrics else None
    if headline is not None and status == "same" and judgement_of(headline) == "inconclusive":
        # the one rule (core.judgement): too few samples to judge is inconclusive, never "no change"
        status = "undecided"
        facts.insert(0, note("locate.outcome.too_few", n_base=headline.n_base, n_cand=headline.n_cand, needed=headline.needed))
    return StageFinding(stage="outcome", status=status, facts=facts or [note("locate.outcome.empty")], metrics=metrics, layers=findings)
