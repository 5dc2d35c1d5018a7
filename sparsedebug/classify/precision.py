"""Precision: a path changed dtype or accumulation, numeric error grew, or a quality guardrail broke.

Each rule sits on the metric it reads; all five share one fix recipe: run the changed
layers in the baseline's precision (fp32 when none is known) and check the error recovers.
What a layer computes in, and whether it changed, is decided by ``core.patterns``
(``layer_precisions``, ``precision_changes``), the same list the sign-off gate reads.
"""

from __future__ import annotations

import math
from typing import cast

from sparsedebug.classify.context import CAPTURE_BASELINE, Context, Fact, Facts, Missing, Result
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.dispatch import fix_for
from sparsedebug.core.dtypes import canonical_dtype, mantissa_bits, unit_roundoff
from sparsedebug.core.patterns import layer_precisions, precision_changes
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.run import RunRecord

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
    if rule.metric == "precision_change_count" and isinstance(changed, str):
        where = f" (changed: {changed})"
    elif isinstance(worst, str):
        where = f" (largest error: {worst})"
    else:
        where = f" (changed: {changed})" if isinstance(changed, str) else ""
    cause = facts.data("precision_change_count").get("cause")
    named = fix_for(changed, cause) if isinstance(changed, str) and isinstance(cause, list) else None
    if named is not None and facts.ctx.imported:
        return Fix(kind="advice", layer=changed, rule=rule.id, metric="latency_p50_ms", direction="down", text=named)
    if facts.ctx.imported:
        return Fix(kind="advice", rule=rule.id, metric="max_rel_err", direction="down",
                   text=f"keep the changed layers in {value}{where} and compare outputs against the baseline")
    return Fix(kind="knob", knob="precision", value=value, rule=rule.id, metric="max_rel_err", direction="down", code="set_precision",
               text=f"run in {value}{where} and check the numeric error and quality recover")


# --------------------------------------------------------------------------- rules and their metrics


@PRECISION.rule(
    "precision.dtype_change", ">", 0.0, "layers", 2.0,
    source="graph.layers[].dtype, kernel.layers[].precision, lower kernel_class vs baseline",
    description="Layers whose precision (dtype or kernel precision) changed against the baseline, either way, "
    "or whose kernel path moved onto an fp32 GEMM.",
    fix="keep the changed layers in the baseline's precision",
    suggest=precision_fix,
)
def precision_change_count(ctx: Context) -> Result:
    """Layers whose precision changed against the baseline, by label or by a move onto an fp32 path
    (``core.patterns.precision_changes``, the list the gate's ``precision_drift`` reads too)."""
    if ctx.baseline is None:
        return Missing("no baseline: a dtype or kernel-path change cannot be judged", CAPTURE_BASELINE)
    found = precision_changes(ctx.baseline, ctx.run)
    labelled = [c for c in found if not c.by_path and c.before is not None]
    lowered = [c.before for c in labelled if c.before and (mantissa_bits(c.after) or 0) < (mantissa_bits(c.before) or 0)]
    # back to the widest format a layer was narrowed from; else the baseline's format of the first change
    # (a move onto an fp32 path restores the half-precision path it left)
    restore = max(lowered, key=lambda p: mantissa_bits(p) or 0) if lowered else next((c.before for c in found if c.before), None)
    lines = [f"{c.layer} {c.how}" for c in found]
    detail = "; ".join(lines[:6]) + (f"; +{len(lines) - 6} more" if len(lines) > 6 else "") if lines else (
        "no layer changed precision against the baseline, and none moved onto an fp32 GEMM path"
    )
    data: dict[str, object] = {}
    if restore is not None:
        data["restore"] = restore
    if found:
        first = found[0]
        data["layer"] = first.layer
        if first.cause:
            data["cause"] = list(first.cause)
            detail += f"; cause seen in the trace for {first.layer}: {'; '.join(first.cause)}"
    source = "graph.layers[].dtype, kernel.layers[].precision, lower.layers[] kernel class and dispatch vs baseline"
    return Fact(float(len(found)), source, detail, context=data)


def rel_errs(run: RunRecord) -> dict[str, float]:
    """Relative error vs the fp64 reference per layer, for the layers that measured it."""
    return {layer.name: layer.rel_err for layer in run.kernel.layers if layer.rel_err is not None}


@PRECISION.rule(
    "precision.error_growth", ">", 10.0, "ratio", 2.0,
    source="kernel.layers[].rel_err vs baseline's (same layer, both vs fp64 reference)",
    description="Numeric error against the fp64 reference grew by this factor against the baseline.",
    fix="keep the drifting layer in fp32 (or fp32 accumulation)",
    suggest=precision_fix,
)
def rel_err_growth(ctx: Context) -> Result:
    """The largest per-layer ratio of the candidate's error vs fp64 over the baseline's."""
    cand = rel_errs(ctx.run)
    if not cand:
        return Missing("no numeric error against an fp64 reference in the run", "replay the workload (it measures error vs fp64)")
    if ctx.baseline is None:
        return Missing("no baseline to compare numeric error with", CAPTURE_BASELINE)
    base = rel_errs(ctx.baseline)
    common = [name for name in cand if name in base]
    if not common:
        return Missing("baseline has no numeric error for the run's layers", "replay the baseline workload")
    floor = _U_FP32 * _U_FP32
    ratios = {name: cand[name] / max(base[name], floor) for name in common}
    worst = max(ratios, key=lambda name: ratios[name])
    return Fact(
        ratios[worst],
        "kernel.layers[].rel_err vs baseline",
        f"worst {worst}: rel err {base[worst]:.3g} -> {cand[worst]:.3g} over {len(common)} layers",
        context={"layer": worst},
    )


@PRECISION.rule(
    "precision.error_vs_roundoff", ">", 8.0, "ratio", 2.0,
    source="kernel.layers[].rel_err / (u_input + u_fp32 * sqrt(K)) for the layer's precision",
    description="Numeric error far beyond input rounding plus fp32 accumulation (accumulation in low precision, drift).",
    fix="accumulate in fp32, or keep the layer in fp32",
    suggest=precision_fix, one_run=True,
)
def rel_err_over_bound(ctx: Context) -> Result:
    """The largest per-layer error vs fp64 over the bound of its input rounding plus fp32 accumulation over K."""
    errs = rel_errs(ctx.run)
    if not errs:
        return Missing("no numeric error against an fp64 reference in the run", "replay the workload (it measures error vs fp64)")
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
        return Missing("layer precision or inner dimension unknown", "replay the workload")
    worst = max(ratios, key=lambda name: ratios[name][0])
    ratio, bound, prec = ratios[worst]
    return Fact(
        ratio,
        "kernel.layers[].rel_err / (u_input + u_fp32*sqrt(K))",
        f"worst {worst}: rel err {errs[worst]:.3g} vs bound {bound:.3g} for {prec} inputs with fp32 accumulation",
        context={"layer": worst},
    )


def intents(run: RunRecord) -> dict[str, str]:
    """The declared sparsity intent of each linear layer."""
    return {layer.name: layer.intended for layer in run.graph.layers if layer.op == "linear"}


@PRECISION.rule(
    "precision.quality_drop", ">", 0.01, "cosine", 2.0,
    source="outcome.quality.cosine: baseline minus candidate, same sparsity intent",
    description="Output cosine vs the dense model fell against a baseline with the same sparsity intent.",
    fix="keep the layers with the largest error in higher precision",
    suggest=precision_fix,
)
def quality_cosine_drop(ctx: Context) -> Result:
    """Baseline minus candidate output cosine vs dense; gated when the sparsity intent differs (pruning, not precision)."""
    cand_q = ctx.run.outcome.quality
    if cand_q is None:
        return Missing("no output quality in the run", "replay the workload (it measures output cosine vs dense)")
    if ctx.baseline is None:
        return Missing("no baseline to compare quality with", CAPTURE_BASELINE)
    base_q = ctx.baseline.outcome.quality
    if base_q is None:
        return Missing("no output quality in the baseline", "replay the baseline workload")
    drop = base_q.cosine - cand_q.cosine
    detail = f"cosine vs dense {base_q.cosine:.5f} -> {cand_q.cosine:.5f}"
    if intents(ctx.run) != intents(ctx.baseline):
        return Fact(drop, "outcome.quality.cosine vs baseline", detail, gate="sparsity intent differs from the baseline: the drop includes pruning")
    return Fact(drop, "outcome.quality.cosine vs baseline", detail)


@PRECISION.rule(
    "precision.guardrail", ">", 0.0, "verdicts", 1.0,
    source="verdicts[] with 'quality' in check and status fail",
    description="A quality guardrail verdict failed on the candidate.",
    fix="keep the layers with the largest error in higher precision",
    suggest=precision_fix, one_run=True,
)
def quality_guardrail_failures(ctx: Context) -> Result:
    """Failed quality verdicts on the run."""
    quality = [v for v in ctx.run.verdicts if "quality" in v.check.lower()]
    if not quality:
        return Fact(None, "verdicts[]", "no quality guardrail verdict on the run")
    failed = [v for v in quality if v.status == "fail"]
    return Fact(float(len(failed)), "verdicts[] (quality)", "; ".join(f"{v.check}: {v.status}: {v.detail}" for v in quality))
