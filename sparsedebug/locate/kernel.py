"""The ``kernel`` stage (statistical): is a layer's kernel slower, or its numeric error beyond its precision?

Per layer (or per pooled role, see :func:`sparsedebug.locate.common.compare_layers`), the
per-call kernel times are compared with a rank test plus a minimum effect
(:func:`sparsedebug.core.stats.compare_samples`; round by round for the two runs of one
interleaved session, :mod:`sparsedebug.core.paired`) at Holm-corrected levels. A slower
layer whose lowering already diverged is reported as following from it. A layer's error
versus the fp64 reference counts when it exceeds what its precision explains
(:func:`sparsedebug.core.dtypes.kernel_tolerance`) and the baseline stayed within it.
"""

from __future__ import annotations

from sparsedebug.core.dtypes import kernel_tolerance
from sparsedebug.core.judgement import judge
from sparsedebug.core.patterns import layer_precision
from sparsedebug.core.stats import SampleComparison
from sparsedebug.locate.common import cmp_lists, cmp_values, compare_layers, ms_per_iteration, positive, stage_status
from sparsedebug.locate.reference import MachineDrift, discount, session_block, within
from sparsedebug.records.findings import LayerFinding, MetricFinding, StageFinding, group_label
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import GraphLayer, KernelLayer, KernelPath, RunRecord
from sparsedebug.records.stats import DEFAULT_MIN_SAMPLES, JudgementRule


def kernel_stage(
    base: RunRecord, cand: RunRecord, lower: StageFinding, alpha: float, min_effect: float, drift: MachineDrift | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
) -> StageFinding:
    """Compare per-layer kernel times and numeric errors; ``lower`` names the layers whose change lowering explains.

    ``drift`` (:func:`sparsedebug.locate.reference.machine_drift`) holds how far the machine
    itself moved identical dense work between the two replays; a layer's change whose
    interval lies inside that band is the machine's, not a finding.
    """
    b_kernel = {layer.name: layer for layer in base.kernel.layers}
    c_kernel = {layer.name: layer for layer in cand.kernel.layers}
    b_lower = {layer.name: layer for layer in base.lower.layers}
    c_lower = {layer.name: layer for layer in cand.lower.layers}
    c_graph = {layer.name: layer for layer in cand.graph.layers}
    lowered_wrong = {f.layer for f in lower.layers if f.regression}
    findings: list[LayerFinding] = []
    undecided: list[tuple[str, SampleComparison]] = []
    drifted: list[str] = []
    comparisons = compare_layers(
        {n: k.samples_ms for n, k in b_kernel.items()}, {n: k.samples_ms for n, k in c_kernel.items()}, base, cand, alpha, min_effect,
        min_samples=min_samples,
    )
    for label, members, comp in comparisons:
        if not comp.enough_samples:
            if comp.ratio >= min_effect or comp.ratio <= 1 / min_effect:
                undecided.append((group_label(label, members), comp))
            continue
        if comp.direction == "same":
            continue
        if drift is not None and within(comp, drift.kernel_band):
            drifted.append(label)
            continue
        path_changed = any(
            m in b_lower and m in c_lower and b_lower[m].path is KernelPath.DENSE and c_lower[m].path is KernelPath.SPARSE for m in members
        )
        explained = [m for m in members if m in lowered_wrong]
        delta = sum(ms_per_iteration(c_kernel[m].samples_ms, cand) - ms_per_iteration(b_kernel[m].samples_ms, base) for m in members)
        if comp.direction == "slower":
            facts = note(
                "locate.finding.slower", **cmp_values(comp), explained=explained, sparse_path=path_changed and not explained,
                persistent=comp.persistent,
            )
            findings.append(
                LayerFinding(
                    stage="kernel", layer=label, members=members if len(members) > 1 else [], kind="slower",
                    regression=comp.persistent, facts=facts, comparison=comp, delta_ms=delta,
                )
            )
        else:
            findings.append(
                LayerFinding(
                    stage="kernel", layer=label, members=members if len(members) > 1 else [], kind="faster",
                    regression=False, intended=path_changed, facts=note("locate.finding.faster", **cmp_values(comp), sparse_path=path_changed),
                    comparison=comp, delta_ms=delta,
                )
            )
    for name, layer in c_kernel.items():
        finding = _precision_finding(name, layer, b_kernel.get(name), c_graph.get(name))
        if finding is not None:
            findings.append(finding)
    metrics: list[MetricFinding] = []
    if base.schedule.busy_samples_ms and cand.schedule.busy_samples_ms:
        busy = judge(
            positive(base.schedule.busy_samples_ms), positive(cand.schedule.busy_samples_ms),
            JudgementRule(alpha=alpha, factor=min_effect, min_samples=min_samples), block=session_block(base, cand),
        )
        busy = discount(busy, _busy_band(drift))
        metrics.append(MetricFinding(metric="busy_ms", comparison=busy, facts=note("locate.metric.busy_ms")))
    added = sorted(c_kernel.keys() - b_kernel.keys())
    removed = sorted(b_kernel.keys() - c_kernel.keys())
    status = stage_status(findings, metrics)
    if status == "same" and undecided:
        status = "undecided"
    summary = _facts(findings, metrics, undecided, (added, removed), drifted, drift)
    return StageFinding(stage="kernel", status=status, facts=summary, metrics=metrics, layers=findings)


def _busy_band(drift: MachineDrift | None) -> tuple[float, float] | None:
    """Busy time sums the layers' timing windows: the machine moved it as far as any shared reference, layer or forward."""
    if drift is None:
        return None
    bands = [band for band in (drift.kernel_band, drift.forward_band) if band is not None]
    return (min(b[0] for b in bands), max(b[1] for b in bands)) if bands else None


def _facts(
    findings: list[LayerFinding], metrics: list[MetricFinding], undecided: list[tuple[str, SampleComparison]],
    only: tuple[list[str], list[str]], drifted: list[str], drift: MachineDrift | None,
) -> list[Note]:
    """The kernel stage's summary: slower and faster layers, busy time, what could not be decided."""
    slow = [f for f in findings if f.regression and f.comparison is not None][:5]
    beyond = [f for f in findings if f.regression and f.comparison is None]
    fast = [f for f in findings if f.kind == "faster" and f.comparison is not None][:5]
    facts: list[Note] = []
    if slow:
        facts.append(note("locate.kernel.slower", **cmp_lists([f.label for f in slow], [f.comparison for f in slow if f.comparison])))
    if beyond:
        facts.append(note("locate.kernel.precision", layers=[f.label for f in beyond[:5]]))
    if fast:
        facts.append(note("locate.kernel.faster", **cmp_lists([f.label for f in fast], [f.comparison for f in fast if f.comparison])))
    if metrics:
        m = metrics[0].comparison
        facts.append(note("locate.kernel.busy", **cmp_values(m), enough=m.enough_samples))
    if undecided and not slow and not beyond:
        shown = undecided[:4]
        facts.append(note("locate.kernel.too_few", **cmp_lists([label for label, _ in shown], [c for _, c in shown]),
                          n_base=[float(c.n_base) for _, c in shown], n_cand=[float(c.n_cand) for _, c in shown]))
    added, removed = only
    if added or removed:
        facts.append(note("locate.kernel.only", cand=len(added), base=len(removed)))
    if drifted and drift is not None and drift.kernel_band is not None:
        lo, hi = drift.kernel_band
        facts.append(note("locate.kernel.drifted", count=len(drifted), low=lo, high=hi))
    return facts or [note("locate.kernel.same")]


def _precision_finding(name: str, cand: KernelLayer, base: KernelLayer | None, graph: GraphLayer | None) -> LayerFinding | None:
    precision = layer_precision(cand, graph.dtype if graph is not None else None)
    tolerance = kernel_tolerance(precision)
    if precision is None or tolerance is None or cand.rel_err is None or cand.rel_err <= tolerance:
        return None
    if base is not None and base.rel_err is not None and base.rel_err > tolerance:
        return None  # already beyond tolerance in the baseline: not a divergence of this candidate
    return LayerFinding(
        stage="kernel", layer=name, kind="precision", regression=True,
        facts=note("locate.finding.precision", rel_err=cand.rel_err, precision=str(precision), tolerance=tolerance),
    )
