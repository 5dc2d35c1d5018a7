"""The memo's first divergent stage as a claim: the stage, the effect size the bisect measured (named by what it
compares, with the samples its test ran on), each finding kind with its reasons, backends, causes and layers."""

from __future__ import annotations

from sparsedebug.records.basis import Basis
from sparsedebug.records.findings import group_label
from sparsedebug.records.memo import EXPLAINS_MIN_SHARE, Claim
from sparsedebug.signoff.memo_engine import fig as _fig
from sparsedebug.signoff.memo_results import layer_set
from sparsedebug.signoff.metrics import speedup_basis
from sparsedebug.sources.bundle import FILES, LoadedBundle


def first_stage_claim(b: LoadedBundle) -> Claim:
    """The first persistent divergent stage of the bundle's bisect, with its figures (none located: a claim saying so)."""
    bis = b.bisect
    if bis is None:
        return Claim(kind="first_stage", code="not_located")
    if bis.first_stage is None:
        return Claim(kind="first_stage", code=bis.state)
    stage = bis.stage(bis.first_stage)
    regress = [f for f in stage.layers if f.regression]
    kinds = sorted({f.kind for f in regress})
    figures = []
    labels = {f.layer: f.label for f in stage.layers}
    effect_terms: dict[str, str] = {}
    if bis.effect is not None:
        quantity, basis, effect_terms = effect_kind(bis.effect_metric, labels)
        basis = speedup_basis(b.baseline, b.candidate) if quantity == "latency_ratio" else basis  # paired when replayed together
        figures.append(_fig(quantity, bis.effect.ratio, "ratio", FILES["bisect"], "effect.ratio", role=bis.first_stage, basis=basis,
                            layer=effect_terms.get("effect_layer")))
        if bis.effect.p_value is not None:
            figures.append(_fig("effect_p", bis.effect.p_value, "p", FILES["bisect"], "effect.p_value", role=bis.first_stage))
            # the samples the test ran on: per call of a layer group, per forward or round, per iteration (a p-value's weight)
            figures += [_fig("effect_samples", bis.effect.n_base, "count", FILES["bisect"], "effect.n_base", role="baseline", basis=basis),
                        _fig("effect_samples", bis.effect.n_cand, "count", FILES["bisect"], "effect.n_cand", role="candidate", basis=basis)]
            forwards = len(b.candidate.outcome.latency_samples_ms)
            if basis == "per_call" and 0 < forwards < bis.effect.n_cand:  # calls of one forward share its conditions
                figures.append(_fig("effect_forwards", forwards, "count", FILES["candidate"], "outcome.latency_samples_ms (count)",
                                    role="candidate", basis="per_forward"))
    if bis.accounted_share is not None:
        figures.append(_fig("accounted_share", bis.accounted_share, "share", FILES["bisect"], "accounted_share", role=bis.first_stage))
    terms = {"stage": bis.first_stage, "state": bis.state, "kinds": ",".join(kinds), **effect_terms}
    for kind in kinds:  # each kind's own reasons and layers: a fallback's reason is not a converted layer's
        reasons = sorted({f.reason for f in regress if f.kind == kind and f.reason})
        if reasons:
            terms[f"reasons.{kind}"] = ",".join(reasons)
        paths = sorted({f"{f.base_backend}->{f.cand_backend}" for f in regress
                        if f.kind == kind and f.base_backend and f.cand_backend and f.base_backend != f.cand_backend})
        causes = sorted({f"{c.code}:{c.tensor or ''}" for f in regress if f.kind == kind for c in f.cause})
        if paths:  # a path change from which backend to which, and what the dispatcher saw differently
            terms[f"paths.{kind}"] = ",".join(paths)
        if causes:
            terms[f"causes.{kind}"] = ",".join(causes)
        of_kind = list(dict.fromkeys(m for f in regress if f.kind == kind for m in (f.members or [f.layer])))  # pooled: each member
        terms[f"layers.{kind}"] = "|".join(layer_set(of_kind))
        figures.append(_fig("kind_layers", len(of_kind), "count", FILES["bisect"], f"stages[{bis.first_stage}].layers ({kind})", role=kind))
    covered = bis.accounted_share is not None and bis.accounted_share >= EXPLAINS_MIN_SHARE
    if bis.explains and covered:
        terms["explains"] = ",".join(bis.explains)
    names = [labels[f.layer] for f in regress]
    if names:  # the layers the findings cover (a pooled group counts each member), as the stage's own facts count them
        figures.append(_fig("layers_named", sum(max(len(f.members), 1) for f in regress), "count", FILES["bisect"],
                            f"stages[{bis.first_stage}].layers[].members", role=bis.first_stage))
    return Claim(kind="first_stage", code="divergence", figures=figures, terms=terms, items=names[:3], more=max(0, len(names) - 3))


def effect_kind(metric: str | None, labels: dict[str, str]) -> tuple[str, Basis, dict[str, str]]:
    """What the bisect's effect size (``BisectResult.effect``) measures, from its metric: a layer group's per-call time
    (``stage:group``), the forward's latency, or a stage metric per iteration; and the terms that name it."""
    if metric is not None and ":" in metric:
        stage, layer = metric.split(":", 1)
        return "layer_effect_ratio", "per_call", {"effect_layer": labels.get(layer, group_label(layer, [])), "effect_stage": stage}
    if metric in (None, "latency_ms"):
        return "latency_ratio", "per_forward", {}
    return "metric_ratio", "per_iteration", {"effect_metric": metric}
