"""Compute: work that was not skipped (dense fallbacks, a sparse kernel no faster than dense, SM-bound GEMMs).

Each rule sits on the metric it reads; the fix recipes below them pad, cast or exclude
the layer the evidence names.
"""

from __future__ import annotations

from collections import Counter

from sparsedebug.classify.context import (
    CAPTURE_BASELINE,
    CAPTURE_NCU,
    CAPTURE_TRACE,
    Context,
    Fact,
    Facts,
    Missing,
    Result,
    roofline_missing,
)
from sparsedebug.classify.evidence import ncu_detail, sparse_ncu
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.dispatch import change_text, dispatch_cause, fix_for
from sparsedebug.core.patterns import declared_sparse, fell_back, kernel_time_shares, path_changed, path_text, precision_changes
from sparsedebug.core.patterns import fallback_flop_share as shared_fallback_flop_share
from sparsedebug.core.stats import median
from sparsedebug.locate.common import ms_per_iteration
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.run import FallbackReason, GraphLayer, KernelPath, LowerLayer, RunRecord

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
                   code="exclude_layer", text=f"exclude {layer} from sparsity: its sparse kernel is slower than dense")
    return Fix(kind="advice", rule=rule.id, metric="busy_p50_ms", direction="down",
               text="check the sparse kernel chosen for the shape, or raise tokens per call so 2:4 pays off")


def fallback_fix(rule: Rule, facts: Facts) -> Fix:
    """For the fallback layer the rule names: pad a misaligned shape, cast an unsupported dtype, else exclude it."""
    ctx, info = facts.ctx, facts.data(rule.metric)
    layer, reason = info.get("layer"), info.get("reason")
    if not isinstance(layer, str):
        return compute_fix(rule, facts)
    if reason == FallbackReason.SHAPE_NOT_ALIGNED:
        return Fix(kind="layer", layer=layer, action="pad", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="pad_shape", text=f"pad {layer} to an aligned shape so it takes the sparse path, and re-time")
    sparse_dtype = sparse_path_dtype(ctx.run)
    if reason == FallbackReason.DTYPE_UNSUPPORTED and sparse_dtype is not None and not ctx.imported:
        return Fix(kind="layer", layer=layer, action="cast", value=sparse_dtype, rule=rule.id,
                   metric="latency_p50_ms", direction="down", code="cast_layer",
                   text=f"cast {layer} to {sparse_dtype} (the dtype the other sparse layers run in) so the "
                        "backend accepts it on the sparse path, and re-time")
    return Fix(kind="layer", layer=layer, action="exclude", rule=rule.id, metric="fallback_flop_share", direction="down",
               code="exclude_layer", text=f"exclude {layer} from sparsity (it falls back: {reason}) and check latency does not move")


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
        return Fact(None, "graph.layers[].intended", "no layer is declared sparse: nothing can fall back")
    lost_layers = fallbacks(ctx)
    names = ", ".join(f"{g.name} ({lo.reason})" for g, lo in lost_layers) or "none"
    total_flops = sum(layer.flops for layer in intended)
    share = shared_fallback_flop_share(ctx.run)
    if total_flops > 0:
        lost = sum(g.flops for g, _ in lost_layers)
        detail = f"{lost:.3g} of {total_flops:.3g} FLOPs declared sparse run dense; fallback layers: {names}"
    else:
        detail = f"{len(lost_layers)} of {len(intended)} layers declared sparse run dense (no FLOPs declared); fallback layers: {names}"
    biggest = max(lost_layers, key=lambda pair: (pair[0].flops, pair[0].name), default=None)
    data: dict[str, object] = {}
    if biggest is not None:
        data = {"layer": biggest[0].name, "reason": biggest[1].reason}
    return Fact(share, "lower.layers[].path + graph.layers[].flops", detail, context=data)


def neighbour_fix(rule: Rule, facts: Facts) -> Fix:
    """Give the neighbour its fast path back, naming the cause the trace shows (layout, dtype, mask)."""
    info = facts.data(rule.metric)
    layer, cause, change = info.get("layer"), info.get("cause"), info.get("change")
    named = fix_for(layer, cause) if isinstance(layer, str) and isinstance(cause, list) else None
    if named is None:
        where = f" ({layer}: {change})" if isinstance(layer, str) else ""
        named = f"restore the neighbouring op's previous kernel path{where}: check its input layout, dtype and mask, and re-trace"
    return Fix(kind="advice", layer=layer if isinstance(layer, str) else None, rule=rule.id, metric="latency_p50_ms",
               direction="down", text=named)


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
        return Missing("no baseline: a path change cannot be judged", CAPTURE_BASELINE)
    base_lat = ctx.baseline.outcome.latency_samples_ms or ctx.baseline.schedule.span_samples_ms
    cand_lat = ctx.run.outcome.latency_samples_ms or ctx.run.schedule.span_samples_ms
    if not base_lat or not cand_lat:
        return Missing("no whole-forward latency samples on both sides", CAPTURE_TRACE if ctx.imported else "replay both workloads")
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
            to_fp32.append(f"{lo.name} {precision[lo.name]}")
            continue  # a path change that changed precision is precision evidence (precision.dtype_change), not compute
        if lo.name in cand_kernel and lo.name in base_kernel:
            carried[lo.name] = ms_per_iteration(cand_kernel[lo.name].samples_ms, ctx.run) - ms_per_iteration(
                base_kernel[lo.name].samples_ms, ctx.baseline
            )
    grown = sum(v for v in carried.values() if v > 0)
    if not carried:
        if to_fp32:
            return Fact(0.0, "lower.layers[] vs baseline", f"{len(to_fp32)} layer(s) outside the declared-sparse ones changed path, "
                        f"each with a precision change ({', '.join(to_fp32[:4])}): counted as precision (precision.dtype_change)")
        return Fact(0.0, "lower.layers[] vs baseline", "no layer outside the declared-sparse ones changed kernel path")
    if total <= 0:
        return Fact(0.0, "outcome.latency_samples_ms", f"{len(carried)} neighbour(s) changed path, but latency did not grow")
    worst = max(carried, key=lambda name: carried[name])
    dispatch = change_text(base_lower[worst], ctx.lower()[worst])
    change = f"{path_text(base_lower[worst])} -> {path_text(ctx.lower()[worst])}" + (f", {dispatch}" if dispatch else "")
    data: dict[str, object] = {"layer": worst, "change": change}
    cause = dispatch_cause(base_lower[worst].dispatch, ctx.lower()[worst].dispatch)
    if cause:
        data["cause"] = cause
    detail = (f"{grown:.3f} of {total:.3f} ms latency growth per iteration in {len(carried)} changed-path neighbour(s); "
              f"largest {worst} +{carried[worst]:.3f} ms ({change})" + (f"; cause seen in the trace: {'; '.join(cause)}" if cause else ""))
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
        return Missing("no per-layer kernel samples in the run", CAPTURE_TRACE if ctx.imported else "replay the workload")
    detail = f"{shares.fallback_ms:.3f} of {shares.total_ms:.3f} ms summed kernel p50 in fallback layers"
    if shares.untimed:
        detail += f" ({shares.timed} layers timed, {shares.untimed} without kernel samples)"
    data: dict[str, object] = {}
    if shares.worst_fallback is not None:
        lower = {lo.name: lo for lo in ctx.run.lower.layers}
        worst = shares.worst_fallback
        reason = lower[worst].reason
        detail += f"; largest {worst} {ctx.kernel_p50()[worst]:.3f} ms ({reason})"
        data = {"layer": worst, "reason": reason}
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
        return Fact(None, "kernel.layers[].dense_samples_ms", f"no compute-bound sparse layer with dense reference timings (ridge {ctx.roofline.ridge:.1f} FLOP/B)")
    sparse_total = sum(p[1] for p in pairs)
    dense_total = sum(p[2] for p in pairs)
    worst = max(pairs, key=lambda p: p[1] / p[2])
    return Fact(
        sparse_total / dense_total,
        "kernel.layers[].samples_ms vs dense_samples_ms",
        f"{len(pairs)} compute-bound sparse layers: sparse {sparse_total:.3f} ms vs dense {dense_total:.3f} ms (p50 sums); "
        f"worst {worst[0]} {worst[1]:.3f} vs {worst[2]:.3f} ms",
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
        return Fact(None, "ncu", "replay on the built-in CPU kernel: Nsight Compute does not apply")
    if isinstance(kernel, Missing):
        return kernel
    if kernel.sm_pct is None:
        return Missing(f"{ctx.ncu_source}: no Compute (SM) Throughput for {kernel.name}", CAPTURE_NCU)
    return Fact(kernel.sm_pct, f"{ctx.ncu_source}: SpeedOfLight", ncu_detail(kernel))
