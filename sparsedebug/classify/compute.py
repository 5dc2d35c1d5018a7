"""Compute: work that was not skipped (dense fallbacks, a sparse kernel no faster than dense, SM-bound GEMMs).

Each rule sits on the metric it reads; the fix recipes below them pad, cast or exclude
the layer the evidence names.
"""

from __future__ import annotations

from collections import Counter

from sparsedebug.classify.context import (
    Context,
    Fact,
    Facts,
    Missing,
    Result,
    roofline_missing,
)
from sparsedebug.classify.evidence import ncu_detail, sparse_ncu
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.dispatch import FIX_ACTION, backend_changed, dispatch_causes
from sparsedebug.core.patterns import (
    declared_sparse,
    fallback_cause_set,
    fell_back,
    kernel_time_shares,
    path_changed,
    path_text,
    precision_changes,
)
from sparsedebug.core.patterns import fallback_flop_share as shared_fallback_flop_share
from sparsedebug.core.stats import median
from sparsedebug.locate.common import ms_per_iteration
from sparsedebug.records.classification import Fix, FixTarget, Mechanism, is_dispatch_cause
from sparsedebug.records.notes import note
from sparsedebug.records.run import FallbackReason, GraphLayer, KernelPath, LowerLayer, RunRecord, cause_values

COMPUTE = RuleSet(Mechanism.COMPUTE)


# --------------------------------------------------------------------------- fixes


def sparse_path_dtype(run: RunRecord) -> str | None:
    """The dtype most layers that took the sparse path run in (what the backend accepts)."""
    sparse = {lo.name for lo in run.lower.layers if lo.path == KernelPath.SPARSE}
    dtypes = Counter(g.dtype for g in run.graph.layers if g.name in sparse)
    return dtypes.most_common(1)[0][0] if dtypes else None


def compute_fix(rule: Rule, facts: Facts) -> Fix:
    """Exclude the compute-bound layer whose sparse kernel is slower than dense, else advice on the kernel."""
    layer = facts.data("compute_bound_sparse_slowdown").get("layer")
    if isinstance(layer, str) and not facts.ctx.imported:
        return Fix(kind="layer", layer=layer, action="exclude", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="exclude_layer")
    return Fix(kind="advice", rule=rule.id, metric="busy_p50_ms", direction="down", code="check_sparse_kernel")


def fallback_fix(rule: Rule, facts: Facts) -> Fix:
    """For the fallback layer the rule names: pad a misaligned shape, cast an unsupported dtype, else exclude it; on
    every layer that falls back for the same reason (``Fix.targets``, when more than that one layer does)."""
    ctx, info = facts.ctx, facts.data(rule.metric)
    layer, reason = info.get("layer"), info.get("reason")
    if not isinstance(layer, str):
        return compute_fix(rule, facts)
    shared = fallback_cause_set(ctx.run, reason if isinstance(reason, FallbackReason) else None)
    targets = [FixTarget(cause=reason, layers=shared)] if isinstance(reason, FallbackReason) and len(shared) > 1 else []
    if reason == FallbackReason.SHAPE_NOT_ALIGNED:
        return Fix(kind="layer", layer=layer, action="pad", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="pad_shape", targets=targets)
    sparse_dtype = sparse_path_dtype(ctx.run)
    if reason == FallbackReason.DTYPE_UNSUPPORTED and sparse_dtype is not None and not ctx.imported:
        return Fix(kind="layer", layer=layer, action="cast", value=sparse_dtype, rule=rule.id,
                   metric="latency_p50_ms", direction="down", code="cast_layer", targets=targets)
    return Fix(kind="layer", layer=layer, action="exclude", rule=rule.id, metric="fallback_flop_share", direction="down",
               code="exclude_layer", targets=targets)


# --------------------------------------------------------------------------- rules and their metrics


def fallbacks(ctx: Context) -> list[tuple[GraphLayer, LowerLayer]]:
    """Layers declared sparse that lowered to a dense fallback, with their graph entry."""
    graph = ctx.graph()
    return [(graph[lo.name], lo) for lo in ctx.run.lower.layers if lo.name in graph and fell_back(graph[lo.name].intended, lo)]


@COMPUTE.rule(
    "compute.fallback_flops", ">", 0.10, "share", 3.0,
    source=["lower.layers[].path", "lower.layers[].reason", "graph.layers[].flops"],
    description="Share of the FLOPs declared sparse that lowered to a dense fallback (work not skipped).",
    suggest=fallback_fix, one_run=True,
)
def fallback_flop_share(ctx: Context) -> Result:
    """FLOPs of fallback layers over the FLOPs declared sparse (layer count when no FLOPs are declared)."""
    intended = [layer for layer in ctx.run.graph.layers if declared_sparse(layer.intended)]
    if not intended:
        return Fact(None, "graph.layers[].intended", note("mechanisms.none_declared_sparse"))
    lost_layers = fallbacks(ctx)
    layers = [g.name for g, _ in lost_layers]
    reasons = [str(lo.reason) for _, lo in lost_layers]
    total_flops = sum(layer.flops for layer in intended)
    share = shared_fallback_flop_share(ctx.run)
    if total_flops > 0:
        lost = sum(g.flops for g, _ in lost_layers)
        detail = note("mechanisms.fallback_flops", lost_flops=lost, total_flops=total_flops, layers=layers, reasons=reasons)
    else:
        detail = note("mechanisms.fallback_layers", lost=len(lost_layers), declared=len(intended), layers=layers, reasons=reasons)
    biggest = max(lost_layers, key=lambda pair: (pair[0].flops, pair[0].name), default=None)
    data: dict[str, object] = {}
    if biggest is not None:
        data = {"layer": biggest[0].name, "reason": biggest[1].reason}
    return Fact(share, "lower.layers[].path + graph.layers[].flops", detail, context=data)


def neighbour_fix(rule: Rule, facts: Facts) -> Fix:
    """Give the neighbour its fast path back, naming the cause the trace shows (layout, dtype, mask)."""
    info = facts.data(rule.metric)
    layer, target = info.get("layer"), info.get("target")
    if isinstance(layer, str) and isinstance(target, FixTarget) and is_dispatch_cause(target.cause):
        return Fix(kind="advice", layer=layer, rule=rule.id, metric="latency_p50_ms", direction="down",
                   code=FIX_ACTION[target.cause], targets=[target])
    return Fix(kind="advice", layer=layer if isinstance(layer, str) else None, rule=rule.id, metric="latency_p50_ms",
               direction="down", code="restore_neighbour_path")


@COMPUTE.rule(
    "compute.neighbour_path_change", ">", 0.5, "share", 3.0,
    source=["lower.layers[].path", "lower.layers[].kernels", "baseline", "kernel.layers[].samples_ms"],
    description="Share of the latency change carried by layers not declared sparse whose kernel path or dispatch "
    "changed (a neighbouring op pushed off its fused path; moves onto fp32/SIMT count as precision instead).",
    suggest=neighbour_fix,
)
def neighbour_path_latency_share(ctx: Context) -> Result:
    """Per-iteration kernel time gained by changed-path neighbours over the whole-forward latency change."""
    if ctx.baseline is None:
        return Missing(note("mechanisms.no_baseline", judged="path_change"), note("mechanisms.capture_baseline"))
    base_lat = ctx.baseline.outcome.latency_samples_ms or ctx.baseline.schedule.span_samples_ms
    cand_lat = ctx.run.outcome.latency_samples_ms or ctx.run.schedule.span_samples_ms
    if not base_lat or not cand_lat:
        return Missing(note("mechanisms.no_latency_both"), note("mechanisms.capture_trace" if ctx.imported else "mechanisms.capture_replay_both"))
    total = median(cand_lat) - median(base_lat)
    graph, base_lower = ctx.graph(), ctx.lower(ctx.baseline)
    base_kernel = {k.name: k for k in ctx.baseline.kernel.layers}
    cand_kernel = {k.name: k for k in ctx.run.kernel.layers}
    carried: dict[str, float] = {}
    to_fp32: list[str] = []
    precision = {c.layer: c.how for c in precision_changes(ctx.baseline, ctx.run)}
    for lo in ctx.run.lower.layers:
        before = base_lower.get(lo.name)
        if before is None or declared_sparse(graph[lo.name].intended if lo.name in graph else None) or not path_changed(before, lo):
            continue
        if lo.name in precision:
            to_fp32.append(lo.name)
            continue  # a path change that changed precision is precision evidence (precision.dtype_change), not compute
        if lo.name in cand_kernel and lo.name in base_kernel:
            carried[lo.name] = ms_per_iteration(cand_kernel[lo.name].samples_ms, ctx.run) - ms_per_iteration(
                base_kernel[lo.name].samples_ms, ctx.baseline
            )
    grown = sum(v for v in carried.values() if v > 0)
    if not carried:
        if to_fp32:
            return Fact(0.0, "lower.layers[] vs baseline", note(
                "mechanisms.neighbours_changed_precision", count=len(to_fp32), layers=to_fp32[:4],
                changes=[precision[name] for name in to_fp32[:4]]))
        return Fact(0.0, "lower.layers[] vs baseline", note("mechanisms.no_neighbour_changed"))
    if total <= 0:
        return Fact(0.0, "outcome.latency_samples_ms", note("mechanisms.neighbours_latency_flat", count=len(carried)))
    worst = max(carried, key=lambda name: carried[name])
    before, after = base_lower[worst], ctx.lower()[worst]
    data: dict[str, object] = {"layer": worst}
    causes = dispatch_causes(before.dispatch, after.dispatch)
    first = next(iter(causes), None)
    if first is not None:
        data["target"] = FixTarget(cause=first.code, layers=[worst], tensors=[first.tensor] if first.tensor else [],
                                   removes_ms=round(carried[worst], 6), restore=first.was)
    b_backend = before.dispatch.backend if before.dispatch else None
    c_backend = after.dispatch.backend if after.dispatch else None
    detail = note("mechanisms.neighbour_growth", grown_ms=grown, total_ms=total, count=len(carried), layer=worst,
                  layer_ms=carried[worst], path_before=path_text(before), path_after=path_text(after),
                  op="attention" if after.dispatch is not None and "attention" in after.dispatch.op else "GEMM",
                  backend_before=b_backend if backend_changed(before, after) else None,
                  backend_after=c_backend if backend_changed(before, after) else None, **cause_values(causes))
    return Fact(grown / total, "lower vs baseline + kernel.layers[].samples_ms", detail, context=data)


@COMPUTE.rule(
    "compute.fallback_time", ">", 0.20, "share", 2.0,
    source=["kernel.layers[].samples_ms", "lower.layers[].path"],
    description="Share of summed kernel time spent in layers declared sparse that run dense.",
    suggest=fallback_fix, one_run=True,
)
def fallback_time_share(ctx: Context) -> Result:
    """Summed kernel p50 of fallback layers over the summed kernel p50 of all timed layers (``core.patterns.kernel_time_shares``)."""
    shares = kernel_time_shares(ctx.run)
    if shares is None:
        return Missing(note("mechanisms.no_kernel_samples"), note("mechanisms.capture_trace" if ctx.imported else "mechanisms.capture_replay"))
    data: dict[str, object] = {}
    worst, worst_ms, reason = shares.worst_fallback, None, None
    if worst is not None:
        lower = {lo.name: lo for lo in ctx.run.lower.layers}
        reason = lower[worst].reason
        worst_ms = ctx.kernel_p50()[worst]
        data = {"layer": worst, "reason": reason}
    detail = note("mechanisms.fallback_time", fallback_ms=shares.fallback_ms, total_ms=shares.total_ms, timed=shares.timed,
                  untimed=shares.untimed, layer=worst, layer_ms=worst_ms, reason=str(reason) if reason is not None else None)
    return Fact(shares.fallback_share or 0.0, "kernel.layers[].samples_ms (fallback layers)", detail, context=data)


@COMPUTE.rule(
    "compute.sparse_not_faster", ">", 1.0, "ratio", 1.0,
    source=["kernel.layers[].samples_ms", "kernel.layers[].dense_samples_ms", "roofline.ridge"],
    description="Compute-bound sparse layers whose sparse kernel is not faster than the dense one (p50 ratio sparse/dense).",
    suggest=compute_fix, one_run=True,
)
def compute_bound_sparse_slowdown(ctx: Context) -> Result:
    """Summed sparse kernel p50 over summed dense reference p50, over the compute-bound sparse layers."""
    if ctx.roofline is None:
        return roofline_missing(ctx)
    bound = {li.name: li for li in ctx.intensities}
    lower = ctx.lower()
    pairs: list[tuple[str, float, float]] = []
    for layer in ctx.run.kernel.layers:
        lo = lower.get(layer.name)
        li = bound.get(layer.name)
        if lo is None or lo.path != KernelPath.SPARSE or li is None or li.bound != "compute":
            continue
        if layer.samples_ms and layer.dense_samples_ms:
            dense = median(layer.dense_samples_ms)
            if dense > 0:
                pairs.append((layer.name, median(layer.samples_ms), dense))
    if not pairs:
        return Fact(None, "kernel.layers[].dense_samples_ms", note("mechanisms.no_compute_bound_pairs", ridge=ctx.roofline.ridge))
    sparse_total = sum(p[1] for p in pairs)
    dense_total = sum(p[2] for p in pairs)
    worst = max(pairs, key=lambda p: p[1] / p[2])
    return Fact(
        sparse_total / dense_total,
        "kernel.layers[].samples_ms vs dense_samples_ms",
        note("mechanisms.sparse_vs_dense", count=len(pairs), sparse_ms=sparse_total, dense_ms=dense_total, layer=worst[0],
             layer_sparse_ms=worst[1], layer_dense_ms=worst[2]),
        context={"layer": worst[0]},
    )


@COMPUTE.rule(
    "compute.ncu_sm_bound", ">", 60.0, "%", 1.0,
    source=["ncu SpeedOfLight.sm_throughput_pct"],
    description="The sparse GEMM is SM-bound by NVIDIA's Speed-of-Light rule (its SM throughput %).",
    suggest=compute_fix, artifact="ncu",
)
def ncu_sparse_sm_pct(ctx: Context) -> Result:
    """The sparse GEMM's Compute (SM) Throughput % in the attached Nsight Compute report."""
    kernel = sparse_ncu(ctx)
    if kernel is None:
        return Fact(None, "ncu", note("mechanisms.ncu_not_for_replay"))
    if isinstance(kernel, Missing):
        return kernel
    if kernel.sm_pct is None:
        return Missing(note("mechanisms.ncu_no_sm", file=ctx.ncu_source, kernel=kernel.name), note("mechanisms.capture_ncu"))
    return Fact(kernel.sm_pct, f"{ctx.ncu_source}: SpeedOfLight", ncu_detail(kernel))
