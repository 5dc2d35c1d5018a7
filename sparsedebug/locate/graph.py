"""The ``graph`` stage (categorical): does the layer inventory differ beyond declared intent?

A layer added or removed, or its op or shapes changed, or the token count changed, is a
divergence. A layer whose declared sparsity or dtype changed is the candidate's declared
intent, not a divergence: its consequences show in ``lower``. Traces without layer
annotations (layers are kernel names) are not compared here.
"""

from __future__ import annotations

from sparsedebug.core.patterns import kernel_named, layout_op
from sparsedebug.records.findings import LayerFinding, StageFinding, StageStatus
from sparsedebug.records.run import RunRecord

# Structural fields: a change is a graph divergence. dtype and declared sparsity are the candidate's declared intent.
_SHAPE_FIELDS = ("op", "weight_shape", "input_shape", "output_shape")


_LAYOUT_NOTE = "layout/view op {} the candidate: part of a neighbouring layer's lowering, not a model graph change"


def graph_stage(base: RunRecord, cand: RunRecord) -> StageFinding:
    """Compare the layer inventories of ``base`` and ``cand``; declared intent is ``expected``, not divergent."""
    if kernel_named(base) or kernel_named(cand):
        return StageFinding(
            stage="graph",
            status="not_comparable",
            summary="no layer annotations in at least one run (layers are kernel names): graph inventory not compared",
        )
    b = {layer.name: layer for layer in base.graph.layers}
    c = {layer.name: layer for layer in cand.graph.layers}
    findings: list[LayerFinding] = []
    for name in sorted(b.keys() - c.keys()):
        if layout_op(name):
            findings.append(LayerFinding(stage="graph", layer=name, kind="layout", regression=False, detail=_LAYOUT_NOTE.format("removed from")))
        else:
            findings.append(LayerFinding(stage="graph", layer=name, kind="removed", regression=True, detail=f"{b[name].op.value} layer missing from the candidate"))
    for name in sorted(c.keys() - b.keys()):
        if layout_op(name):
            findings.append(LayerFinding(stage="graph", layer=name, kind="layout", regression=False, detail=_LAYOUT_NOTE.format("inserted in")))
        else:
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
        summary = f"same layer inventory ({len([n for n in b if not layout_op(n)])} layers)"
    layout = [f.layer for f in findings if f.kind == "layout"]
    if layout and not regressions:
        summary += f"; {len(layout)} layout/view op(s) differ ({', '.join(layout[:4])}{', ...' if len(layout) > 4 else ''}): lowering, see lower"
    if base.graph.model_revision != cand.graph.model_revision and base.graph.model_revision and cand.graph.model_revision:
        summary += f"; model revision {base.graph.model_revision} -> {cand.graph.model_revision}"
    return StageFinding(stage="graph", status=status, summary=summary, layers=findings)
