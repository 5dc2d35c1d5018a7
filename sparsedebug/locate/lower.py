"""The ``lower`` stage (categorical): did any layer take a path its declared intent does not explain?

Per layer, matched by name: a layer declared sparse that runs dense (a *fallback*, with
its reason), a layer not declared sparse whose path changed (dense/sparse, its dominant
kernel class, or the set of kernel classes it runs: a neighbour pushed onto another,
often fp32, path), or a sparse layer that now re-converts its weights on every call.
The predicates are the shared ones of :mod:`sparsedebug.core.patterns`, so ``fallbacks``,
classify and the gate agree with this stage. Traces without layer annotations are
compared by the kernel classes they use instead.
"""

from __future__ import annotations

from collections import defaultdict

from sparsedebug.core.dispatch import dispatch_causes
from sparsedebug.core.patterns import declared_sparse, fell_back, kernel_classes, kernel_named, layout_op, path_changed, path_text
from sparsedebug.records.engine import NotSparse, SparseUse
from sparsedebug.records.findings import LayerFinding, StageFinding, StageStatus
from sparsedebug.records.notes import Note, embed, note
from sparsedebug.records.run import KernelClass, KernelPath, LowerLayer, RunRecord, cause_values


def lower_stage(base: RunRecord, cand: RunRecord) -> StageFinding:
    """Compare the lowering of ``cand`` with ``base`` layer by layer (by kernel class when layers are kernel names)."""
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
            reason = cl.reason.value if cl.reason is not None else None
            # the lowering's own detail: a coded note, its code and values carried flat ("detail." keys)
            why = embed("detail", cl.detail)
            findings.append(
                LayerFinding(
                    stage="lower", layer=name, kind="fallback", regression=True, reason=reason or "no reason recorded",
                    facts=note("locate.finding.fallback", intent=str(graph[name].intended), reason=reason, **why),
                )
            )
        elif bl is not None and not declared and path_changed(bl, cl):
            before, after = _path_pair(bl, cl)
            b_backend, c_backend = bl.dispatch.backend if bl.dispatch else None, cl.dispatch.backend if cl.dispatch else None
            cause = dispatch_causes(bl.dispatch, cl.dispatch)
            change = note(
                "locate.finding.path_changed", before=before, after=after, **cause_values(cause),
                op="attention" if cl.dispatch is not None and "attention" in cl.dispatch.op else "GEMM",
                backend_before=b_backend if b_backend != c_backend else None, backend_after=c_backend if b_backend != c_backend else None,
            )
            findings.append(LayerFinding(stage="lower", layer=name, kind="path_changed", regression=True, facts=change,
                                         base_backend=b_backend, cand_backend=c_backend, cause=cause))
        elif declared and cl.path is KernelPath.SPARSE and (bl is None or bl.path is KernelPath.DENSE):
            findings.append(
                LayerFinding(stage="lower", layer=name, kind="intended", regression=False, intended=True,
                             facts=note("locate.finding.sparse_as_declared", path=path_text(cl)))
            )
        base_conversions = bl.conversions_per_call if bl is not None else 0
        if cl.conversions_per_call > base_conversions:
            findings.append(
                LayerFinding(
                    stage="lower", layer=name, kind="per_call_conversion", regression=True,
                    facts=note("locate.finding.per_call_conversion", count=cl.conversions_per_call, base=base_conversions, each_ms=cl.conversion_ms),
                )
            )
    findings += _layout_copies(b, c)
    findings.sort(key=lambda f: (not f.regression, _LOWER_ORDER.index(f.kind) if f.kind in _LOWER_ORDER else len(_LOWER_ORDER), f.layer))
    regressions = [f for f in findings if f.regression]
    intended = [f for f in findings if f.intended]
    status: StageStatus = "divergent" if regressions else ("expected" if intended else "same")
    facts: list[Note] = []
    if regressions:
        by_kind: dict[str, list[LayerFinding]] = defaultdict(list)
        for f in regressions:
            by_kind[f.kind].append(f)
        for kind, items in by_kind.items():
            if kind == "fallback":
                facts.append(note("locate.lower.fallback", layers=[f.layer for f in items], reasons=[f.reason or "" for f in items]))
            elif kind == "path_changed":
                facts.append(note("locate.lower.path_changed", layers=[f.layer for f in items]))  # each layer's change: its finding
            else:
                facts.append(note("locate.lower.kind", kind=kind, count=len(items), layers=[f.layer for f in items[:3]]))
    elif intended:
        facts.append(note("locate.lower.intended", count=len(intended)))
    else:
        facts.append(note("locate.lower.same"))
    if base.lower.backend != cand.lower.backend:
        facts.append(note("locate.lower.backend", before=base.lower.backend, after=cand.lower.backend))
    inserted = sorted(name for name in c.keys() ^ b.keys() if layout_op(name))
    if inserted:
        facts.append(note("locate.lower.layout", count=len(inserted), layers=inserted[:4], more=len(inserted) > 4))
    return StageFinding(stage="lower", status=status, facts=facts, layers=findings)


def _path_pair(before: LowerLayer, after: LowerLayer) -> tuple[str, str]:
    """``dense/attention`` and ``dense/fp32_gemm``; with the kernel classes run when path and dominant class are the same."""
    b, a = path_text(before), path_text(after)
    if b == a and kernel_classes(before) != kernel_classes(after):
        b += f" [{', '.join(kernel_classes(before))}]"
        a += f" [{', '.join(kernel_classes(after))}]"
    return b, a


def _layout_copies(base: dict[str, LowerLayer], cand: dict[str, LowerLayer]) -> list[LayerFinding]:
    """Layout ops that run copy kernels in the candidate alone (a ``.contiguous()`` before a neighbour, found as its own
    layer where no annotation wraps it): the neighbour's lowering gained copies, the same change an annotated trace
    shows as copy kernels inside that neighbour's path."""
    copy = KernelClass.COPY.value
    added = sorted(name for name in cand.keys() - base.keys() if layout_op(name) and copy in kernel_classes(cand[name]))
    return [LayerFinding(stage="lower", layer=name, kind="layout_copies", regression=True,
                         facts=note("locate.finding.layout_copies", kernels=[k[:60] for k in cand[name].kernels[:2]])) for name in added]


# Order of the finding kinds within the stage (after regressions first).
_LOWER_ORDER = ("fallback", "path_changed", "layout_copies", "per_call_conversion", "intended")


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
            findings.append(LayerFinding(stage="lower", layer=cls.value, members=names, kind="intended", regression=False, intended=True,
                                         facts=note("locate.finding.sparse_gemms", count=len(names))))
        else:
            findings.append(LayerFinding(stage="lower", layer=cls.value, members=names, kind="new_kernel_class", regression=True,
                                         facts=note("locate.finding.new_kernel_class", kernel_class=cls.value, kernels=[n[:60] for n in names[:3]])))
    regressions = [f for f in findings if f.regression]
    intended = [f for f in findings if f.intended]
    status: StageStatus = "divergent" if regressions else ("expected" if intended else "same")
    facts = [note("locate.lower.by_class", new=[f.layer for f in regressions], sparse_only=bool(intended) and not regressions)]
    facts += [f.facts for f in regressions]
    return StageFinding(stage="lower", status=status, facts=facts, layers=findings)


def sparse_use(run: RunRecord) -> SparseUse | None:
    """The sparse-kernel facts of an imported engine (None for a run without engine facts)."""
    layers = [(layer.name, layer.path, layer.engine) for layer in run.lower.layers if layer.engine is not None]
    if not layers:
        return None
    weighted = [(name, path, e) for name, path, e in layers if e.weights]
    engine = run.source.engine
    return SparseUse(
        run=run.name,
        weighted=len(weighted),
        sparse_weights=[name for name, _, e in weighted if e.sparse_weights or e.eligible],
        sparse=[name for name, path, _ in weighted if path is KernelPath.SPARSE],
        not_picked=[name for name, _, e in weighted if e.not_sparse is NotSparse.NOT_PICKED],
        build_disabled=any(e.not_sparse is NotSparse.BUILD_DISABLED for _, _, e in weighted),
        enable_flags=list(engine.enable_flags) if engine is not None else [],
    )
