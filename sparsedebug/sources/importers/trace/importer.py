"""Import a PyTorch profiler (Kineto) Chrome trace as a five-stage ``RunRecord``.

The pipeline, one module per step:

1. ``trace_events``: stream the file (``.json``/``.json.gz``) into GPU ops,
   launches, host ranges (ops, annotations, module calls, steps).
2. ``host_tree``: nest the host ranges per thread and link every GPU op to the
   innermost range around the call that launched it.
3. ``trace_layers``: the layer call of each GPU op (annotation, module call, or
   the top-level op the model called; kernel names for CUDA-graph replays and ops
   launched outside any op), its phase (forward, backward, optimizer), and a layer
   name that is stable across two profiles of the same model.
4. ``trace_iterations``: iteration windows (ProfilerStep, the period of the
   repeating call sequence, annotation repeats, graph launches, kernel-sequence
   period, whole trace).
5. ``trace_record``: op kind and shapes from the CPU ops, path from the kernel
   classes, dispatch evidence (backend, dtypes, strides, mask) for linear and
   attention layers.
6. ``trace_timeline``: busy/span/idle with HTA's idle split, per-stream figures
   and HTA's temporal breakdown (compute, non-compute, idle) under our convention
   and HTA's (last ProfilerStep dropped).

Run-record figures are per iteration (``schedule.span_samples_ms``,
``busy_samples_ms``, ``outcome.latency_samples_ms``; ``host_wait_ms`` and
``kernel_wait_ms`` summed over the gaps inside the complete iterations, partial
iterations left out: ``records.basis.per_iteration`` gives them per iteration); the whole-trace figures, including the gaps between iterations, are
in ``TraceSummary``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.core.kernel_names import classify_kernel
from sparsedebug.records.comparability import DeviceInfo
from sparsedebug.records.run import (
    GraphStage,
    KernelClass,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
    TimeWindow,
    TraceRuntime,
)
from sparsedebug.records.trace import IterationSummary, TraceImport, TraceSummary
from sparsedebug.sources.importers.trace.analysis.strip import iteration_strip
from sparsedebug.sources.importers.trace.analysis.timeline import (
    Timeline,
    streams,
    temporal_breakdowns,
    timeline,
)
from sparsedebug.sources.importers.trace.read.events import GPU_CATEGORIES, GpuOp, TraceEvents, gc_paused, read_events
from sparsedebug.sources.importers.trace.read.stream import untimed_summary
from sparsedebug.sources.importers.trace.record import (
    dense_share,
    group_layers,
    layer_idle,
    layer_records,
    tokens,
)
from sparsedebug.sources.importers.trace.structure.host_tree import children, link_launches, link_parents
from sparsedebug.sources.importers.trace.structure.iterations import (
    Iterations,
    annotation_iterations,
    assign,
    graph_launch_iterations,
    kernel_period_iterations,
    period_iterations,
    step_iterations,
    whole_trace,
)
from sparsedebug.sources.importers.trace.structure.layers import (
    LayerCall,
    LayerResolver,
    gpu_annotation_of,
    name_calls,
)
from sparsedebug.sources.importers.trace.structure.ops import first_dtype

__all__ = ["GpuOp", "IterationSummary", "Timeline", "TraceImport", "TraceSummary", "analyze_events", "analyze_trace", "import_trace", "timeline"]


def busiest_device(ops: list[GpuOp]) -> int:
    """The device with the most GPU ops: the one a trace's analysis (and a rank's summary) reads."""
    devices: Counter[int] = Counter(op.device for op in ops)
    return max(devices, key=lambda d: devices[d])


def _device_ops(trace: TraceEvents, chosen: int | None = None) -> tuple[list[GpuOp], int]:
    """The ops of ``chosen`` (default: the busiest device), sorted by start; the others counted as skipped when not chosen."""
    devices: Counter[int] = Counter(op.device for op in trace.gpu)
    device = busiest_device(trace.gpu) if chosen is None else chosen
    if len(devices) > 1 and chosen is None:
        trace.skipped[f"gpu_op:other_device:{device}"] += len(trace.gpu) - devices[device]
    return sorted((op for op in trace.gpu if op.device == device), key=lambda op: (op.ts, op.end)), device


def _iterations(trace: TraceEvents, resolver: LayerResolver, ops: list[GpuOp], calls: dict[int, LayerCall]) -> Iterations:
    found = step_iterations(trace)
    if found is not None:
        return found
    sequence = resolver.main_sequence()
    if sequence:
        found = period_iterations(sequence, [resolver.call_signature(r) for r in sequence])
        if found is not None:
            return found
    launch_order = sorted(ops, key=lambda op: (op.launch_ts if op.launch_ts is not None else op.ts, op.ts))
    host_annotations = [calls[id(op)].range for op in launch_order if calls[id(op)].identity == "annotation"]
    first = next((r for r in host_annotations if r is not None and r.index < len(trace.ranges) and trace.ranges[r.index] is r), None)
    if first is not None:
        found = annotation_iterations(first.name, [r for r in trace.ranges if r.kind == "annotation" and resolver.is_layer_range(r)])
        if found is not None:
            return found
    return graph_launch_iterations(trace) or kernel_period_iterations(ops) or whole_trace(ops, trace.ranges)


def _link_layers(trace: TraceEvents, ops: list[GpuOp], kids: list[list[int]]) -> tuple[LayerResolver, dict[int, LayerCall], Iterations]:
    """Layer call of every op, the iterations, and the layer names (set on the ops); ``kids``: ``children`` of the ranges."""
    resolver = LayerResolver(trace, kids)
    gpu_annotations = gpu_annotation_of(trace, ops)
    calls = {id(op): resolver.call_for_op(op, gpu_annotations.get(k)) for k, op in enumerate(ops)}
    iterations = _iterations(trace, resolver, ops, calls)
    name_calls(resolver, iterations.index_of)
    dtypes: dict[int, str | None] = {}  # first input dtype by id of the (shared, read-only) Input type list
    classes: dict[tuple[str, str | None], KernelClass] = {}
    for op in ops:
        call = calls[id(op)]
        op.layer, op.phase = call.name, call.phase
        op.call = None if call.identity == "kernel" else call.key
        host = trace.ranges[op.host] if op.host is not None else None
        dtype = None
        if host is not None and host.kind == "op":
            key = id(host.types)  # the ranges hold these lists alive, so ids stay unique here
            dtype = dtypes[key] if key in dtypes else dtypes.setdefault(key, first_dtype(host))
        cls = classes.get((op.name, dtype))
        if cls is None:
            cls = classes[(op.name, dtype)] = classify_kernel(op.name, dtype)
        op.cls = cls
    return resolver, calls, iterations


def _iteration_figures(groups: list[list[GpuOp]], iterations: Iterations) -> tuple[list[IterationSummary], Timeline]:
    """Per-iteration summaries, and the sums of their idle split (complete iterations only)."""
    out: list[IterationSummary] = []
    host = kern = 0.0
    previous_end = float("-inf")
    for index, (group, (start, host_end)) in enumerate(zip(groups, iterations.windows, strict=True)):
        if not group:
            continue
        tl = timeline(group)
        end = max(max(op.end for op in group), host_end)
        # an iteration issued while the previous one still ran starts when the GPU frees up
        begin = max(start, previous_end)
        latency = (end - begin) / 1e3
        previous_end = end
        partial = index in iterations.partial
        out.append(IterationSummary(index=index, gpu_ops=len(group), span_ms=tl.span_ms, busy_ms=tl.busy_ms, latency_ms=latency, partial=partial,
                                    start_us=begin, end_us=end))
        if not partial:
            host += tl.host_wait_ms
            kern += tl.kernel_wait_ms
    return out, Timeline(0.0, 0.0, host, kern, 0.0)


def analyze_trace(
    path: Path, *, include_last_step: bool = False, events: TraceEvents | None = None, allow_dropped: bool = False
) -> TraceImport:
    """Read a Kineto trace and build the run record and the whole-trace summary.

    ``include_last_step`` switches the HTA-convention breakdown to HTA's
    ``include_last_profiler_step=True``. ``events``: the trace already read by
    ``read_events(path)`` (the run-set summary reads it once for both). A trace whose
    kernel events were all dropped (no usable timing) is refused unless ``allow_dropped``:
    a run without its kernels is not a measurement of them.
    """
    with gc_paused():
        return _analyze_trace(path, include_last_step, read_events(path) if events is None else events, allow_dropped)


def analyze_events(path: Path, events: TraceEvents, *, source_kind: str, name: str, device: int | None = None) -> TraceImport:
    """The run record and summary of events read from another profiler's file (``read.activity``: Nsight Systems,
    rocprofv3), through the same pipeline as a trace's; ``source_kind`` is the run's ``RunSource.kind``, ``device``
    the device analysed (default: the busiest)."""
    with gc_paused():
        return _analyze_trace(path, False, events, source_kind=source_kind, name=name, device=device)


def _analyze_trace(
    path: Path, include_last_step: bool, trace: TraceEvents, allow_dropped: bool = False, *,
    source_kind: str = "torch_trace", name: str | None = None, device: int | None = None,
) -> TraceImport:
    if not trace.gpu:
        raise UserError(
            f"{path}: no GPU activity (events of cat kernel/gpu_memset/gpu_memcpy with ts and dur)"
            + (untimed_summary(trace.skipped, GPU_CATEGORIES) or ": profile with ProfilerActivity.CUDA")
        )
    dropped = untimed_summary(trace.skipped, {"kernel"})
    if dropped and not allow_dropped and not any(op.is_kernel for op in trace.gpu):
        raise UserError(
            f"{path}: every kernel event was dropped{dropped}; pass --allow-dropped to import the trace without its kernels"
        )
    by_thread = link_parents(trace.ranges)
    link_launches(trace, by_thread)
    ops, device = _device_ops(trace, device)
    resolver, calls, iterations = _link_layers(trace, ops, children(trace.ranges, by_thread))
    groups = assign(ops, iterations)
    summaries, waits = _iteration_figures(groups, iterations)
    complete = [it for it in summaries if not it.partial] or summaries
    if not summaries:
        raise UserError(f"{path}: no GPU op falls inside any iteration ({iterations.source}); the trace has no usable iterations")

    # The run's figures cover the profiled iterations only: GPU ops before the first (a warm-up's) stay in the
    # whole-trace summary, never in the layers' samples, the class totals or the run's time window.
    inside = {id(op) for group in groups for op in group}
    whole_ops, ops = ops, [op for op in ops if id(op) in inside]
    layers = group_layers(ops, calls)
    entries = [layer_records(layer, resolver) for layer in layers]
    graph_layers = [e.graph for e in entries]
    lower_layers = [e.lower for e in entries]
    by_class: dict[str, float] = defaultdict(float)
    for op in ops:
        by_class[op.cls.value] += op.dur / 1e3
    sparse_layers = {layer.name for layer in lower_layers if layer.path is KernelPath.SPARSE}
    device_info = device_of_trace(trace.metadata, device, ops)
    device_name = device_info.name
    with_calls = {layer.name for layer in layers if layer.calls[0].identity != "kernel"}
    record = RunRecord(
        name=_stem(path) if name is None else name,
        source=RunSource(
            kind=source_kind, files=[trace.digest or file_digest(path)], window=_window(trace.metadata, trace.ts_base, ops),
            iteration_windows=_iteration_windows(trace.metadata, trace.ts_base, complete),
            runtime=_runtime(trace.metadata, device, device_name, lower_layers, any(op.launch_name.startswith("cudaGraphLaunch") for op in ops)),
        ),
        graph=GraphStage(layers=graph_layers, tokens=tokens(graph_layers)),
        device=device_info,
        lower=LowerStage(backend=f"{device_info.family}:{device_name}" if device_name else device_info.family, layers=lower_layers),
        kernel=KernelStage(layers=[e.kernel for e in entries], by_class_ms=dict(by_class)),
        schedule=ScheduleStage(
            span_samples_ms=[it.span_ms for it in complete],
            busy_samples_ms=[it.busy_ms for it in complete],
            host_wait_ms=waits.host_wait_ms,
            kernel_wait_ms=waits.kernel_wait_ms,
            launches_per_iteration=round(sum(it.gpu_ops for it in complete) / len(complete)),
            dense_share=dense_share([g for i, g in enumerate(groups) if i not in iterations.partial], sparse_layers),
            layer_idle_samples_ms=layer_idle(ops, with_calls),
            timeline=iteration_strip(groups),
        ),
        outcome=OutcomeStage(latency_samples_ms=[it.latency_ms for it in complete], latency_timing="traced"),
    )
    summary = _summary(path, trace, whole_ops, device_name, iterations, summaries, layers, include_last_step)
    summary.by_class_ms = dict(by_class)
    return TraceImport(record=record, summary=summary)


def _summary(
    path: Path, trace: TraceEvents, ops: list[GpuOp], device_name: str | None, iterations: Iterations,
    summaries: list[IterationSummary], layers: list[Any], include_last_step: bool,
) -> TraceSummary:
    whole = timeline(ops)
    sources = Counter(layer.calls[0].identity for layer in layers)
    phases: dict[str, list[GpuOp]] = defaultdict(list)
    for op in ops:
        phases[op.phase].append(op)
    return TraceSummary(
        file=str(path),
        device=device_name,
        gpu_ops=len(ops),
        kernels=sum(1 for op in ops if op.is_kernel),
        busy_ms=whole.busy_ms,
        span_ms=whole.span_ms,
        idle_ms=whole.idle_ms,
        host_wait_ms=whole.host_wait_ms,
        kernel_wait_ms=whole.kernel_wait_ms,
        other_wait_ms=whole.other_wait_ms,
        iteration_source=iterations.source,
        iteration_detail=iterations.detail,
        iterations=summaries,
        by_class_ms={},
        annotated=sources.get("annotation", 0) > 0,
        layers=len(layers),
        layer_sources=dict(sources),
        cuda_graph=any(op.launch_name.startswith("cudaGraphLaunch") for op in ops),
        phases_ms={phase: timeline(items).busy_ms for phase, items in phases.items()},
        streams=streams(ops),
        temporal=temporal_breakdowns(trace, ops, include_last_step=include_last_step),
        skipped_events=dict(trace.skipped),
    )


def import_trace(path: Path) -> RunRecord:
    """Import a PyTorch profiler Chrome trace (``.json`` or ``.json.gz``) as a ``RunRecord``."""
    return analyze_trace(path).record


def _cuda_version(value: Any) -> str | None:
    """``13000`` -> ``13.0`` (CUDA's major * 1000 + minor * 10); None when absent or not a number."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _runtime(metadata: dict[str, Any], device: int, device_name: str | None, layers: list[LowerLayer], cuda_graph: bool) -> TraceRuntime:
    capability = None
    props = metadata.get("deviceProperties")
    if isinstance(props, list):
        for prop in props:
            if isinstance(prop, dict) and prop.get("id") == device and isinstance(prop.get("computeMajor"), int) and isinstance(prop.get("computeMinor"), int):
                capability = f"{prop['computeMajor']}.{prop['computeMinor']}"
    sparse = [layer.dispatch for layer in layers if layer.path is KernelPath.SPARSE and layer.dispatch is not None]
    cupti = metadata.get("cupti_version")
    return TraceRuntime(
        cuda_runtime=_cuda_version(metadata.get("cuda_runtime_version")), cuda_driver=_cuda_version(metadata.get("cuda_driver_version")),
        cupti=str(cupti) if isinstance(cupti, int | str) and not isinstance(cupti, bool) else None, device=device_name, capability=capability,
        sparse_backends=sorted({d.backend for d in sparse if d.backend}), sparse_ops=sorted({d.backend_op for d in sparse if d.backend_op}),
        cuda_graph=cuda_graph,
    )


def _base_time_s(metadata: dict[str, Any]) -> float | None:
    """The trace's ``baseTimeNanoseconds`` in UTC seconds since the epoch; None when absent or not a positive number."""
    base = metadata.get("baseTimeNanoseconds")
    if not isinstance(base, int | float) or isinstance(base, bool) or base <= 0:
        return None
    return base / 1e9


def _window(metadata: dict[str, Any], ts_base: float | None, ops: list[GpuOp]) -> TimeWindow | None:
    """The GPU ops' absolute UTC window: the trace's ``baseTimeNanoseconds`` plus their raw timestamps (None without it)."""
    base_s = _base_time_s(metadata)
    if base_s is None or not ops:
        return None
    start = min(op.ts for op in ops) + (ts_base or 0.0)
    end = max(op.ts + op.dur for op in ops) + (ts_base or 0.0)
    return TimeWindow(start_utc_s=base_s + start / 1e6, end_utc_s=base_s + end / 1e6,
                      source="baseTimeNanoseconds + first/last GPU op timestamp")


def _iteration_windows(metadata: dict[str, Any], ts_base: float | None, iterations: list[IterationSummary]) -> list[TimeWindow]:
    """Each iteration's latency interval in absolute UTC (the run record's latency samples, in order); empty without
    ``baseTimeNanoseconds``."""
    base_s = _base_time_s(metadata)
    if base_s is None:
        return []
    shift = base_s + (ts_base or 0.0) / 1e6
    return [TimeWindow(start_utc_s=shift + it.start_us / 1e6, end_utc_s=shift + it.end_us / 1e6,
                       source=f"baseTimeNanoseconds + iteration {it.index}'s latency interval")
            for it in iterations if it.start_us is not None and it.end_us is not None]


def _device_properties(metadata: dict[str, Any], device: int) -> dict[str, Any]:
    props = metadata.get("deviceProperties")
    if not isinstance(props, list):
        return {}
    entries = [prop for prop in props if isinstance(prop, dict)]
    mine = [prop for prop in entries if prop.get("id") == device]
    return mine[0] if mine else (entries[0] if len(entries) == 1 else {})


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def device_of_trace(metadata: dict[str, Any], device: int, ops: list[GpuOp]) -> DeviceInfo:
    """The GPU a trace ran on, from what it says: deviceProperties, and the runtime its launches went through.

    ROCm (HIP) is told from the trace itself: launches through ``hip*`` runtime calls,
    a ``gcnArchName`` property, a 64-wide wavefront (``warpSize``) or an AMD device name
    (or ``vendor: AMD``, which ``read.activity`` writes for a ROCm profile's agents);
    anything else with a GPU timeline is CUDA.
    """
    prop = _device_properties(metadata, device)
    name = prop.get("name") if isinstance(prop.get("name"), str) and prop.get("name") else None
    warp = _int(prop.get("warpSize"))
    hip_launches = sum(1 for op in ops if op.launch_name.lower().startswith("hip"))
    rocm = (
        "gcnArchName" in prop or prop.get("vendor") == "AMD" or warp == 64 or hip_launches > len(ops) // 2
        or (name is not None and name.upper().startswith(("AMD", "RADEON")))
    )
    major, minor = prop.get("computeMajor"), prop.get("computeMinor")
    capability = f"{major}.{minor}" if isinstance(major, int) and isinstance(minor, int) else None
    if isinstance(prop.get("gcnArchName"), str):
        capability = str(prop["gcnArchName"]).split(":")[0]
    first = name.split()[0].upper() if name else ""
    vendor = "AMD" if rocm else ("NVIDIA" if first in ("NVIDIA", "TESLA", "GEFORCE", "QUADRO") or name is None else name.split()[0])
    return DeviceInfo(
        kind="gpu", family="rocm" if rocm else "cuda", vendor=vendor, name=name, compute_capability=capability,
        multiprocessors=_int(prop.get("numSms")), memory_bytes=_int(prop.get("totalGlobalMem")), warp_size=warp,
    )


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name or path.name
