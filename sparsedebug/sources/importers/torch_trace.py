"""Import a PyTorch profiler (Kineto) Chrome trace as a five-stage ``RunRecord``.

What is read from the trace (``.json`` or ``.json.gz``, streamed event by event):

* GPU activity: events of category ``kernel``, ``gpu_memset`` and ``gpu_memcpy``
  with ``ts``/``dur`` (microseconds), the ``stream``/``device`` and the
  ``correlation`` id that links each one to the CUDA runtime/driver call that
  launched it (``cuda_runtime``/``cuda_driver`` events, also linked by ``ac2g`` flows).
* Layers: ``user_annotation`` ranges (``record_function`` names such as
  ``layers.0.mlp.down_proj``). A kernel belongs to the innermost annotation that
  encloses its launch call on the launching thread (``gpu_user_annotation`` on its
  stream when the launch is unknown). Kernels outside every annotation, and every
  kernel of a trace without annotations, form one layer per kernel name.
* Shapes and dtype: the ``Input Dims``/``Input type`` of the first operator
  (``cpu_op``) inside each annotation, present when ``record_shapes=True``.
* Iterations: ``ProfilerStep#N`` ranges when present; otherwise each repeat of
  the first layer's annotation starts an iteration; otherwise each
  ``cudaGraphLaunch``; otherwise the whole trace is one iteration.

GPU busy time is the length of the union of GPU activity intervals; span is first
start to last end; idle = span - busy. Each idle gap (between the end of
the busy interval before it and the start of the next GPU op) is split as Holistic
Trace Analysis does: *host wait* when the call that launched the next op started
after the previous op ended (the GPU waited for the CPU to enqueue work),
*kernel wait* when the launch was already queued (launch latency between
back-to-back kernels), *other* when the next op has no linked launch call. HTA
walks the gaps of each stream; here the gaps are those of the device-wide union
of all streams, so host + kernel + other wait always add up to span - busy (on a
single stream, as in the H200 traces, the two definitions agree).

Run-record figures are per iteration (``schedule.span_samples_ms``,
``busy_samples_ms``, ``outcome.latency_samples_ms``; ``host_wait_ms`` and
``kernel_wait_ms`` summed over the gaps inside iterations); the whole-trace
figures, including the gaps between iterations, are in ``TraceSummary``.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.records.run import (
    FallbackReason,
    GraphLayer,
    GraphStage,
    KernelClass,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
)
from sparsedebug.sources.importers.jsonstream import iter_trace, untimed, untimed_summary, well_formed
from sparsedebug.sources.importers.kernel_names import GEMM_CLASSES, classify_kernel, primary_class

GPU_CATEGORIES = frozenset({"kernel", "gpu_memset", "gpu_memcpy"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
_KEPT_CATEGORIES = GPU_CATEGORIES | LAUNCH_CATEGORIES | {"user_annotation", "gpu_user_annotation", "cpu_op"}

_DTYPES = {
    "c10::half": "fp16",
    "c10::bfloat16": "bf16",
    "float": "fp32",
    "double": "fp64",
    "c10::float8_e4m3fn": "fp8_e4m3",
    "c10::float8_e5m2": "fp8_e5m2",
    "signed char": "int8",
    "int": "int32",
    "long int": "int64",
}
_DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}
_LINEAR_OPS = ("aten::linear", "aten::addmm", "aten::mm", "aten::matmul", "aten::_cslt_sparse_mm", "aten::_sparse_semi_structured_linear")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IterationSummary(_Model):
    """One traced iteration (forward/step) on the GPU timeline."""

    index: int
    gpu_ops: int
    span_ms: float = Field(description="First GPU op start to last GPU op end of this iteration.")
    busy_ms: float = Field(description="Union of this iteration's GPU op intervals.")
    latency_ms: float = Field(
        description="From the iteration's start on the host (or the previous iteration's end, if later) to its last GPU op end (or host end, if later)."
    )


class TraceSummary(_Model):
    """Whole-trace GPU timeline figures, as printed by `sparsedebug import trace`."""

    file: str
    device: str | None
    gpu_ops: int
    kernels: int
    busy_ms: float
    span_ms: float
    idle_ms: float
    host_wait_ms: float
    kernel_wait_ms: float
    other_wait_ms: float
    iteration_source: str = Field(description="ProfilerStep, annotation:<name>, cudaGraphLaunch or whole trace.")
    iterations: list[IterationSummary]
    by_class_ms: dict[str, float]
    annotated: bool
    layers: int
    skipped_events: dict[str, int] = Field(default_factory=dict, description="Events ignored, by reason.")


class TraceImport(_Model):
    """The imported run record plus the whole-trace summary behind it."""

    record: RunRecord
    summary: TraceSummary


# --------------------------------------------------------------------------- raw events


@dataclass(slots=True)
class GpuOp:
    """One kernel/memset/memcpy on the GPU timeline (times in microseconds)."""

    name: str
    ts: float
    dur: float
    device: int
    stream: int
    correlation: int | None
    is_kernel: bool
    cls: KernelClass = KernelClass.OTHER
    launch_ts: float | None = None
    launch_thread: tuple[Any, Any] | None = None
    layer: str | None = None
    call: int | None = None  # index of the annotation instance the op belongs to

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True)
class _Range:
    name: str
    ts: float
    end: float
    thread: tuple[Any, Any]
    index: int = 0


@dataclass
class _Trace:
    gpu: list[GpuOp] = field(default_factory=list)
    launches: dict[int, tuple[float, tuple[Any, Any], str]] = field(default_factory=dict)
    flow_starts: dict[Any, tuple[float, tuple[Any, Any]]] = field(default_factory=dict)
    annotations: list[_Range] = field(default_factory=list)
    gpu_annotations: list[_Range] = field(default_factory=list)
    steps: list[_Range] = field(default_factory=list)
    cpu_ops: list[tuple[float, float, tuple[Any, Any], str, Any, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    metadata: dict[str, Any] = field(default_factory=dict)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _read(path: Path) -> _Trace:
    trace = _Trace()
    want_first: set[tuple[Any, Any]] = set()
    want_linear: set[tuple[Any, Any]] = set()
    for event in iter_trace(path, trace.metadata):
        if not isinstance(event, dict):
            trace.skipped["not an object"] += 1
            continue
        if not well_formed(event):
            trace.skipped["malformed (a list or object as ph, cat, name, pid, tid or id)"] += 1
            continue
        cat = event.get("cat")
        ph = event.get("ph")
        if ph in ("s", "f") and cat == "ac2g":
            if ph == "s":
                ts = _num(event.get("ts"))
                if ts is not None and "id" in event:
                    trace.flow_starts[event["id"]] = (ts, (event.get("pid"), event.get("tid")))
            continue
        if ph != "X" or cat not in _KEPT_CATEGORIES:
            continue
        name = event.get("name")
        args = event.get("args")
        if not isinstance(args, dict):
            args = {}
        if cat == "cpu_op" and "Input Dims" not in args and not (isinstance(name, str) and name.startswith("ProfilerStep#")):
            continue  # the bulk of a trace: operators without recorded shapes
        ts = _num(event.get("ts"))
        dur = _num(event.get("dur"))
        if ts is None or dur is None or dur < 0:
            if cat in GPU_CATEGORIES or cat in LAUNCH_CATEGORIES or cat in ("user_annotation", "gpu_user_annotation"):
                trace.skipped[f"{cat} {untimed(ts, dur)}"] += 1
            continue
        thread = (event.get("pid"), event.get("tid"))
        if cat in GPU_CATEGORIES:
            if not isinstance(name, str) or not name:
                name = "<unnamed kernel>"
                trace.skipped["kernel without name (kept as <unnamed kernel>)"] += 1
            device = _int(args.get("device"))
            stream = _int(args.get("stream"))
            trace.gpu.append(
                GpuOp(
                    name=name,
                    ts=ts,
                    dur=dur,
                    device=device if device is not None else _int(event.get("pid")) or 0,
                    stream=stream if stream is not None else _int(event.get("tid")) or 0,
                    correlation=_int(args.get("correlation")),
                    is_kernel=cat == "kernel",
                )
            )
        elif cat in LAUNCH_CATEGORIES:
            corr = _int(args.get("correlation"))
            if corr is not None:
                trace.launches[corr] = (ts, thread, name if isinstance(name, str) else "")
        elif cat == "user_annotation" or (cat == "cpu_op" and isinstance(name, str) and name.startswith("ProfilerStep#")):
            if not isinstance(name, str) or not name:
                trace.skipped["annotation without name"] += 1
                continue
            target = trace.steps if name.startswith("ProfilerStep#") else trace.annotations
            target.append(_Range(name, ts, ts + dur, thread))
            if target is trace.annotations:
                want_first.add(thread)
                want_linear.add(thread)
        elif cat == "gpu_user_annotation":
            if isinstance(name, str) and name and not name.startswith("ProfilerStep#"):
                trace.gpu_annotations.append(_Range(name, ts, ts + dur, thread))
        elif cat == "cpu_op" and isinstance(name, str) and "Input Dims" in args:
            # keep only what _first_ops can choose: the first operator and the first linear
            # operator after each annotation start on the thread (memory stays bounded)
            linear = name in _LINEAR_OPS
            if thread in want_first or (linear and thread in want_linear):
                want_first.discard(thread)
                if linear:
                    want_linear.discard(thread)
                trace.cpu_ops.append((ts, ts + dur, thread, name, args.get("Input Dims"), args.get("Input type")))
    return trace


# --------------------------------------------------------------------------- linking


def _innermost(ranges: list[_Range], points: list[tuple[float, int]]) -> dict[int, _Range]:
    """For each (time, key) point, the innermost range containing it (ranges of one thread, properly nested).

    One sweep over ranges sorted by (start, -end) and points sorted by time, with a
    stack of open ranges: O((R + P) log (R + P)).
    """
    order = sorted(ranges, key=lambda r: (r.ts, -r.end))
    result: dict[int, _Range] = {}
    stack: list[_Range] = []
    i = 0
    for t, key in sorted(points):
        while i < len(order) and order[i].ts <= t:
            while stack and stack[-1].end < order[i].ts:
                stack.pop()
            stack.append(order[i])
            i += 1
        while stack and stack[-1].end < t:
            stack.pop()
        # a range popped late may hide an enclosing one that is still open: walk down
        j = len(stack) - 1
        while j >= 0 and not (stack[j].ts <= t <= stack[j].end):
            j -= 1
        if j >= 0:
            result[key] = stack[j]
    return result


def _link(trace: _Trace) -> None:
    """Attach to each GPU op its launch call (time, thread) and its layer."""
    flow_by_corr = trace.flow_starts
    for op in trace.gpu:
        if op.correlation is None:
            continue
        launch = trace.launches.get(op.correlation)
        if launch is not None:
            op.launch_ts, op.launch_thread = launch[0], launch[1]
        elif op.correlation in flow_by_corr:
            op.launch_ts, op.launch_thread = flow_by_corr[op.correlation]

    for index, ann in enumerate(trace.annotations):
        ann.index = index
    for index, ann in enumerate(trace.gpu_annotations):
        ann.index = len(trace.annotations) + index

    by_thread: dict[tuple[Any, Any], list[_Range]] = defaultdict(list)
    for ann in trace.annotations:
        by_thread[ann.thread].append(ann)
    points: dict[tuple[Any, Any], list[tuple[float, int]]] = defaultdict(list)
    for k, op in enumerate(trace.gpu):
        if op.launch_ts is not None and op.launch_thread in by_thread:
            points[op.launch_thread].append((op.launch_ts, k))
    for thread, pts in points.items():
        for k, ann in _innermost(by_thread[thread], pts).items():
            trace.gpu[k].layer, trace.gpu[k].call = ann.name, ann.index

    gpu_by_stream: dict[tuple[Any, Any], list[_Range]] = defaultdict(list)
    for ann in trace.gpu_annotations:
        gpu_by_stream[ann.thread].append(ann)
    if gpu_by_stream:
        gpu_points: dict[tuple[Any, Any], list[tuple[float, int]]] = defaultdict(list)
        for k, op in enumerate(trace.gpu):
            if op.layer is None:
                for thread in gpu_by_stream:
                    if _int(thread[1]) == op.stream:
                        gpu_points[thread].append((op.ts + op.dur / 2.0, k))
        for thread, pts in gpu_points.items():
            for k, ann in _innermost(gpu_by_stream[thread], pts).items():
                trace.gpu[k].layer, trace.gpu[k].call = ann.name, ann.index

    for op in trace.gpu:
        op.cls = classify_kernel(op.name)
        if op.layer is None:
            op.layer = op.name


# --------------------------------------------------------------------------- timeline


@dataclass(frozen=True)
class Timeline:
    """GPU busy/span/idle figures of a set of ops (milliseconds)."""

    busy_ms: float
    span_ms: float
    host_wait_ms: float
    kernel_wait_ms: float
    other_wait_ms: float

    @property
    def idle_ms(self) -> float:
        return self.span_ms - self.busy_ms


def timeline(ops: list[GpuOp]) -> Timeline:
    """Busy (union of intervals), span and the HTA idle split of ``ops`` on one device."""
    if not ops:
        return Timeline(0.0, 0.0, 0.0, 0.0, 0.0)
    ordered = sorted(ops, key=lambda op: (op.ts, op.end))
    busy = host = kern = other = 0.0
    seg_start = ordered[0].ts
    seg_end = ordered[0].end
    for op in ordered[1:]:
        if op.ts > seg_end:
            busy += seg_end - seg_start
            gap = op.ts - seg_end
            if op.launch_ts is None:
                other += gap
            elif op.launch_ts > seg_end:
                host += gap
            else:
                kern += gap
            seg_start, seg_end = op.ts, op.end
        elif op.end > seg_end:
            seg_end = op.end
    busy += seg_end - seg_start
    span = max(op.end for op in ordered) - ordered[0].ts
    return Timeline(busy / 1e3, span / 1e3, host / 1e3, kern / 1e3, other / 1e3)


def _iterations(trace: _Trace, ops: list[GpuOp], layer_order: list[str]) -> tuple[str, list[tuple[float, float]]]:
    """Iteration windows on the host clock as (start, host end), and where they came from."""
    if trace.steps:
        steps = sorted(trace.steps, key=lambda r: r.ts)
        return "ProfilerStep", [(s.ts, s.end) for s in steps]
    if trace.annotations and layer_order:
        first = layer_order[0]
        starts = sorted(a.ts for a in trace.annotations if a.name == first)
        if starts:
            ordered = sorted(trace.annotations, key=lambda a: a.ts)
            windows: list[tuple[float, float]] = []
            j = 0
            for i, start in enumerate(starts):
                nxt = starts[i + 1] if i + 1 < len(starts) else float("inf")
                host_end = start
                while j < len(ordered) and ordered[j].ts < nxt:
                    if ordered[j].ts >= start:
                        host_end = max(host_end, ordered[j].end)
                    j += 1
                windows.append((start, host_end))
            return f"annotation:{first}", windows
    graph_launches = sorted(ts for ts, _thread, name in trace.launches.values() if name.startswith("cudaGraphLaunch"))
    if graph_launches:
        return "cudaGraphLaunch", [(ts, ts) for ts in graph_launches]
    start = min(op.launch_ts if op.launch_ts is not None else op.ts for op in ops)
    return "whole trace", [(start, start)]


def _assign_iterations(ops: list[GpuOp], windows: list[tuple[float, float]]) -> list[list[GpuOp]]:
    starts = [w[0] for w in windows]
    groups: list[list[GpuOp]] = [[] for _ in windows]
    for op in ops:
        t = op.launch_ts if op.launch_ts is not None else op.ts
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0:
            groups[i].append(op)
    return groups


# --------------------------------------------------------------------------- graph details


def _dtype(types: Any) -> str | None:
    if isinstance(types, list) and types and isinstance(types[0], str):
        return _DTYPES.get(types[0].lower(), types[0] or None)
    return None


def _shape(dims: Any, index: int) -> list[int] | None:
    if isinstance(dims, list) and len(dims) > index:
        item = dims[index]
        if isinstance(item, list) and item and all(isinstance(d, int) and not isinstance(d, bool) for d in item):
            return list(item)
    return None


def _first_ops(trace: _Trace) -> dict[int, tuple[str, Any, Any]]:
    """For each annotation instance, the first operator with shapes recorded inside it (linear ops preferred)."""
    found: dict[int, tuple[str, Any, Any]] = {}
    by_thread: dict[tuple[Any, Any], list[_Range]] = defaultdict(list)
    for ann in trace.annotations:
        by_thread[ann.thread].append(ann)
    ops_by_thread: dict[tuple[Any, Any], list[tuple[float, int]]] = defaultdict(list)
    for k, op in enumerate(trace.cpu_ops):
        ops_by_thread[op[2]].append((op[0], k))
    hits: dict[int, list[int]] = defaultdict(list)
    for thread, pts in ops_by_thread.items():
        if thread in by_thread:
            for k, ann in _innermost(by_thread[thread], pts).items():
                hits[ann.index].append(k)
    for index, ks in hits.items():
        ks.sort(key=lambda k: trace.cpu_ops[k][0])
        chosen = next((k for k in ks if trace.cpu_ops[k][3] in _LINEAR_OPS), ks[0])
        _ts, _end, _thread, name, dims, types = trace.cpu_ops[chosen]
        found[index] = (name, dims, types)
    return found


def _op_kind(name: str, classes: set[KernelClass], cpu_op: str | None) -> OpKind:
    leaf = name.lower().rsplit(".", 1)[-1]
    if classes & GEMM_CLASSES or (cpu_op in _LINEAR_OPS):
        return OpKind.LINEAR
    if KernelClass.ATTENTION in classes or "attn" in leaf or "sdpa" in leaf:
        return OpKind.ATTENTION
    if "norm" in leaf:
        return OpKind.NORM
    if leaf in ("act", "act_fn", "activation") or any(tag in leaf for tag in ("silu", "gelu", "relu", "swiglu")):
        return OpKind.ACTIVATION
    if "embed" in leaf:
        return OpKind.EMBEDDING
    if classes and classes <= {KernelClass.ELEMENTWISE, KernelClass.COPY}:
        return OpKind.ELEMENTWISE
    return OpKind.OTHER


# --------------------------------------------------------------------------- record


def analyze_trace(path: Path) -> TraceImport:
    """Read a Kineto trace and build the run record and the whole-trace summary."""
    trace = _read(path)
    if not trace.gpu:
        raise UserError(
            f"{path}: no GPU activity (events of cat kernel/gpu_memset/gpu_memcpy with ts and dur)"
            + (untimed_summary(trace.skipped, GPU_CATEGORIES) or ": profile with ProfilerActivity.CUDA")
        )
    _link(trace)

    devices: dict[int, int] = defaultdict(int)
    for op in trace.gpu:
        devices[op.device] += 1
    device = max(devices, key=lambda d: devices[d])
    if len(devices) > 1:
        trace.skipped[f"GPU ops on devices other than {device} (analysed the busiest device only)"] += len(trace.gpu) - devices[device]
    ops = sorted((op for op in trace.gpu if op.device == device), key=lambda op: (op.ts, op.end))

    layer_order: list[str] = []
    per_layer: dict[str, list[GpuOp]] = defaultdict(list)
    for op in sorted(ops, key=lambda op: (op.launch_ts if op.launch_ts is not None else op.ts, op.ts)):
        if op.layer not in per_layer:
            layer_order.append(op.layer or op.name)
        per_layer[op.layer or op.name].append(op)
    annotated_names = {a.name for a in trace.annotations} | {a.name for a in trace.gpu_annotations}
    ann_layers = [name for name in layer_order if name in annotated_names]

    source, windows = _iterations(trace, ops, ann_layers)
    groups = _assign_iterations(ops, windows)
    iterations: list[IterationSummary] = []
    span_samples: list[float] = []
    busy_samples: list[float] = []
    latency_samples: list[float] = []
    host_in = kern_in = 0.0
    previous_end = float("-inf")
    for index, (group, (start, host_end)) in enumerate(zip(groups, windows, strict=True)):
        if not group:
            continue
        tl = timeline(group)
        end = max(max(op.end for op in group), host_end)
        # an iteration issued while the previous one still ran starts when the GPU frees up
        latency = (end - max(start, previous_end)) / 1e3
        previous_end = end
        iterations.append(IterationSummary(index=index, gpu_ops=len(group), span_ms=tl.span_ms, busy_ms=tl.busy_ms, latency_ms=latency))
        span_samples.append(tl.span_ms)
        busy_samples.append(tl.busy_ms)
        latency_samples.append(latency)
        host_in += tl.host_wait_ms
        kern_in += tl.kernel_wait_ms
    if not iterations:
        raise UserError(f"{path}: no GPU op falls inside any iteration ({source}); the trace has no usable iterations")

    whole = timeline(ops)
    by_class: dict[str, float] = defaultdict(float)
    for op in ops:
        by_class[op.cls.value] += op.dur / 1e3

    first_ops = _first_ops(trace)
    graph_layers: list[GraphLayer] = []
    lower_layers: list[LowerLayer] = []
    kernel_layers: list[KernelLayer] = []
    for name in layer_order:
        layer_ops = per_layer[name]
        classes = {op.cls for op in layer_ops}
        cls = primary_class(classes)
        calls: dict[Any, float] = defaultdict(float)
        for position, op in enumerate(layer_ops):
            calls[op.call if op.call is not None else ("op", position)] += op.dur / 1e3
        layer_by_class: dict[str, float] = defaultdict(float)
        for op in layer_ops:
            layer_by_class[op.cls.value] += op.dur / 1e3
        call_ids = [op.call for op in layer_ops if op.call is not None]
        cpu = first_ops.get(call_ids[0]) if call_ids else None
        cpu_name, dims, types = cpu if cpu is not None else (None, None, None)
        kind = _op_kind(name, classes, cpu_name)
        dtype = _dtype(types) or "unknown"
        sparse = KernelClass.SPARSE_GEMM in classes
        graph_layers.append(_graph_layer(name, kind, dtype, dims, cpu_name, sparse))
        kernel_names = list(dict.fromkeys(op.name for op in layer_ops))
        lower_layers.append(
            LowerLayer(
                name=name,
                path=KernelPath.SPARSE if sparse else KernelPath.DENSE,
                reason=None if sparse else FallbackReason.OBSERVED_DENSE,
                detail="classes seen: " + ", ".join(c.value for c in sorted(classes, key=lambda c: _PREC_INDEX[c])),
                kernel_class=cls,
                kernels=kernel_names,
            )
        )
        kernel_layers.append(
            KernelLayer(name=name, samples_ms=list(calls.values()), by_class_ms=dict(layer_by_class), precision=None if dtype == "unknown" else dtype)
        )

    sparse_layers = {layer.name for layer in lower_layers if layer.path is KernelPath.SPARSE}
    device_name = _device_name(trace.metadata, device)
    tokens = _tokens(graph_layers)
    record = RunRecord(
        name=_stem(path),
        source=RunSource(kind="torch_trace", files=[file_digest(path)]),
        graph=GraphStage(layers=graph_layers, tokens=tokens),
        lower=LowerStage(backend=f"cuda:{device_name}" if device_name else "cuda", layers=lower_layers),
        kernel=KernelStage(layers=kernel_layers, by_class_ms=dict(by_class)),
        schedule=ScheduleStage(
            span_samples_ms=span_samples,
            busy_samples_ms=busy_samples,
            host_wait_ms=host_in,
            kernel_wait_ms=kern_in,
            launches_per_iteration=round(sum(it.gpu_ops for it in iterations) / len(iterations)),
            dense_share=_dense_share(groups, sparse_layers),
            layer_idle_samples_ms=_layer_idle(ops, annotated_names),
        ),
        outcome=OutcomeStage(latency_samples_ms=latency_samples),
    )
    summary = TraceSummary(
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
        iteration_source=source,
        iterations=iterations,
        by_class_ms=dict(by_class),
        annotated=bool(ann_layers),
        layers=len(layer_order),
        skipped_events=dict(trace.skipped),
    )
    return TraceImport(record=record, summary=summary)


_PREC_INDEX = {cls: i for i, cls in enumerate(KernelClass)}


def _dense_share(groups: list[list[GpuOp]], sparse_layers: set[str]) -> float | None:
    """Median over iterations of the fraction of GPU op time spent in layers that ran dense."""
    shares = []
    for group in groups:
        total = sum(op.dur for op in group)
        if total > 0:
            shares.append(sum(op.dur for op in group if op.layer not in sparse_layers) / total)
    if not shares:
        return None
    shares.sort()
    mid = len(shares) // 2
    return shares[mid] if len(shares) % 2 else (shares[mid - 1] + shares[mid]) / 2.0


def _layer_idle(ops: list[GpuOp], annotated: set[str]) -> dict[str, list[float]]:
    """Per annotated layer, per call: device idle (ms) between the latest earlier op end and the call's first op.

    ``ops`` are sorted by start. Layers without annotations (kernel-name layers)
    get no samples: a call boundary is only known from an annotation.
    """
    first_of_call: dict[Any, int] = {}
    for index, op in enumerate(ops):
        if op.call is not None and op.layer in annotated and op.call not in first_of_call:
            first_of_call[op.call] = index
    idle: dict[str, list[float]] = defaultdict(list)
    latest_end = float("-inf")
    firsts = set(first_of_call.values())
    for index, op in enumerate(ops):
        if index in firsts and op.layer is not None and latest_end != float("-inf"):
            idle[op.layer].append(max(0.0, op.ts - latest_end) / 1e3)  # the trace's first call has no gap before it
        latest_end = max(latest_end, op.end)
    return dict(idle)


def import_trace(path: Path) -> RunRecord:
    """Import a PyTorch profiler Chrome trace (``.json`` or ``.json.gz``) as a ``RunRecord``."""
    return analyze_trace(path).record


def _graph_layer(name: str, kind: OpKind, dtype: str, dims: Any, cpu_name: str | None, sparse: bool) -> GraphLayer:
    intended = "2:4" if sparse else "dense"
    input_shape = _shape(dims, 0)
    if kind is OpKind.LINEAR and cpu_name == "aten::linear":
        weight = _shape(dims, 1)
        if input_shape and weight and len(weight) == 2 and input_shape[-1] == weight[1]:
            rows = 1
            for d in input_shape[:-1]:
                rows *= d
            out = [*input_shape[:-1], weight[0]]
            size = _DTYPE_BYTES.get(dtype)
            has_bias = _shape(dims, 2) is not None
            return GraphLayer(
                name=name,
                op=kind,
                weight_shape=weight,
                input_shape=input_shape,
                output_shape=out,
                dtype=dtype,
                intended=intended,
                params=weight[0] * weight[1] + (weight[0] if has_bias else 0),
                flops=2.0 * rows * weight[0] * weight[1],
                bytes=float(size * (rows * weight[1] + weight[0] * weight[1] + rows * weight[0])) if size else 0.0,
            )
    return GraphLayer(name=name, op=kind, input_shape=input_shape, dtype=dtype, intended=intended)


def _tokens(layers: list[GraphLayer]) -> int | None:
    for layer in layers:
        if layer.op is OpKind.LINEAR and layer.input_shape:
            rows = 1
            for d in layer.input_shape[:-1]:
                rows *= d
            return rows
    return None


def _device_name(metadata: dict[str, Any], device: int) -> str | None:
    props = metadata.get("deviceProperties")
    if isinstance(props, list):
        for prop in props:
            if isinstance(prop, dict) and prop.get("id") == device and isinstance(prop.get("name"), str):
                return str(prop["name"])
    return None


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name or path.name
