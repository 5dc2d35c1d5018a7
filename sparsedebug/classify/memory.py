"""Memory: bytes moved, not FLOPs, set the time (metadata, activation gathers, conversions, copies, low intensity).

Each rule sits on the metric it reads; the fix recipes raise the block size V of the
layers the evidence names, or convert weights once instead of on every call.
"""

from __future__ import annotations

from sparsedebug.classify.context import (
    CAPTURE_BASELINE,
    CAPTURE_NCU,
    CAPTURE_TRACE,
    Capture,
    Context,
    Fact,
    Facts,
    Missing,
    Result,
    capture,
    conversion_targets,
    converts_per_call,
    roofline_missing,
)
from sparsedebug.classify.evidence import ncu_detail, sparse_ncu
from sparsedebug.classify.roofline import gather_bytes, layer_work
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.patterns import declared_sparse
from sparsedebug.kernels.masks import intent_pattern
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.notes import note
from sparsedebug.records.run import KernelClass, KernelPath

MEMORY = RuleSet(Mechanism.MEMORY)

# Both Speed-of-Light throughputs below this percentage: the kernel is latency-bound, not memory-bound.
LATENCY_BOUND_PCT = 60.0


# --------------------------------------------------------------------------- fixes


def block_size(intended: str) -> int | None:
    """The block size V of a ``V:N:M`` intent; None for plain ``N:M``, ``dense`` or anything unreadable."""
    pattern = intent_pattern(intended)
    return None if pattern is None else pattern.block


def memory_fix(rule: Rule, facts: Facts) -> Fix:
    """Convert weights once when some layer converts per call; else advice to raise reuse."""
    if converts_per_call(facts.ctx.run):
        return Fix(kind="knob", knob="conversion", value="once", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="convert_once", targets=conversion_targets(facts.ctx.run))
    return Fix(kind="advice", rule=rule.id, metric="busy_p50_ms", direction="down", code="raise_reuse")


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
    return Fix(kind="block", layer=target, value=v * 4, was=v, rule=rule.id, metric="busy_p50_ms", direction="down", code="block_size")


# --------------------------------------------------------------------------- rules and their metrics


@MEMORY.rule(
    "memory.metadata_bytes", ">", 0.25, "ratio", 2.0,
    source=["lower.layers[].metadata_bytes", "lower.layers[].value_bytes"],
    description="Sparse-index metadata bytes per byte of kept values (small blocks carry more metadata).",
    suggest=block_fix, one_run=True,
)
def metadata_value_ratio(ctx: Context) -> Result:
    """Metadata bytes over value bytes, summed over the layers on the sparse path."""
    lower = [lo for lo in ctx.run.lower.layers if lo.path == KernelPath.SPARSE]
    if not lower:
        return Fact(None, "lower.layers[].metadata_bytes", note("classify.no_sparse_layer", counts="metadata"))
    rows = [lo for lo in lower if lo.metadata_bytes is not None and lo.value_bytes]
    if not rows:
        return Missing(note("classify.not_recorded", what="sparse_bytes"),
                       capture(Capture.REPLAY_EQUIVALENT if ctx.imported else Capture.REPLAY_BYTES))
    meta = sum(lo.metadata_bytes or 0 for lo in rows)
    values = sum(lo.value_bytes or 0 for lo in rows)
    worst = max(rows, key=lambda lo: (lo.metadata_bytes or 0) / (lo.value_bytes or 1))
    return Fact(
        meta / values,
        "lower.layers[].metadata_bytes / value_bytes",
        note("classify.metadata_bytes", metadata_bytes=meta, value_bytes=values, layers=len(rows), worst=worst.name,
             worst_ratio=(worst.metadata_bytes or 0) / (worst.value_bytes or 1)),
        context={"layer": worst.name},
    )


@MEMORY.rule(
    "memory.gather_traffic", ">", 2.0, "ratio", 2.0,
    source=["graph.layers[].weight_shape", "graph.layers[].intended", "graph.tokens", "lower.layers[].kernels"],
    description="Activation bytes the blocked V:N:M kernel gathers per call (once per block of V rows) over the bytes "
    "the dense GEMM moves: small blocks re-read activations.",
    suggest=block_fix, one_run=True,
)
def gather_traffic_ratio(ctx: Context) -> Result:
    """Activation bytes the blocked kernel gathers per call over the dense GEMM's bytes, over the blocked layers."""
    lower = ctx.lower()
    rows = [(g, gather_bytes(g, lower.get(g.name), ctx.run.graph.tokens)) for g in ctx.run.graph.layers]
    blocked = [(g, b) for g, b in rows if b is not None and g.bytes > 0]
    if not blocked:
        if any(any("VNMWeight" in k for k in lo.kernels) for lo in ctx.run.lower.layers) and ctx.run.graph.tokens is None:
            return Missing(note("classify.not_recorded", what="tokens"), capture(Capture.REPLAY))
        return Fact(None, "lower.layers[].kernels", note("classify.no_gathers", imported=ctx.imported))
    gathered = sum(b for _, b in blocked)
    dense = sum(g.bytes for g, _ in blocked)
    worst_layer, worst_bytes = max(blocked, key=lambda pair: pair[1] / pair[0].bytes)
    return Fact(
        gathered / dense,
        "graph.layers[] for lower.layers[].kernels = VNMWeight",
        note("classify.gather_bytes", gathered_bytes=gathered, dense_bytes=dense, layers=len(blocked), worst=worst_layer.name,
             intended=worst_layer.intended, worst_ratio=worst_bytes / worst_layer.bytes),
        context={"layer": worst_layer.name},
    )


@MEMORY.rule(
    "memory.bytes_growth", ">", 1.5, "ratio", 2.0,
    source=["roofline.layer_work.bytes", "baseline"],
    description="The candidate's layers move this many times the baseline's bytes per call (compressed weights, metadata, gathers).",
    suggest=block_fix,
)
def bytes_moved_growth(ctx: Context) -> Result:
    """Bytes per call of the candidate's layers over the baseline's, each for the path it took."""
    if ctx.baseline is None:
        return Missing(note("classify.no_baseline", compares="bytes_moved"), CAPTURE_BASELINE)
    cand, base = layer_work(ctx.run), layer_work(ctx.baseline)
    if not cand or not base:
        return Missing(note("classify.not_recorded", what="layer_work", side="run_or_baseline"), capture(Capture.REPLAY_SHAPES))
    c_bytes, b_bytes = sum(w.bytes for w in cand), sum(w.bytes for w in base)
    base_by = {w.name: w.bytes for w in base}
    grown = max(cand, key=lambda w: w.bytes / base_by.get(w.name, w.bytes))
    return Fact(
        c_bytes / b_bytes,
        "roofline.layer_work bytes vs baseline",
        note("classify.bytes_growth", bytes=c_bytes, base_bytes=b_bytes, worst=grown.name,
             worst_base_bytes=base_by.get(grown.name, grown.bytes), worst_bytes=grown.bytes),
        context={"layer": grown.name},
    )


@MEMORY.rule(
    "memory.conversion_traffic", ">", 0.50, "ratio", 1.0,
    source=["lower.layers[].conversions_per_call", "lower.layers[].*_bytes", "graph.layers[].bytes"],
    description="Bytes moved by weight conversions on every call, relative to the bytes the forward itself moves.",
    suggest=memory_fix, one_run=True,
)
def conversion_traffic_ratio(ctx: Context) -> Result:
    """Bytes the per-call weight conversions move over the bytes the forward moves."""
    graph_bytes = sum(layer.bytes for layer in ctx.run.graph.layers)
    converting = [lo for lo in ctx.run.lower.layers if lo.conversions_per_call > 0]
    if not converting:
        return Fact(0.0, "lower.layers[].conversions_per_call", note("classify.no_conversion"))
    if graph_bytes <= 0:
        return Missing(note("classify.not_recorded", what="graph_bytes"), capture(Capture.REPLAY_SHAPES))
    moved = sum(
        lo.conversions_per_call * ((lo.dense_bytes or 0) + (lo.value_bytes or 0) + (lo.metadata_bytes or 0)) for lo in converting
    )
    return Fact(
        moved / graph_bytes,
        "lower.layers[].conversions_per_call x bytes / graph.layers[].bytes",
        note("classify.conversion_bytes", conversion_bytes=moved, layers=len(converting), forward_bytes=graph_bytes),
    )


@MEMORY.rule(
    "memory.low_intensity", ">", 0.50, "share", 1.0,
    source=["graph.layers[].flops", "graph.layers[].bytes", "roofline.ridge", "kernel.layers[].samples_ms"],
    description="Share of kernel time in layers whose arithmetic intensity is below the machine's ridge point.",
    suggest=memory_fix, one_run=True,
)
def low_intensity_time_share(ctx: Context) -> Result:
    """Kernel time (attainable time where untimed) of memory-bound layers over all layers on the roofline."""
    if ctx.roofline is None:
        return roofline_missing(ctx)
    if not ctx.intensities:
        return Missing(note("classify.not_recorded", what="layer_work"), capture(Capture.REPLAY_SHAPES))
    times = ctx.kernel_p50()
    weights = {li.name: times.get(li.name, li.attainable_ms) for li in ctx.intensities}
    total = sum(weights.values())
    low = [li for li in ctx.intensities if li.bound == "memory"]
    share = sum(weights[li.name] for li in low) / total if total > 0 else 0.0
    ai = sorted(li.intensity for li in ctx.intensities)
    return Fact(
        share,
        "graph.layers[].flops/bytes vs roofline ridge",
        note("classify.low_intensity", below=len(low), layers=len(ctx.intensities), ridge=ctx.roofline.ridge,
             device=ctx.roofline.device, roofline=ctx.roofline.source, intensity_min=ai[0], intensity_max=ai[-1]),
    )


@MEMORY.rule(
    "memory.copy_time", ">", 0.10, "share", 1.0,
    source=["kernel.by_class_ms.copy", "kernel.by_class_ms"],
    description="Share of kernel time spent in copy kernels (extra layout copies, casts).",
    suggest=memory_fix, one_run=True,
)
def copy_time_share(ctx: Context) -> Result:
    """Time in copy kernels over all kernel time, by kernel class."""
    by_class = ctx.run.kernel.by_class_ms
    if not by_class:
        if ctx.imported:
            return Missing(note("classify.not_recorded", what="class_time"), CAPTURE_TRACE)
        return Fact(None, "kernel.by_class_ms", note("classify.copies_in_layers"))
    total = sum(by_class.values())
    copy = by_class.get(KernelClass.COPY.value, 0.0)
    return Fact(copy / total if total > 0 else 0.0, "kernel.by_class_ms['copy']", note("classify.copy_time", copy_ms=copy, total_ms=total),
                amount=copy)


@MEMORY.rule(
    "memory.ncu_memory_bound", ">", 10.0, "points", 2.0,
    source=["ncu SpeedOfLight.memory_throughput_pct", "ncu SpeedOfLight.sm_throughput_pct"],
    description="The sparse GEMM is memory-bound by NVIDIA's Speed-of-Light rule (memory ahead of SM by 10+ points).",
    suggest=memory_fix, artifact="ncu",
)
def ncu_sparse_mem_minus_sm_pct(ctx: Context) -> Result:
    """Memory minus SM throughput % of the sparse GEMM; gated when both are low (latency-bound)."""
    kernel = sparse_ncu(ctx)
    if kernel is None:
        return Fact(None, "ncu", note("classify.ncu_not_applicable"))
    if isinstance(kernel, Missing):
        return kernel
    if kernel.sm_pct is None or kernel.mem_pct is None:
        return Missing(note("classify.ncu_metric_missing", report=ctx.ncu_source, section="SpeedOfLight", kernel=kernel.name),
                       CAPTURE_NCU)
    gate = None
    if kernel.sm_pct < LATENCY_BOUND_PCT and kernel.mem_pct < LATENCY_BOUND_PCT:
        gate = note("classify.latency_bound", below_pct=LATENCY_BOUND_PCT)
    return Fact(kernel.mem_pct - kernel.sm_pct, f"{ctx.ncu_source}: SpeedOfLight", ncu_detail(kernel), gate=gate)


@MEMORY.rule(
    "memory.ncu_spills", ">", 0.0, "requests", 1.0,
    source=["ncu MemoryWorkloadAnalysis.local_spill_requests"],
    description="The sparse GEMM spills registers to local memory.",
    suggest=memory_fix, artifact="ncu",
)
def ncu_sparse_spill_requests(ctx: Context) -> Result:
    """Local-memory spilling requests of the sparse GEMM in the attached Nsight Compute report."""
    kernel = sparse_ncu(ctx)
    if kernel is None:
        return Fact(None, "ncu", note("classify.ncu_not_applicable"))
    if isinstance(kernel, Missing):
        return kernel
    if kernel.spill_requests is None:
        return Missing(note("classify.ncu_metric_missing", report=ctx.ncu_source, section="MemoryWorkloadAnalysis",
                            kernel=kernel.name), CAPTURE_NCU)
    return Fact(kernel.spill_requests, f"{ctx.ncu_source}: MemoryWorkloadAnalysis", ncu_detail(kernel))
