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
from sparsedebug.core.paired import compare_timings
from sparsedebug.core.patterns import layer_precision
from sparsedebug.locate.common import compare_layers, fmt_cmp, ms_per_iteration, positive, stage_status
from sparsedebug.locate.reference import MachineDrift, discount, session_block, within
from sparsedebug.records.findings import LayerFinding, MetricFinding, StageFinding
from sparsedebug.records.run import GraphLayer, KernelLayer, KernelPath, RunRecord


def kernel_stage(
    base: RunRecord, cand: RunRecord, lower: StageFinding, alpha: float, min_effect: float, drift: MachineDrift | None = None
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
    undecided: list[str] = []
    drifted: list[str] = []
    comparisons = compare_layers(
        {n: k.samples_ms for n, k in b_kernel.items()}, {n: k.samples_ms for n, k in c_kernel.items()}, base, cand, alpha, min_effect
    )
    for label, members, comp in comparisons:
        if not comp.enough_samples:
            if comp.ratio >= min_effect or comp.ratio <= 1 / min_effect:
                undecided.append(f"{label} {fmt_cmp(comp)} ({comp.n_base} vs {comp.n_cand} samples)")
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
            if explained:
                detail = f"slower {fmt_cmp(comp)}; follows from lowering ({', '.join(explained)})"
            elif path_changed:
                detail = f"sparse path slower than the dense baseline {fmt_cmp(comp)}"
            else:
                detail = f"kernel time slower {fmt_cmp(comp)}"
            if not comp.persistent:
                detail += " - not persistent"
            findings.append(
                LayerFinding(
                    stage="kernel", layer=label, members=members if len(members) > 1 else [], kind="slower",
                    regression=comp.persistent, detail=detail, comparison=comp, delta_ms=delta,
                )
            )
        else:
            detail = f"faster {fmt_cmp(comp)}" + (" (sparse path, as intended)" if path_changed else "")
            findings.append(
                LayerFinding(
                    stage="kernel", layer=label, members=members if len(members) > 1 else [], kind="faster",
                    regression=False, intended=path_changed, detail=detail, comparison=comp, delta_ms=delta,
                )
            )
    for name, layer in c_kernel.items():
        finding = _precision_finding(name, layer, b_kernel.get(name), c_graph.get(name))
        if finding is not None:
            findings.append(finding)
    metrics: list[MetricFinding] = []
    if base.schedule.busy_samples_ms and cand.schedule.busy_samples_ms:
        busy = compare_timings(
            positive(base.schedule.busy_samples_ms), positive(cand.schedule.busy_samples_ms),
            block=session_block(base, cand), alpha=alpha, min_effect=min_effect,
        )
        busy = discount(busy, _busy_band(drift))
        metrics.append(MetricFinding(metric="busy_ms", comparison=busy, note="summed kernel/layer time per iteration"))
    added = sorted(c_kernel.keys() - b_kernel.keys())
    removed = sorted(b_kernel.keys() - c_kernel.keys())
    status = stage_status(findings, metrics)
    if status == "same" and undecided:
        status = "undecided"
    summary = _summary(findings, metrics, undecided, (added, removed), drifted, drift)
    return StageFinding(stage="kernel", status=status, summary=summary, metrics=metrics, layers=findings)


def _busy_band(drift: MachineDrift | None) -> tuple[float, float] | None:
    """Busy time sums the layers' timing windows: the machine moved it as far as any shared reference, layer or forward."""
    if drift is None:
        return None
    bands = [band for band in (drift.kernel_band, drift.forward_band) if band is not None]
    return (min(b[0] for b in bands), max(b[1] for b in bands)) if bands else None


def _summary(
    findings: list[LayerFinding], metrics: list[MetricFinding], undecided: list[str],
    only: tuple[list[str], list[str]], drifted: list[str], drift: MachineDrift | None,
) -> str:
    """The kernel stage's one line: slower and faster layers, busy time, what could not be decided."""
    slow = [f for f in findings if f.regression]
    fast = [f for f in findings if f.kind == "faster"]
    parts = []
    if slow:
        parts.append("slower: " + ", ".join(f"{f.layer} {fmt_cmp(f.comparison)}" if f.comparison else f"{f.layer} ({f.detail})" for f in slow[:5]))
    if fast:
        parts.append("faster: " + ", ".join(f"{f.layer} {fmt_cmp(f.comparison)}" for f in fast[:5] if f.comparison))
    if metrics:
        m = metrics[0].comparison
        parts.append(f"busy per iteration {fmt_cmp(m)}" + ("" if m.enough_samples else f" ({m.n_base} vs {m.n_cand} iterations: too few to test alone)"))
    if undecided and not slow:
        parts.append("too few samples for: " + "; ".join(undecided[:4]))
    added, removed = only
    if added or removed:
        parts.append(f"{len(added)} kernel entr(ies) only in the candidate, {len(removed)} only in the baseline")
    if drifted and drift is not None and drift.kernel_band is not None:
        lo, hi = drift.kernel_band
        parts.append(f"{len(drifted)} layer(s) moved within this machine's own drift (x{lo:.3f} to x{hi:.3f})")
    return "; ".join(parts) or "no significant per-layer change"


def _precision_finding(name: str, cand: KernelLayer, base: KernelLayer | None, graph: GraphLayer | None) -> LayerFinding | None:
    precision = layer_precision(cand, graph.dtype if graph is not None else None)
    tolerance = kernel_tolerance(precision)
    if precision is None or tolerance is None or cand.rel_err is None or cand.rel_err <= tolerance:
        return None
    if base is not None and base.rel_err is not None and base.rel_err > tolerance:
        return None  # already beyond tolerance in the baseline: not a divergence of this candidate
    return LayerFinding(
        stage="kernel", layer=name, kind="precision", regression=True,
        detail=f"relative error {cand.rel_err:.3g} vs fp64 exceeds the {precision} tolerance {tolerance:g}",
    )
