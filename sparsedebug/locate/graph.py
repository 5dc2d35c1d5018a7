"""The ``graph`` stage (categorical): does the layer inventory differ beyond declared intent?

A layer added or removed, or its op or shapes changed, or the token count changed, is a
divergence. A layer whose declared sparsity or dtype changed is the candidate's declared
intent, not a divergence: its consequences show in ``lower``. Traces without layer
annotations (layers are kernel names) are not compared here.
"""

from __future__ import annotations

from sparsedebug.core.patterns import kernel_named, layout_op
from sparsedebug.records.findings import LayerFinding, StageFinding, StageStatus
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import RunRecord

# Structural fields: a change is a graph divergence. dtype and declared sparsity are the candidate's declared intent.
_SHAPE_FIELDS = ("op", "weight_shape", "input_shape", "output_shape")


def graph_stage(base: RunRecord, cand: RunRecord) -> StageFinding:
    """Compare the layer inventories of ``base`` and ``cand``; declared intent is ``expected``, not divergent."""
    if kernel_named(base) or kernel_named(cand):
        return StageFinding(stage="graph", status="not_comparable", facts=[note("locate.graph.not_annotated")])
    b = {layer.name: layer for layer in base.graph.layers}
    c = {layer.name: layer for layer in cand.graph.layers}
    findings: list[LayerFinding] = []
    for name in sorted(b.keys() - c.keys()):
        if layout_op(name):
            findings.append(LayerFinding(stage="graph", layer=name, kind="layout", regression=False, facts=note("locate.finding.layout", change="removed")))
        else:
            findings.append(LayerFinding(stage="graph", layer=name, kind="removed", regression=True, facts=note("locate.finding.removed", op=b[name].op.value)))
    for name in sorted(c.keys() - b.keys()):
        if layout_op(name):
            findings.append(LayerFinding(stage="graph", layer=name, kind="layout", regression=False, facts=note("locate.finding.layout", change="inserted")))
        else:
            findings.append(LayerFinding(stage="graph", layer=name, kind="added", regression=True, facts=note("locate.finding.added", op=c[name].op.value)))
    intended = 0
    for name in [n for n in b if n in c]:
        bl, cl = b[name], c[name]
        changed = [field for field in _SHAPE_FIELDS if getattr(bl, field) != getattr(cl, field)]
        if changed:
            findings.append(LayerFinding(
                stage="graph", layer=name, kind="changed", regression=True,
                facts=note("locate.finding.changed", fields=changed, before=[str(getattr(bl, f)) for f in changed],
                           after=[str(getattr(cl, f)) for f in changed]),
            ))
        elif bl.intended != cl.intended or bl.dtype != cl.dtype:
            intended += 1
            sparsity = bl.intended != cl.intended
            dtype = bl.dtype != cl.dtype
            findings.append(LayerFinding(
                stage="graph", layer=name, kind="intended", regression=False, intended=True,
                facts=note("locate.finding.declared",
                           sparsity_before=str(bl.intended) if sparsity else None, sparsity_after=str(cl.intended) if sparsity else None,
                           dtype_before=bl.dtype if dtype else None, dtype_after=cl.dtype if dtype else None),
            ))
    if base.graph.tokens is not None and cand.graph.tokens is not None and base.graph.tokens != cand.graph.tokens:
        findings.append(LayerFinding(
            stage="graph", layer="(tokens)", kind="changed", regression=True,
            facts=note("locate.finding.changed", fields=["tokens"], before=[str(base.graph.tokens)], after=[str(cand.graph.tokens)]),
        ))
    findings.sort(key=lambda f: (not f.regression, f.layer))
    regressions = [f for f in findings if f.regression]
    status: StageStatus = "divergent" if regressions else ("expected" if intended else "same")
    facts: list[Note] = []
    if regressions:
        facts.append(note("locate.graph.differ", count=len(regressions), layers=[f.layer for f in regressions[:5]], kinds=[f.kind for f in regressions[:5]]))
    elif intended:
        facts.append(note("locate.graph.intended", count=intended))
    else:
        facts.append(note("locate.graph.same", count=len([n for n in b if not layout_op(n)])))
    layout = [f.layer for f in findings if f.kind == "layout"]
    if layout and not regressions:
        facts.append(note("locate.graph.layout", count=len(layout), layers=layout[:4], more=len(layout) > 4))
    if base.graph.model_revision != cand.graph.model_revision and base.graph.model_revision and cand.graph.model_revision:
        facts.append(note("locate.graph.revision", before=base.graph.model_revision, after=cand.graph.model_revision))
    return StageFinding(stage="graph", status=status, facts=facts, layers=findings)
