"""Step 2 of the playbook: the first persistent stage where a candidate run diverges from its baseline.

``bisect_runs(base, cand)`` walks ``graph -> lower -> kernel -> schedule -> outcome``
and decides, per stage, whether the candidate diverged for real:

- ``graph`` (categorical): the layer inventory differs beyond declared intent: a
  layer added or removed, or its op, shapes or dtype changed. A layer whose
  declared sparsity or dtype changed is the candidate's declared intent, not a
  divergence (its consequences show in ``lower``).
- ``lower`` (categorical): a layer declared sparse fell back to dense, a layer not
  declared sparse changed path or kernel class (a neighbour pushed onto another
  path), or a sparse layer now re-converts its weights on every call.
- ``kernel`` (statistical): a layer's per-call kernel time is significantly and
  persistently slower (rank test plus minimum effect, see
  ``sparsedebug.core.stats.compare_samples``), or its numeric error exceeds what its
  precision allows. When a layer has too few samples alone (a 3-iteration trace),
  identical layers (same role in every block, same op, shape, dtype, path) are
  pooled: their samples are exchangeable when nothing changed. Per-layer tests
  run at ``alpha / m`` for the ``m`` layers or groups tested (Bonferroni), so
  testing many layers on a noisy machine does not manufacture a finding.
- ``schedule`` (statistical): overhead (span minus busy) grew, measured as the
  latency the candidate would have with the baseline's kernel time; on short
  traces, per-call idle time before each layer, pooled the same way.
- ``outcome`` (statistical): latency slower, or quality below a guardrail.

A stage that improved is reported as such, never as a regression. With too few
samples to decide, a stage is ``undecided`` and says so. The answer ranks the
layers by their contribution to the outcome change and lists the downstream
stages the first divergence explains.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from sparsedebug.core.dtypes import kernel_tolerance
from sparsedebug.core.patterns import declared_sparse, fell_back, kernel_named, layer_precision, path_changed, path_text
from sparsedebug.core.stats import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    SampleComparison,
    compare_samples,
    enough_samples,
    median,
    percentiles,
)
from sparsedebug.records.findings import (
    BisectResult,
    BisectState,
    LayerFinding,
    MetricFinding,
    RankedLayer,
    StageFinding,
    StageStatus,
)
from sparsedebug.records.run import (
    STAGES,
    GraphLayer,
    KernelClass,
    KernelLayer,
    KernelPath,
    RunRecord,
)

# --------------------------------------------------------------------------- helpers


def finding_signature(finding: LayerFinding) -> str:
    """What makes two findings "the same divergence": kind, plus the fallback reason or the layer role."""
    if finding.kind == "fallback":
        return f"fallback:{finding.reason}"
    if finding.kind in ("slower", "precision", "idle_grew"):
        return f"{finding.kind}:{group_key(finding.layer)}"
    return finding.kind


def group_key(name: str) -> str:
    """Role of a layer across blocks: numeric path parts become ``{i}`` (``layers.3.mlp.up_proj`` -> ``layers.{i}.mlp.up_proj``)."""
    return ".".join("{i}" if part.isdigit() else part for part in name.split("."))


def _iterations(run: RunRecord) -> int:
    return max(len(run.outcome.latency_samples_ms), len(run.schedule.span_samples_ms), 1)


def _calls_per_iteration(samples: Sequence[float], iterations: int) -> int:
    if len(samples) >= iterations and iterations > 0:
        return max(1, round(len(samples) / iterations))
    return 1


def _positive(values: Iterable[float], floor: float = 1e-9) -> list[float]:
    return [max(float(v), floor) for v in values]


def _fmt_cmp(c: SampleComparison) -> str:
    ci = f" [{c.ci_low:.3f}, {c.ci_high:.3f}]" if c.ci_low is not None and c.ci_high is not None else ""
    return f"x{c.ratio:.3f}{ci}"


def _undecided_regression(c: SampleComparison) -> bool:
    return not c.enough_samples and c.ratio >= c.min_effect


def _undecided_improvement(c: SampleComparison) -> bool:
    return not c.enough_samples and c.ratio <= 1.0 / c.min_effect


def _status(layers: list[LayerFinding], metrics: list[MetricFinding], *, intended_any: bool = False) -> StageStatus:
    if any(f.regression for f in layers) or any(m.comparison.direction == "slower" and m.comparison.persistent for m in metrics):
        return "divergent"
    improved = any(f.kind in ("faster", "idle_shrank") and f.comparison is not None and f.comparison.persistent for f in layers)
    if improved or any(m.comparison.direction == "faster" and m.comparison.persistent for m in metrics):
        return "improved"
    if any(_undecided_regression(m.comparison) for m in metrics):
        return "undecided"
    if intended_any:
        return "expected"
    return "same"


# --------------------------------------------------------------------------- stages


_SHAPE_FIELDS = ("op", "weight_shape", "input_shape", "output_shape")
"""Structural fields: a change is a graph divergence. dtype and declared sparsity are the candidate's declared intent."""


def _graph_stage(base: RunRecord, cand: RunRecord) -> StageFinding:
    if kernel_named(base) or kernel_named(cand):
        return StageFinding(
            stage="graph",
            status="not_comparable",
            summary="no layer annotations in at least one run (layers are kernel names): graph inventory not compared",
        )
    b = {layer.name: layer for layer in base.graph.layers}
    c = {layer.name: layer for layer in cand.graph.layers}
    findings: list[LayerFinding] = []
    for name in b.keys() - c.keys():
        findings.append(LayerFinding(stage="graph", layer=name, kind="removed", regression=True, detail=f"{b[name].op.value} layer missing from the candidate"))
    for name in c.keys() - b.keys():
        findings.append(LayerFinding(stage="graph", layer=name, kind="added", regression=True, detail=f"{c[name].op.value} layer not in the baseline"))
    intended = 0
    for name in [n for n in b if n in c]:
        bl, cl = b[name], c[name]
        changed = [f"{field}: {getattr(bl, field)} -> {getattr(cl, field)}" for field in _SHAPE_FIELDS if getattr(bl, field) != getattr(cl, field)]
        if changed:
            findings.append(LayerFinding(stage="graph", layer=name, kind="changed", regression=True, detail="; ".join(changed)))
        else:
            declared = [f"declared sparsity {bl.intended} -> {cl.intended}"] if bl.intended != cl.intended else []
            declared += [f"dtype {bl.dtype} -> {cl.dtype}"] if bl.dtype != cl.dtype else []
            if declared:
                intended += 1
                findings.append(LayerFinding(stage="graph", layer=name, kind="intended", regression=False, intended=True, detail="; ".join(declared)))
    if base.graph.tokens is not None and cand.graph.tokens is not None and base.graph.tokens != cand.graph.tokens:
        findings.append(LayerFinding(stage="graph", layer="(tokens)", kind="changed", regression=True, detail=f"tokens {base.graph.tokens} -> {cand.graph.tokens}"))
    findings.sort(key=lambda f: (not f.regression, f.layer))
    regressions = [f for f in findings if f.regression]
    status: StageStatus = "divergent" if regressions else ("expected" if intended else "same")
    if regressions:
        summary = f"{len(regressions)} layer(s) differ beyond declared intent: " + ", ".join(f"{f.layer} ({f.kind})" for f in regressions[:5])
    elif intended:
        summary = f"same layer inventory; {intended} layer(s) changed declared sparsity or dtype (declared intent)"
    else:
        summary = f"same layer inventory ({len(b)} layers)"
    if base.graph.model_revision != cand.graph.model_revision and base.graph.model_revision and cand.graph.model_revision:
        summary += f"; model revision {base.graph.model_revision} -> {cand.graph.model_revision}"
    return StageFinding(stage="graph", status=status, summary=summary, layers=findings)


def _lower_stage(base: RunRecord, cand: RunRecord) -> StageFinding:
    if kernel_named(base) or kernel_named(cand):
        return _lower_by_class(base, cand)
    b = {layer.name: layer for layer in base.lower.layers}
    c = {layer.name: layer for layer in cand.lower.layers}
    graph = {layer.name: layer for layer in cand.graph.layers}
    findings: list[LayerFinding] = []
    for name, cl in c.items():
        bl = b.get(name)
        intent = graph[name].intended if name in graph else None
        declared = declared_sparse(intent)
        if fell_back(intent, cl):
            reason = cl.reason.value if cl.reason is not None else "no reason recorded"
            findings.append(
                LayerFinding(
                    stage="lower", layer=name, kind="fallback", regression=True, reason=reason,
                    detail=f"declared {graph[name].intended} but runs dense: {reason}" + (f" ({cl.detail})" if cl.detail else ""),
                )
            )
        elif bl is not None and not declared and path_changed(bl, cl):
            findings.append(
                LayerFinding(
                    stage="lower", layer=name, kind="path_changed", regression=True,
                    detail=f"not declared sparse, but its path changed: {path_text(bl)} -> {path_text(cl)}",
                )
            )
        elif declared and cl.path is KernelPath.SPARSE and (bl is None or bl.path is KernelPath.DENSE):
            findings.append(
                LayerFinding(stage="lower", layer=name, kind="intended", regression=False, intended=True, detail=f"sparse as declared ({path_text(cl)})")
            )
        base_conversions = bl.conversions_per_call if bl is not None else 0
        if cl.conversions_per_call > base_conversions:
            cost = f", {cl.conversion_ms:.3g} ms each" if cl.conversion_ms is not None else ""
            findings.append(
                LayerFinding(
                    stage="lower", layer=name, kind="per_call_conversion", regression=True,
                    detail=f"re-converts its weights {cl.conversions_per_call}x per call (baseline {base_conversions}){cost}",
                )
            )
    findings.sort(key=lambda f: (not f.regression, _LOWER_ORDER.index(f.kind) if f.kind in _LOWER_ORDER else len(_LOWER_ORDER), f.layer))
    regressions = [f for f in findings if f.regression]
    intended = [f for f in findings if f.intended]
    status: StageStatus = "divergent" if regressions else ("expected" if intended else "same")
    if regressions:
        by_kind: dict[str, list[LayerFinding]] = defaultdict(list)
        for f in regressions:
            by_kind[f.kind].append(f)
        parts = []
        for kind, items in by_kind.items():
            if kind == "fallback":
                parts.append("dense fallback: " + ", ".join(f"{f.layer} ({f.reason})" for f in items))
            elif kind == "path_changed":
                parts.append("path changed without declared intent: " + ", ".join(f"{f.layer} ({f.detail.split(': ', 1)[-1]})" for f in items))
            else:
                names = ", ".join(f.layer for f in items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")
                parts.append(f"{kind.replace('_', ' ')} on {len(items)} layer(s): {names}")
        summary = "; ".join(parts)
    elif intended:
        summary = f"{len(intended)} layer(s) took the sparse path as declared; no unintended path change"
    else:
        summary = "every layer kept its path"
    if base.lower.backend != cand.lower.backend:
        summary += f" (backend {base.lower.backend} -> {cand.lower.backend})"
    return StageFinding(stage="lower", status=status, summary=summary, layers=findings)


_LOWER_ORDER = ("fallback", "path_changed", "per_call_conversion", "intended")


def _lower_by_class(base: RunRecord, cand: RunRecord) -> StageFinding:
    """Lowering of unannotated traces: compare the kernel classes used, not layers."""
    b_classes = {layer.kernel_class for layer in base.lower.layers if layer.kernel_class is not None}
    c_layers: dict[KernelClass, list[str]] = defaultdict(list)
    for layer in cand.lower.layers:
        if layer.kernel_class is not None:
            c_layers[layer.kernel_class].append(layer.name)
    findings: list[LayerFinding] = []
    for cls, names in sorted(c_layers.items(), key=lambda item: item[0].value):
        if cls in b_classes:
            continue
        if cls is KernelClass.SPARSE_GEMM:
            findings.append(
                LayerFinding(stage="lower", layer=cls.value, members=names, kind="intended", regression=False, intended=True, detail=f"{len(names)} sparse GEMM kernel(s) appeared")
            )
        else:
            findings.append(
                LayerFinding(stage="lower", layer=cls.value, members=names, kind="new_kernel_class", regression=True, detail=f"kernel class {cls.value} appeared: {', '.join(n[:60] for n in names[:3])}")
            )
    regressions = [f for f in findings if f.regression]
    intended = [f for f in findings if f.intended]
    status: StageStatus = "divergent" if regressions else ("expected" if intended else "same")
    summary = "compared by kernel class (no layer annotations): "
    if regressions:
        summary += "; ".join(f.detail for f in regressions)
    elif intended:
        summary += "only the declared sparse GEMMs are new"
    else:
        summary += "same kernel classes"
    return StageFinding(stage="lower", status=status, summary=summary, layers=findings)


def _pooled_groups(names: Iterable[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for name in names:
        groups[group_key(name)].append(name)
    return groups


def _same_structure(names: list[str], base: RunRecord, cand: RunRecord) -> bool:
    """Pooling is legitimate only across layers doing identical work on the same path in both runs."""
    for run in (base, cand):
        graph = {layer.name: layer for layer in run.graph.layers}
        lower = {layer.name: layer for layer in run.lower.layers}
        signatures = set()
        for name in names:
            g, lo = graph.get(name), lower.get(name)
            signatures.add(
                (
                    None if g is None else (g.op, tuple(g.weight_shape or ()), tuple(g.input_shape or ()), g.dtype, g.intended),
                    None if lo is None else (lo.path, lo.kernel_class),
                )
            )
        if len(signatures) != 1:
            return False
    return True


def _compare_layers(
    base_samples: dict[str, list[float]],
    cand_samples: dict[str, list[float]],
    base: RunRecord,
    cand: RunRecord,
    alpha: float,
    min_effect: float,
    transform_offset: dict[str, float] | None = None,
) -> list[tuple[str, list[str], SampleComparison]]:
    """Compare per layer; pool identical layers of one role when a layer alone has too few samples.

    Many layers are tested at once, so each comparison runs at ``alpha / m``
    (Bonferroni over the ``m`` comparisons made): the chance that any layer of
    an unchanged run is flagged stays below ``alpha``, and the intervals hold
    simultaneously.
    """
    common = [name for name in cand_samples if name in base_samples and base_samples[name] and cand_samples[name]]
    offset = transform_offset or {}

    def values(samples: Sequence[float], name: str) -> list[float]:
        return _positive(v + offset.get(name, 0.0) for v in samples)

    # Which units to test: a layer alone when its samples can reach the family level, else its pooled role.
    family = alpha / max(len(common), 1)
    units: list[tuple[str, list[str]]] = []
    pending: list[str] = []
    for name in common:
        if enough_samples(len(base_samples[name]), len(cand_samples[name]), family):
            units.append((name, [name]))
        else:
            pending.append(name)
    for key, members in _pooled_groups(pending).items():
        if len(members) > 1 and _same_structure(members, base, cand):
            units.append((key, members))
        else:
            units.extend((name, [name]) for name in members)
    level = alpha / max(len(units), 1)
    out: list[tuple[str, list[str], SampleComparison]] = []
    for label, members in units:
        pooled_b = [v for m in members for v in values(base_samples[m], m)]
        pooled_c = [v for m in members for v in values(cand_samples[m], m)]
        out.append((label, members, compare_samples(pooled_b, pooled_c, alpha=level, min_effect=min_effect)))
    return out


def _kernel_stage(base: RunRecord, cand: RunRecord, lower: StageFinding, alpha: float, min_effect: float) -> StageFinding:
    b_kernel = {layer.name: layer for layer in base.kernel.layers}
    c_kernel = {layer.name: layer for layer in cand.kernel.layers}
    b_lower = {layer.name: layer for layer in base.lower.layers}
    c_lower = {layer.name: layer for layer in cand.lower.layers}
    c_graph = {layer.name: layer for layer in cand.graph.layers}
    lowered_wrong = {f.layer for f in lower.layers if f.regression}
    findings: list[LayerFinding] = []
    undecided: list[str] = []
    comparisons = _compare_layers(
        {n: k.samples_ms for n, k in b_kernel.items()}, {n: k.samples_ms for n, k in c_kernel.items()}, base, cand, alpha, min_effect
    )
    for label, members, comp in comparisons:
        if not comp.enough_samples:
            if comp.ratio >= min_effect or comp.ratio <= 1 / min_effect:
                undecided.append(f"{label} {_fmt_cmp(comp)} ({comp.n_base} vs {comp.n_cand} samples)")
            continue
        if comp.direction == "same":
            continue
        path_changed = any(
            m in b_lower and m in c_lower and b_lower[m].path is KernelPath.DENSE and c_lower[m].path is KernelPath.SPARSE for m in members
        )
        explained = [m for m in members if m in lowered_wrong]
        delta = sum(
            median(c_kernel[m].samples_ms) * _calls_per_iteration(c_kernel[m].samples_ms, _iterations(cand))
            - median(b_kernel[m].samples_ms) * _calls_per_iteration(b_kernel[m].samples_ms, _iterations(base))
            for m in members
        )
        if comp.direction == "slower":
            if explained:
                detail = f"slower {_fmt_cmp(comp)}; follows from lowering ({', '.join(explained)})"
            elif path_changed:
                detail = f"sparse path slower than the dense baseline {_fmt_cmp(comp)}"
            else:
                detail = f"kernel time slower {_fmt_cmp(comp)}"
            if not comp.persistent:
                detail += f" - not persistent ({comp.reason})"
            findings.append(
                LayerFinding(
                    stage="kernel", layer=label, members=members if len(members) > 1 else [], kind="slower",
                    regression=comp.persistent, detail=detail, comparison=comp, delta_ms=delta,
                )
            )
        else:
            detail = f"faster {_fmt_cmp(comp)}" + (" (sparse path, as intended)" if path_changed else "")
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
        busy = compare_samples(_positive(base.schedule.busy_samples_ms), _positive(cand.schedule.busy_samples_ms), alpha=alpha, min_effect=min_effect)
        metrics.append(MetricFinding(metric="busy_ms", comparison=busy, note="summed kernel/layer time per iteration"))
    added = sorted(c_kernel.keys() - b_kernel.keys())
    removed = sorted(b_kernel.keys() - c_kernel.keys())
    status = _status(findings, metrics)
    if status == "same" and undecided:
        status = "undecided"
    slow = [f for f in findings if f.regression]
    fast = [f for f in findings if f.kind == "faster"]
    parts = []
    if slow:
        parts.append("slower: " + ", ".join(f"{f.layer} {_fmt_cmp(f.comparison)}" if f.comparison else f"{f.layer} ({f.detail})" for f in slow[:5]))
    if fast:
        parts.append("faster: " + ", ".join(f"{f.layer} {_fmt_cmp(f.comparison)}" for f in fast[:5] if f.comparison))
    if metrics:
        m = metrics[0].comparison
        parts.append(f"busy per iteration {_fmt_cmp(m)}" + ("" if m.enough_samples else f" ({m.n_base} vs {m.n_cand} iterations: too few to test alone)"))
    if undecided and not slow:
        parts.append("too few samples for: " + "; ".join(undecided[:4]))
    if added or removed:
        parts.append(f"{len(added)} kernel entr(ies) only in the candidate, {len(removed)} only in the baseline")
    return StageFinding(stage="kernel", status=status, summary="; ".join(parts) or "no significant per-layer change", metrics=metrics, layers=findings)


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


def _schedule_stage(base: RunRecord, cand: RunRecord, alpha: float, min_effect: float) -> StageFinding:
    metrics: list[MetricFinding] = []
    b_sched, c_sched = base.schedule, cand.schedule
    if b_sched.span_samples_ms and c_sched.span_samples_ms and len(b_sched.span_samples_ms) == len(b_sched.busy_samples_ms) and len(c_sched.span_samples_ms) == len(c_sched.busy_samples_ms):
        ref_busy = median(b_sched.busy_samples_ms) if b_sched.busy_samples_ms else 0.0
        b_over = [s - k + ref_busy for s, k in zip(b_sched.span_samples_ms, b_sched.busy_samples_ms, strict=True)]
        c_over = [s - k + ref_busy for s, k in zip(c_sched.span_samples_ms, c_sched.busy_samples_ms, strict=True)]
        comp = compare_samples(_positive(b_over), _positive(c_over), alpha=alpha, min_effect=min_effect)
        b_med = median([s - k for s, k in zip(b_sched.span_samples_ms, b_sched.busy_samples_ms, strict=True)])
        c_med = median([s - k for s, k in zip(c_sched.span_samples_ms, c_sched.busy_samples_ms, strict=True)])
        metrics.append(
            MetricFinding(
                metric="overhead_ms",
                comparison=comp,
                note=f"span - busy per iteration, p50 {b_med:.3f} -> {c_med:.3f} ms; ratio is of the latency with the baseline's kernel time",
            )
        )
    findings: list[LayerFinding] = []
    material_ms = 0.0
    if b_sched.layer_idle_samples_ms and c_sched.layer_idle_samples_ms:
        b_kernel = {layer.name: median(layer.samples_ms) for layer in base.kernel.layers if layer.samples_ms}
        offsets = {name: b_kernel.get(name, 0.0) for name in c_sched.layer_idle_samples_ms}
        for label, members, comp in _compare_layers(b_sched.layer_idle_samples_ms, c_sched.layer_idle_samples_ms, base, cand, alpha, min_effect, offsets):
            if not comp.enough_samples or comp.direction == "same":
                continue
            delta = sum(
                (median(c_sched.layer_idle_samples_ms[m]) - median(b_sched.layer_idle_samples_ms[m])) * _calls_per_iteration(c_sched.layer_idle_samples_ms[m], _iterations(cand))
                for m in members
            )
            grew = comp.direction == "slower"
            if grew and comp.persistent:
                material_ms += delta
            findings.append(
                LayerFinding(
                    stage="schedule", layer=label, members=members if len(members) > 1 else [],
                    kind="idle_grew" if grew else "idle_shrank", regression=False, delta_ms=delta,
                    detail=(
                        f"device idle before each call {'grew' if grew else 'shrank'} by {abs(delta) / max(len(members), 1):.3f} ms per layer per iteration "
                        f"(per-call wall {_fmt_cmp(comp)})" + ("" if comp.persistent else f" - not persistent ({comp.reason})")
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
    status = _status(findings, metrics if not decided_by_layers else [])
    if status == "same" and headline is not None and _undecided_regression(headline):
        status = "undecided"
    parts = []
    if headline is not None:
        parts.append(f"overhead {metrics[0].note.split(';')[0]} ({_fmt_cmp(headline)} of latency)")
        if not headline.enough_samples:
            parts.append(f"{headline.n_base} vs {headline.n_cand} iterations: too few to test per iteration")
    if b_sched.host_wait_ms is not None and c_sched.host_wait_ms is not None:
        parts.append(
            f"host wait {b_sched.host_wait_ms / _iterations(base):.3f} -> {c_sched.host_wait_ms / _iterations(cand):.3f} ms per iteration"
        )
    waiting = [f for f in findings if f.regression]
    if waiting:
        parts.append(
            f"the device waits before {sum(max(len(f.members), 1) for f in waiting)} layer(s) "
            f"({', '.join(f.layer for f in waiting[:4])}): +{material_ms:.3f} ms idle per iteration"
        )
    if b_sched.threads != c_sched.threads and b_sched.threads is not None and c_sched.threads is not None:
        parts.append(f"threads {b_sched.threads} -> {c_sched.threads}")
    return StageFinding(stage="schedule", status=status, summary="; ".join(parts) or "no schedule samples", metrics=metrics, layers=findings)


def _outcome_stage(base: RunRecord, cand: RunRecord, alpha: float, min_effect: float, min_cosine: float | None) -> StageFinding:
    metrics: list[MetricFinding] = []
    findings: list[LayerFinding] = []
    parts: list[str] = []
    b_out, c_out = base.outcome, cand.outcome
    if b_out.latency_samples_ms and c_out.latency_samples_ms:
        comp = compare_samples(_positive(b_out.latency_samples_ms), _positive(c_out.latency_samples_ms), alpha=alpha, min_effect=min_effect)
        metrics.append(MetricFinding(metric="latency_ms", comparison=comp, note="whole-forward latency"))
        word = {"slower": "slower", "faster": "faster", "same": "latency"}[comp.direction]
        text = f"{word} {_fmt_cmp(comp)}: p50 {comp.base_median:.3f} -> {comp.cand_median:.3f} ms"
        if not comp.enough_samples:
            text += f" ({comp.n_base} vs {comp.n_cand} iterations: too few samples for a rank test)"
        elif comp.direction == "same":
            text += f" ({comp.reason})"
        parts.append(text)
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
    status = _status(findings, metrics)
    return StageFinding(stage="outcome", status=status, summary="; ".join(parts) or "no outcome samples", metrics=metrics, layers=findings)


# --------------------------------------------------------------------------- ranking and verdict


def _rank_layers(base: RunRecord, cand: RunRecord, involved: set[str], outcome_delta: float | None) -> list[RankedLayer]:
    b_kernel = {layer.name: layer.samples_ms for layer in base.kernel.layers if layer.samples_ms}
    c_kernel = {layer.name: layer.samples_ms for layer in cand.kernel.layers if layer.samples_ms}
    b_idle, c_idle = base.schedule.layer_idle_samples_ms, cand.schedule.layer_idle_samples_ms
    bi, ci = _iterations(base), _iterations(cand)

    def per_iteration(samples: dict[str, list[float]], name: str, iterations: int) -> float:
        values = samples.get(name)
        if not values:
            return 0.0
        return median(values) * _calls_per_iteration(values, iterations)

    def conversion_per_iteration(run: RunRecord, idle: dict[str, list[float]], name: str, iterations: int) -> float:
        # A per-call conversion sits both in the layer's kernel samples and in the
        # host gap before its compute: count it once, in the kernel time.
        lower = next((lo for lo in run.lower.layers if lo.name == name), None)
        if lower is None or not lower.conversions_per_call or lower.conversion_ms is None or not idle.get(name):
            return 0.0
        return lower.conversion_ms * lower.conversions_per_call * _calls_per_iteration(idle[name], iterations)

    ranked = []
    for name in list(dict.fromkeys([*c_kernel, *b_kernel, *c_idle, *b_idle])):
        kernel = per_iteration(c_kernel, name, ci) - per_iteration(b_kernel, name, bi)
        idle = (
            (per_iteration(c_idle, name, ci) - conversion_per_iteration(cand, c_idle, name, ci))
            - (per_iteration(b_idle, name, bi) - conversion_per_iteration(base, b_idle, name, bi))
            if (b_idle and c_idle)
            else 0.0
        )
        total = kernel + idle
        share = total / outcome_delta if outcome_delta else None
        ranked.append(
            RankedLayer(
                layer=name, contribution_ms=total, kernel_ms=kernel, idle_ms=idle, share=share,
                involved=name in involved or group_key(name) in involved,
            )
        )
    sign = 1.0 if (outcome_delta or 0.0) >= 0 else -1.0
    ranked.sort(key=lambda r: (not r.involved, -sign * r.contribution_ms))
    return ranked


def bisect_runs(
    base: RunRecord,
    cand: RunRecord,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_cosine: float | None = None,
) -> BisectResult:
    """Walk the five stages of ``base`` and ``cand`` and name the first persistent divergence.

    ``alpha`` and ``min_effect`` are passed to every sample comparison;
    ``min_cosine`` is an optional quality guardrail on the candidate's output
    cosine. Returns a ``BisectResult`` whose ``state`` is ``divergence`` (with
    ``first_stage``), ``no_regression`` or ``undecided`` (too few samples where
    it mattered).
    """
    graph = _graph_stage(base, cand)
    lower = _lower_stage(base, cand)
    kernel = _kernel_stage(base, cand, lower, alpha, min_effect)
    schedule = _schedule_stage(base, cand, alpha, min_effect)
    outcome = _outcome_stage(base, cand, alpha, min_effect, min_cosine)
    stages = [graph, lower, kernel, schedule, outcome]
    assert [s.stage for s in stages] == list(STAGES)

    outcome_cmp = outcome.headline.comparison if outcome.headline else None
    outcome_delta = (outcome_cmp.cand_median - outcome_cmp.base_median) if outcome_cmp else None
    first = next((s for s in stages if s.status == "divergent"), None)
    involved: set[str] = set()
    if first is not None:
        for f in first.layers:
            if f.regression:
                involved.add(f.layer)
                involved.update(f.members)
    ranked = _rank_layers(base, cand, involved, outcome_delta)

    explains: list[str] = []
    accounted: float | None = None
    effect_metric: str | None = None
    effect: SampleComparison | None = None
    if first is not None:
        index = STAGES.index(first.stage)
        for later in stages[index + 1 :]:
            head = later.headline.comparison if later.headline else None
            if later.status == "divergent" or (head is not None and _undecided_regression(head)):
                explains.append(later.stage)
        if outcome_delta:
            accounted = sum(r.contribution_ms for r in ranked if r.involved) / outcome_delta
        if first.headline is not None and first.headline.comparison.enough_samples:
            effect_metric, effect = first.headline.metric, first.headline.comparison
        else:
            grouped = sorted(
                (f for f in first.layers if f.regression and f.comparison is not None), key=lambda f: -abs(f.delta_ms or 0.0)
            )
            if grouped and grouped[0].comparison is not None:
                effect_metric, effect = f"{first.stage}:{grouped[0].layer}", grouped[0].comparison
            elif outcome_cmp is not None:
                effect_metric, effect = "latency_ms", outcome_cmp

    undecided = [s for s in stages if s.status == "undecided"]
    state: BisectState
    if first is not None:
        state = "divergence"
        verdict = f"first persistent divergence: {first.stage}: {first.summary}"
        before = [s.stage for s in undecided if STAGES.index(s.stage) < STAGES.index(first.stage)]
        if before:
            verdict += f" (earlier stage(s) {', '.join(before)} undecided: too few samples)"
        if explains:
            verdict += f"; explains {', '.join(explains)}"
        if accounted is not None and outcome_cmp is not None:
            if (outcome_cmp.direction != "same" or not outcome_cmp.enough_samples) and -0.5 <= accounted <= 1.5:
                verdict += f"; its layers carry {accounted:.0%} of the {outcome_delta:+.3f} ms outcome change"
            elif outcome_cmp.direction != "same" or not outcome_cmp.enough_samples:
                verdict += (
                    f"; its layers' per-layer changes sum to {accounted:.1f}x the {outcome_delta:+.3f} ms outcome change "
                    "(per-layer timings overlap: isolated layer timings and idle time count some work twice)"
                )
            else:
                verdict += f"; the outcome itself did not change significantly ({outcome_cmp.reason})"
    elif undecided:
        state = "undecided"
        verdict = "undecided: too few samples: " + "; ".join(f"{s.stage}: {s.summary}" for s in undecided)
    else:
        state = "no_regression"
        verdict = "no regression: no stage diverged beyond declared intent and noise"
        improved = [s.stage for s in stages if s.status == "improved"]
        if outcome_cmp is not None and (outcome_cmp.direction == "faster" or _undecided_improvement(outcome_cmp)):
            verdict += f"; outcome improved x{1 / outcome_cmp.ratio:.3f} faster (p50 {outcome_cmp.base_median:.3f} -> {outcome_cmp.cand_median:.3f} ms"
            verdict += ")" if outcome_cmp.enough_samples else f"; {outcome_cmp.n_base} vs {outcome_cmp.n_cand} iterations, too few for a rank test alone)"
        if improved:
            verdict += f"; improved: {', '.join(improved)}"
    return BisectResult(
        base=base.name,
        cand=cand.name,
        state=state,
        first_stage=first.stage if first is not None else None,
        stages=stages,
        layers=ranked,
        effect_metric=effect_metric,
        effect=effect,
        outcome=outcome_cmp,
        outcome_delta_ms=outcome_delta,
        explains=explains,
        accounted_share=accounted,
        verdict=verdict,
    )
