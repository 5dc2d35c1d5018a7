"""Precision: a path changed dtype or accumulation, numeric error grew, or a quality guardrail broke.

Each rule sits on the metric it reads; all five share one fix recipe: run the changed
layers in the baseline's precision (fp32 when none is known) and check the error recovers.
What a layer computes in, and whether it changed, is decided by ``core.patterns``
(``layer_precisions``, ``precision_changes``), the same list the sign-off gate reads.
"""

from __future__ import annotations

import math
from typing import Literal, cast

from sparsedebug.classify.context import CAPTURE_BASELINE, Capture, Context, Fact, Facts, Missing, Result, capture
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.dispatch import FIX_ACTION
from sparsedebug.core.dtypes import canonical_dtype, mantissa_bits, unit_roundoff
from sparsedebug.core.patterns import layer_precisions, precision_changes
from sparsedebug.records.classification import Fix, FixTarget, Mechanism
from sparsedebug.records.notes import note
from sparsedebug.records.run import DispatchCause, RunRecord, cause_values

PRECISION = RuleSet(Mechanism.PRECISION)

# Unit roundoff of fp32 accumulation (2**-24; fp32 is always in the dtype table).
_U_FP32 = cast(float, unit_roundoff("fp32"))


# --------------------------------------------------------------------------- fixes


def knob_precision(name: str | None) -> str:
    """The workload ``precision`` knob value for a format: fp32, fp16 or bf16 (fp32 for anything else)."""
    canon = canonical_dtype(name)
    return canon if canon in {"fp32", "fp16", "bf16"} else "fp32"


def precision_fix(rule: Rule, facts: Facts) -> Fix:
    """Run in the precision the changed layers had in the baseline (fp32 when unknown), naming the layer.

    The layer is the changed one when the dtype-change rule won, else the one with the largest error.
    """
    restore = facts.data("precision_change_count").get("restore")
    changed = facts.data("precision_change_count").get("layer")
    worst = facts.data("rel_err_growth").get("layer") or facts.data("rel_err_over_bound").get("layer")
    value = knob_precision(restore if isinstance(restore, str) else "fp32")
    named_layer: str | None = None
    role: Literal["changed", "largest_error"] | None = None
    if rule.metric == "precision_change_count" and isinstance(changed, str):
        named_layer, role = changed, "changed"
    elif isinstance(worst, str):
        named_layer, role = worst, "largest_error"
    elif isinstance(changed, str):
        named_layer, role = changed, "changed"
    cause = facts.data("precision_change_count").get("cause")
    first = cause[0] if isinstance(cause, list) and cause and isinstance(cause[0], DispatchCause) else None
    if first is not None and isinstance(changed, str) and facts.ctx.imported:
        target = FixTarget(cause=first.code, layers=[changed], tensors=[first.tensor] if first.tensor else [], restore=first.was,
                           removes_ms=0.0)
        return Fix(kind="advice", layer=changed, rule=rule.id, metric="latency_p50_ms", direction="down",
                   code=FIX_ACTION[first.code], targets=[target])
    if facts.ctx.imported:
        return Fix(kind="advice", value=value, rule=rule.id, metric="max_rel_err", direction="down", code="keep_precision",
                   names_layer=named_layer, layer_role=role)
    return Fix(kind="knob", knob="precision", value=value, rule=rule.id, metric="max_rel_err", direction="down", code="set_precision",
               names_layer=named_layer, layer_role=role)


# --------------------------------------------------------------------------- rules and their metrics


@PRECISION.rule(
    "precision.dtype_change", ">", 0.0, "layers", 2.0,
    source=["graph.layers[].dtype", "kernel.layers[].precision", "lower.layers[].kernel_class", "baseline"],
    description="Layers whose precision (dtype or kernel precision) changed against the baseline, either way, "
    "or whose kernel path moved onto an fp32 GEMM.",
    suggest=precision_fix,
)
def precision_change_count(ctx: Context) -> Result:
    """Layers whose precision changed against the baseline, by label or by a move onto an fp32 path
    (``core.patterns.precision_changes``, the list the gate's ``precision_drift`` reads too)."""
    if ctx.baseline is None:
        return Missing(note("classify.no_baseline", compares="precision"), CAPTURE_BASELINE)
    found = precision_changes(ctx.baseline, ctx.run)
    labelled = [c for c in found if not c.by_path and c.before is not None]
    lowered = [c.before for c in labelled if c.before and (mantissa_bits(c.after) or 0) < (mantissa_bits(c.before) or 0)]
    # back to the widest format a layer was narrowed from; else the baseline's format of the first change
    # (a move onto an fp32 path restores the half-precision path it left)
    restore = max(lowered, key=lambda p: mantissa_bits(p) or 0) if lowered else next((c.before for c in found if c.before), None)
    data: dict[str, object] = {}
    if restore is not None:
        data["restore"] = restore
    first = found[0] if found else None
    if first is not None:
        data["layer"] = first.layer
        if first.cause:
            data["cause"] = list(first.cause)
    detail = note(
        "classify.precision_changes", layers=[c.layer for c in found], how=[c.how for c in found],
        cause_layer=first.layer if first is not None and first.cause else None,
        **cause_values(list(first.cause) if first is not None else []),
    )
    source = "graph.layers[].dtype, kernel.layers[].precision, lower.layers[] vs baseline"
    return Fact(float(len(found)), source, detail, context=data)


def finite(x: float) -> float | None:
    """``x`` as a note value: None when it is not a finite number (a note holds only finite figures)."""
    return x if math.isfinite(x) else None


def rel_errs(run: RunRecord) -> dict[str, float]:
    """Relative error vs the fp64 reference per layer, for the layers that measured it."""
    return {layer.name: layer.rel_err for layer in run.kernel.layers if layer.rel_err is not None}


@PRECISION.rule(
    "precision.error_growth", ">", 10.0, "ratio", 2.0,
    source=["kernel.layers[].rel_err", "baseline"],
    description="Numeric error against the fp64 reference grew by this factor against the baseline.",
    suggest=precision_fix,
)
def rel_err_growth(ctx: Context) -> Result:
    """The largest per-layer ratio of the candidate's error vs fp64 over the baseline's."""
    cand = rel_errs(ctx.run)
    if not cand:
        return Missing(note("classify.not_recorded", what="rel_err"), capture(Capture.REPLAY_ERROR))
    if ctx.baseline is None:
        return Missing(note("classify.no_baseline", compares="rel_err"), CAPTURE_BASELINE)
    base = rel_errs(ctx.baseline)
    common = [name for name in cand if name in base]
    if not common:
        return Missing(note("classify.not_recorded", what="rel_err", side="baseline"), capture(Capture.REPLAY_BASELINE))
    floor = _U_FP32 * _U_FP32
    ratios = {name: cand[name] / max(base[name], floor) for name in common}
    worst = max(ratios, key=lambda name: ratios[name])
    return Fact(
        ratios[worst],
        "kernel.layers[].rel_err vs baseline",
        note("classify.rel_err_growth", worst=worst, base_rel_err=finite(base[worst]), rel_err=finite(cand[worst]), layers=len(common)),
        context={"layer": worst},
    )


@PRECISION.rule(
    "precision.error_vs_roundoff", ">", 8.0, "ratio", 2.0,
    source=["kernel.layers[].rel_err", "kernel.layers[].precision", "graph.layers[].weight_shape"],
    description="Numeric error far beyond input rounding plus fp32 accumulation (accumulation in low precision, drift).",
    suggest=precision_fix, one_run=True,
)
def rel_err_over_bound(ctx: Context) -> Result:
    """The largest per-layer error vs fp64 over the bound of its input rounding plus fp32 accumulation over K."""
    errs = rel_errs(ctx.run)
    if not errs:
        return Missing(note("classify.not_recorded", what="rel_err"), capture(Capture.REPLAY_ERROR))
    precisions = layer_precisions(ctx.run)
    graph = ctx.graph()
    ratios: dict[str, tuple[float, float, str]] = {}
    for name, err in errs.items():
        prec = precisions.get(name)
        u_in = unit_roundoff(prec)
        layer = graph.get(name)
        k = layer.weight_shape[1] if layer is not None and layer.weight_shape and len(layer.weight_shape) == 2 else None
        if prec is None or u_in is None or k is None:
            continue
        bound = u_in + _U_FP32 * math.sqrt(k)
        ratios[name] = (err / bound, bound, prec)
    if not ratios:
        return Missing(note("classify.not_recorded", what="precision_or_k"), capture(Capture.REPLAY))
    worst = max(ratios, key=lambda name: ratios[name][0])
    ratio, bound, prec = ratios[worst]
    return Fact(
        ratio,
        "kernel.layers[].rel_err / (u_input + u_fp32*sqrt(K))",
        note("classify.rel_err_bound", worst=worst, rel_err=finite(errs[worst]), bound=finite(bound), precision=prec, accumulation="fp32"),
        context={"layer": worst},
    )


def intents(run: RunRecord) -> dict[str, str]:
    """The declared sparsity intent of each linear layer."""
    return {layer.name: layer.intended for layer in run.graph.layers if layer.op == "linear"}


@PRECISION.rule(
    "precision.quality_drop", ">", 0.01, "cosine", 2.0,
    source=["outcome.quality.cosine", "graph.layers[].intended", "baseline"],
    description="Output cosine vs the dense model fell against a baseline with the same sparsity intent.",
    suggest=precision_fix,
)
def quality_cosine_drop(ctx: Context) -> Result:
    """Baseline minus candidate output cosine vs dense; gated when the sparsity intent differs (pruning, not precision)."""
    cand_q = ctx.run.outcome.quality
    if cand_q is None:
        return Missing(note("classify.not_recorded", what="quality"), capture(Capture.REPLAY_QUALITY))
    if ctx.baseline is None:
        return Missing(note("classify.no_baseline", compares="quality"), CAPTURE_BASELINE)
    base_q = ctx.baseline.outcome.quality
    if base_q is None:
        return Missing(note("classify.not_recorded", what="quality", side="baseline"), capture(Capture.REPLAY_BASELINE))
    drop = base_q.cosine - cand_q.cosine
    detail = note("classify.cosine_drop", base_cosine=finite(base_q.cosine), cosine=finite(cand_q.cosine))
    if intents(ctx.run) != intents(ctx.baseline):
        return Fact(drop, "outcome.quality.cosine vs baseline", detail, gate=note("classify.intent_differs"))
    return Fact(drop, "outcome.quality.cosine vs baseline", detail)


@PRECISION.rule(
    "precision.guardrail", ">", 0.0, "verdicts", 1.0,
    source=["verdicts[].check", "verdicts[].status"],
    description="A quality guardrail verdict failed on the candidate.",
    suggest=precision_fix, one_run=True,
)
def quality_guardrail_failures(ctx: Context) -> Result:
    """Failed quality verdicts on the run."""
    quality = [v for v in ctx.run.verdicts if "quality" in v.check.lower()]
    if not quality:
        return Fact(None, "verdicts[]", note("classify.no_quality_verdict"))
    failed = [v for v in quality if v.status == "fail"]
    return Fact(float(len(failed)), "verdicts[] (quality)",
                note("classify.quality_verdicts", checks=[v.check for v in quality], status=[str(v.status) for v in quality]))
