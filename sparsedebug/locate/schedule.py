"""The ``schedule`` stage (statistical): did the overhead around the kernels grow?

Overhead is span minus busy time per iteration, compared as the latency the candidate
would have with the baseline's kernel time. On short traces (too few iterations for a
rank test), the per-call device idle time before each layer is compared instead, pooled
by role like kernel times; it is a divergence when the idle growth is persistent and
material against the baseline latency.
"""

from __future__ import annotations

from sparsedebug.core.judgement import judge
from sparsedebug.core.stats import median
from sparsedebug.locate.common import (
    calls_per_iteration,
    cmp_values,
    compare_layers,
    iteration_count,
    positive,
    stage_status,
    undecided_regression,
)
from sparsedebug.locate.reference import MachineDrift, discount, session_block
from sparsedebug.records.basis import per_iteration
from sparsedebug.records.findings import LayerFinding, MetricFinding, StageFinding
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import DEFAULT_MIN_SAMPLES, JudgementRule


def schedule_stage(
    base: RunRecord, cand: RunRecord, alpha: float, min_effect: float, drift: MachineDrift | None = None, min_samples: int = DEFAULT_MIN_SAMPLES,
) -> StageFinding:
    """Compare overhead (span - busy) per iteration and, where recorded, per-layer idle time before each call.

    A change within the machine's own drift of the forward (``drift``) is not a finding.
    """
    band = drift.forward_band if drift is not None else None
    metrics: list[MetricFinding] = []
    b_sched, c_sched = base.schedule, cand.schedule
    if b_sched.span_samples_ms and c_sched.span_samples_ms and len(b_sched.span_samples_ms) == len(b_sched.busy_samples_ms) and len(c_sched.span_samples_ms) == len(c_sched.busy_samples_ms):
        ref_busy = median(b_sched.busy_samples_ms) if b_sched.busy_samples_ms else 0.0
        b_over = [s - k + ref_busy for s, k in zip(b_sched.span_samples_ms, b_sched.busy_samples_ms, strict=True)]
        c_over = [s - k + ref_busy for s, k in zip(c_sched.span_samples_ms, c_sched.busy_samples_ms, strict=True)]
        rule = JudgementRule(alpha=alpha, factor=min_effect, min_samples=min_samples)
        raw_over = judge(positive(b_over), positive(c_over), rule, block=session_block(base, cand))
        comp = discount(raw_over, band)
        b_med = median([s - k for s, k in zip(b_sched.span_samples_ms, b_sched.busy_samples_ms, strict=True)])
        c_med = median([s - k for s, k in zip(c_sched.span_samples_ms, c_sched.busy_samples_ms, strict=True)])
        metrics.append(
            MetricFinding(
                metric="overhead_ms",
                comparison=comp,
                facts=note("locate.metric.overhead_ms", base_p50=b_med, cand_p50=c_med),
            )
        )
    findings: list[LayerFinding] = []
    material_ms = 0.0
    if b_sched.layer_idle_samples_ms and c_sched.layer_idle_samples_ms:
        b_kernel = {layer.name: median(layer.samples_ms) for layer in base.kernel.layers if layer.samples_ms}
        offsets = {name: b_kernel.get(name, 0.0) for name in c_sched.layer_idle_samples_ms}
        for label, members, raw in compare_layers(b_sched.layer_idle_samples_ms, c_sched.layer_idle_samples_ms, base, cand, alpha, min_effect, offsets,
                                                  min_samples):
            comp = discount(raw, band)
            if not comp.enough_samples or comp.direction == "same":
                continue
            delta = sum(
                (median(c_sched.layer_idle_samples_ms[m]) - median(b_sched.layer_idle_samples_ms[m])) * calls_per_iteration(c_sched.layer_idle_samples_ms[m], iteration_count(cand))
                for m in members
            )
            grew = comp.direction == "slower"
            if grew and comp.persistent:
                material_ms += delta
            findings.append(
                LayerFinding(
                    stage="schedule", layer=label, members=members if len(members) > 1 else [],
                    kind="idle_grew" if grew else "idle_shrank", regression=False, delta_ms=delta,
                    facts=note(
                        "locate.finding.idle", grew=grew, per_layer_ms=abs(delta) / max(len(members), 1), **cmp_values(comp),
                        persistent=comp.persistent,
                    ),
                    comparison=comp,
                )
            )
    base_latency = median(base.outcome.latency_samples_ms) if base.outcome.latency_samples_ms else None
    headline = metrics[0].comparison if metrics else None
    decided_by_layers = headline is None or not headline.enough_samples
    if decided_by_layers and base_latency and material_ms >= (min_effect - 1.0) * base_latency:
        for f in findings:
            if f.kind == "idle_grew" and f.comparison is not None and f.comparison.persistent:
                f.regression = True
    status = stage_status(findings, metrics if not decided_by_layers else [])
    if status == "same" and headline is not None and undecided_regression(headline):
        status = "undecided"
    facts: list[Note] = []
    if headline is not None:
        over = metrics[0].facts.values if metrics[0].facts is not None else {}
        facts.append(note("locate.schedule.overhead", **cmp_values(headline), base_overhead=over.get("base_p50"), cand_overhead=over.get("cand_p50")))
        if not headline.enough_samples:
            facts.append(note("locate.schedule.too_few", n_base=headline.n_base, n_cand=headline.n_cand))
    if b_sched.host_wait_ms is not None and c_sched.host_wait_ms is not None:
        facts.append(note("locate.schedule.host_wait", before=per_iteration(b_sched, b_sched.host_wait_ms),
                          after=per_iteration(c_sched, c_sched.host_wait_ms)))
    waiting = [f for f in findings if f.regression]
    if waiting:
        facts.append(note("locate.schedule.idle_layers", count=sum(max(len(f.members), 1) for f in waiting),
                          layers=[f.label for f in waiting[:4]], ms=material_ms))
    if b_sched.threads != c_sched.threads and b_sched.threads is not None and c_sched.threads is not None:
        facts.append(note("locate.schedule.threads", before=b_sched.threads, after=c_sched.threads))
    return StageFinding(stage="schedule", status=status, facts=facts or [note("locate.schedule.empty")], metrics=metrics, layers=findings)
