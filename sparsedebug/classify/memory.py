"""Memory: bytes moved, not FLOPs, set the time (metadata, activation gathers, conversions, copies, low intensity).

Each rule sits on the metric it reads; the fix recipes raise the block size V of the
layers the evidence names, or convert weights once instead of on every call.
"""

from __future__ import annotations

from sparsedebug.classify.context import (
    CAPTURE_BASELINE,
    CAPTURE_NCU,
    CAPTURE_TRACE,
    Context,
    Fact,
    Facts,
    Missing,
    Result,
    converts_per_call,
    roofline_missing,
)
from sparsedebug.classify.evidence import ncu_detail, sparse_ncu
from sparsedebug.classify.roofline import gather_bytes, layer_work
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.patterns import declared_sparse
from sparsedebug.kernels.masks import intent_pattern
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.run import KernelClass, KernelPath

MEMORY = RuleSet(Mechanism.MEMORY)


# --------------------------------------------------------------------------- fixes


def block_size(intended: str) -> int | None:
    """The block size V of a ``V:N:M`` intent; None for plain ``N:M``, ``dense`` or anything unreadable."""
    pattern = intent_pattern(intended)
    return None if pattern is None else pattern.block


def memory_fix(rule: Rule, facts: Facts) -> Fix:
    """Convert weights once when some layer converts per call; else advice to raise reuse."""
    if converts_per_call(facts.ctx.run):
        return Fix(kind="knob", knob="conversion", value="once", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="convert_once", text="convert weights once at load so no conversion traffic is paid per call")
    return Fix(kind="advice", rule=rule.id, metric="busy_p50_ms", direction="down",
               text="raise tokens per call (or use a larger tile) so each weight byte feeds more FLOPs, then re-time")


def block_fix(rule: Rule, facts: Facts) -> Fix:
    """Raise V fourfold for the layer the rule names (all sparse layers when they share one V); else ``memory_fix``."""
    ctx = facts.ctx
    layer = facts.data(rule.metric).get("layer")
    graph = ctx.graph()
    v = block_size(graph[layer].intended) if isinstance(layer, str) and layer in graph else None
    if v is None:
        return memory_fix(rule, facts)
    blocks = {block_size(g.intended) for g in ctx.run.graph.layers if declared_sparse(g.intended)}
    target = None if len(blocks) == 1 else layer
    return Fix(kind="block", layer=target, value=v * 4, rule=rule.id, metric="busy_p50_ms", direction="down", code="block_size",
               text=f"raise block size V from {v} to {v * 4} ({'all sparse layers' if target is None else target}) and re-time")


# --------------------------------------------------------------------------- rules and their metrics


@MEMORY.rule(
    "memory.metadata_bytes", ">", 0.25, "ratio", 2.0,
    source="lower.layers[].metadata_bytes / value_bytes",
    description="Sparse-index metadata bytes per byte of kept values (small blocks carry more metadata).",
    fix="use a larger block V for V:N:M layers so fewer index bytes move per value",
    suggest=block_fix, one_run=True,
)
def metadata_value_ratio(ctx: Context) -> Result:
    """Metadata bytes over value bytes, summed over the layers on the sparse path."""
    lower = [lo for lo in ctx.run.lower.layers if lo.path == KernelPath.SPARSE]
    if not lower:
        return Fact(None, "lower.layers[].metadata_bytes", "no layer runs sparse: no metadata traffic")
    rows = [lo for lo in lower if lo.metadata_bytes is not None and lo.value_bytes]
    if not rows:
        capture = (
            "replay an equivalent workload (`sparsedebug replay`): it records value and metadata bytes per layer"
            if ctx.imported
            else "replay the workload again with this sparsedebug (it records value and metadata bytes per layer)"
        )
        return Missing("metadata and value bytes of the sparse layers are not recorded", capture)
    meta = sum(lo.metadata_bytes or 0 for lo in rows)
    values = sum(lo.value_bytes or 0 for lo in rows)
    worst = max(rows, key=lambda lo: (lo.metadata_bytes or 0) / (lo.value_bytes or 1))
    return Fact(
        meta / values,
        "lower.layers[].metadata_bytes / value_bytes",
        f"{meta} metadata bytes for {values} value bytes over {len(rows)} sparse layers; "
        f"worst {worst.name} {(worst.metadata_bytes or 0) / (worst.value_bytes or 1):.3f}",
        context={"layer": worst.name},
    )


@MEMORY.rule(
    "memory.gather_traffic", ">", 2.0, "ratio", 2.0,
    source="graph.layers[] shapes, intended V:N:M, tokens; lower.layers[].kernels (built-in blocked kernel)",
    description="Activation bytes the blocked V:N:M kernel gathers per call (once per block of V rows) over the bytes "
    "the dense GEMM moves: small blocks re-read activations.",
    fix="use a larger block V so each gathered activation row serves more weight rows",
    suggest=block_fix, one_run=True,
)
def gather_traffic_ratio(ctx: Context) -> Result:
    """Activation bytes the blocked kernel gathers per call over the dense GEMM's bytes, over the blocked layers."""
    lower = ctx.lower()
    rows = [(g, gather_bytes(g, lower.get(g.name), ctx.run.graph.tokens)) for g in ctx.run.graph.layers]
    blocked = [(g, b) for g, b in rows if b is not None and g.bytes > 0]
    if not blocked:
        if any(any("VNMWeight" in k for k in lo.kernels) for lo in ctx.run.lower.layers) and ctx.run.graph.tokens is None:
            return Missing("token count not recorded in the graph stage", "replay the workload")
        where = "imported run" if ctx.imported else "no layer runs the built-in blocked V:N:M kernel"
        return Fact(None, "lower.layers[].kernels", f"{where}: no activation gathers to count")
    gathered = sum(b for _, b in blocked)
    dense = sum(g.bytes for g, _ in blocked)
    worst_layer, worst_bytes = max(blocked, key=lambda pair: pair[1] / pair[0].bytes)
    return Fact(
        gathered / dense,
        "graph.layers[] (shape, V:N:M, tokens) for lower.layers[].kernels = VNMWeight",
        f"{gathered:.3g} gathered activation bytes per call vs {dense:.3g} dense-GEMM bytes over {len(blocked)} blocked layers; "
        f"worst {worst_layer.name} ({worst_layer.intended}) {worst_bytes / worst_layer.bytes:.2f}x",
        context={"layer": worst_layer.name},
    )


@MEMORY.rule(
    "memory.bytes_growth", ">", 1.5, "ratio", 2.0,
    source="graph/lower bytes per call for the path each layer took (roofline.layer_work), candidate / baseline",
    description="The candidate's layers move this many times the baseline's bytes per call (compressed weights, metadata, gathers).",
    fix="use a larger block V (fewer gathers) or keep the layer's weights compressed once",
    suggest=block_fix,
)
def bytes_moved_growth(ctx: Context) -> Result:
    """Bytes per call of the candidate's layers over the baseline's, each for the path it took."""
    if ctx.baseline is None:
        return Missing("no baseline to compare bytes moved with", CAPTURE_BASELINE)
    cand, base = layer_work(ctx.run), layer_work(ctx.baseline)
    if not cand or not base:
        return Missing("FLOPs and bytes per layer not recorded in the run or the baseline", "replay the workload or import a trace with record_shapes")
    c_bytes, b_bytes = sum(w.bytes for w in cand), sum(w.bytes for w in base)
    base_by = {w.name: w.bytes for w in base}
    grown = max(cand, key=lambda w: w.bytes / base_by.get(w.name, w.bytes))
    return Fact(
        c_bytes / b_bytes,
        "roofline.layer_work bytes per call, candidate vs baseline",
        f"{c_bytes:.3g} bytes per call vs baseline {b_bytes:.3g}; most grown {grown.name} "
        f"{base_by.get(grown.name, grown.bytes):.3g} -> {grown.bytes:.3g}",
        context={"layer": grown.name},
    )


@MEMORY.rule(
    "memory.conversion_traffic", ">", 0.50, "ratio", 1.0,
    source="lower.layers[].conversions_per_call x (dense+value+metadata bytes) / graph bytes",
    description="Bytes moved by weight conversions on every call, relative to the bytes the forward itself moves.",
    fix="convert once at load instead of on every call",
    suggest=memory_fix, one_run=True,
)
def conversion_traffic_ratio(ctx: Context) -> Result:
    """Bytes the per-call weight conversions move over the bytes the forward moves."""
    graph_bytes = sum(layer.bytes for layer in ctx.run.graph.layers)
    converting = [lo for lo in ctx.run.lower.layers if lo.conversions_per_call > 0]
    if not converting:
        return Fact(0.0, "lower.layers[].conversions_per_call", "no layer converts its weights on every call")
    if graph_bytes <= 0:
        return Missing("graph bytes per layer not recorded", "replay the workload or import a trace with record_shapes")
    moved = sum(
        lo.conversions_per_call * ((lo.dense_bytes or 0) + (lo.value_bytes or 0) + (lo.metadata_bytes or 0)) for lo in converting
    )
    return Fact(
        moved / graph_bytes,
        "lower.layers[].conversions_per_call x bytes / graph.layers[].bytes",
        f"{moved:.3g} conversion bytes per call ({len(converting)} layers) vs {graph_bytes:.3g} forward bytes",
    )


@MEMORY.rule(
    "memory.low_intensity", ">", 0.50, "share", 1.0,
    source="graph.layers[].flops/bytes vs machine roofline ridge, weighted by kernel time",
    description="Share of kernel time in layers whose arithmetic intensity is below the machine's ridge point.",
    fix="batch more tokens per call so each weight byte feeds more FLOPs",
    suggest=memory_fix, one_run=True,
)
def low_intensity_time_share(ctx: Context) -> Result:
    """Kernel time (attainable time where untimed) of memory-bound layers over all layers on the roofline."""
    if ctx.roofline is None:
        return roofline_missing(ctx)
    if not ctx.intensities:
        return Missing("no layer declares FLOPs and bytes", "replay the workload or import a trace with record_shapes")
    times = ctx.kernel_p50()
    weights = {li.name: times.get(li.name, li.attainable_ms) for li in ctx.intensities}
    total = sum(weights.values())
    low = [li for li in ctx.intensities if li.bound == "memory"]
    share = sum(weights[li.name] for li in low) / total if total > 0 else 0.0
    ai = sorted(li.intensity for li in ctx.intensities)
    return Fact(
        share,
        "graph.layers[].flops/bytes vs roofline ridge",
        f"{len(low)} of {len(ctx.intensities)} layers below the ridge {ctx.roofline.ridge:.1f} FLOP/B "
        f"({ctx.roofline.device}, {ctx.roofline.source}); intensity {ai[0]:.1f} to {ai[-1]:.1f} FLOP/B",
    )


@MEMORY.rule(
    "memory.copy_time", ">", 0.10, "share", 1.0,
    source="kernel.by_class_ms['copy'] / busy time",
    description="Share of kernel time spent in copy kernels (extra layout copies, casts).",
    fix="remove the extra copy (keep weights in the layout the kernel wants)",
    suggest=memory_fix, one_run=True,
)
def copy_time_share(ctx: Context) -> Result:
    """Time in copy kernels over all kernel time, by kernel class."""
    by_class = ctx.run.kernel.by_class_ms
    if not by_class:
        if ctx.imported:
            return Missing("no per-class kernel time in the run", CAPTURE_TRACE)
        return Fact(None, "kernel.by_class_ms", "replay: copies are part of the layer times, not timed apart")
    total = sum(by_class.values())
    copy = by_class.get(KernelClass.COPY.value, 0.0)
    return Fact(copy / total if total > 0 else 0.0, "kernel.by_class_ms['copy']", f"{copy:.3f} of {total:.3f} ms in copy kernels")


@MEMORY.rule(
    "memory.ncu_memory_bound", ">", 10.0, "points", 2.0,
    source="Nsight Compute SpeedOfLight Memory minus Compute (SM) Throughput of the sparse GEMM",
    description="The sparse GEMM is memory-bound by NVIDIA's Speed-of-Light rule (memory ahead of SM by 10+ points).",
    fix="a larger tile/block or more tokens per call to raise reuse",
    suggest=memory_fix, artifact="ncu",
)
def ncu_sparse_mem_minus_sm_pct(ctx: Context) -> Result:
    """Memory minus SM throughput % of the sparse GEMM; gated when both are low (latency-bound)."""
    kernel = sparse_ncu(ctx)
    if kernel is None:
        return Fact(None, "ncu", "replay on the built-in CPU kernel: Nsight Compute does not apply")
    if isinstance(kernel, Missing):
        return kernel
    if kernel.sm_pct is None or kernel.mem_pct is None:
        return Missing(f"{ctx.ncu_source}: SpeedOfLight throughputs missing for {kernel.name}", CAPTURE_NCU)
    gate = None
    if kernel.sm_pct < 60 and kernel.mem_pct < 60:
        gate = "both throughputs below 60%: latency-bound, not memory-bound"
    return Fact(kernel.mem_pct - kernel.sm_pct, f"{ctx.ncu_source}: SpeedOfLight", ncu_detail(kernel), gate=gate)


@MEMORY.rule(
    "memory.ncu_spills", ">", 0.0, "requests", 1.0,
    source="Nsight Compute MemoryWorkloadAnalysis Local Memory Spilling Requests of the sparse GEMM",
    description="The sparse GEMM spills registers to local memory.",
    fix="try another sparse kernel configuration for this shape",
    suggest=memory_fix, artifact="ncu",
)
def ncu_sparse_spill_requests(ctx: Context) -> Result:
    """Local-memory spilling requests of the sparse GEMM in the attached Nsight Compute report."""
    kernel = sparse_ncu(ctx)
    if kernel is None:
        return Fact(None, "ncu", "replay on the built-in CPU kernel: Nsight Compute does not apply")
    if isinstance(kernel, Missing):
        return kernel
    if kernel.spill_requests is None:
        return Missing(f"{ctx.ncu_source}: no Local Memory Spilling Requests for {kernel.name}", CAPTURE_NCU)
    return Fact(kernel.spill_requests, f"{ctx.ncu_source}: MemoryWorkloadAnalysis", ncu_detail(kernel))
