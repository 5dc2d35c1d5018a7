"""Read a PyTorch profiler (Kineto) Chrome trace into plain event lists, in one streamed pass.

Kept, by event category (``cat``) of complete (``ph: X``) events:

* GPU activity: ``kernel``, ``gpu_memcpy``, ``gpu_memset`` (``ts``/``dur`` in
  microseconds, ``stream``, ``device`` and the ``correlation`` id of the runtime
  call that launched it), and ``cuda_sync`` (stream/event/context synchronisation,
  kept apart: Holistic Trace Analysis counts them as GPU time, busy time does not).
* Launches: ``cuda_runtime``/``cuda_driver`` calls by correlation id, and the
  ``ac2g`` flow starts that link the same ids when runtime events are missing.
* Host ranges, the CPU side of the call tree: ``cpu_op`` (aten and other ops,
  with ``Input Dims``/``Input type``/``Input Strides``/``Concrete Inputs`` when
  ``record_shapes=True`` and the autograd ``Sequence number``), ``user_annotation``
  (``record_function`` names; ``ProfilerStep#N`` kept as steps), and
  ``python_function`` module events (``nn.Module: Linear_3``, recorded with
  ``with_stack``); other Python frames are dropped.
* ``gpu_user_annotation`` ranges on GPU streams (used when launches are missing),
  and ``thread_name`` metadata (the autograd engine's threads are named
  ``pt_autograd_*``).

Everything else is ignored; malformed events are skipped and counted by reason.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.records.run import KernelClass
from sparsedebug.sources.importers.trace.read.stream import iter_trace, untimed, well_formed

Thread = tuple[Any, Any]
"""(pid, tid) of a host thread, or (device, stream) of a GPU annotation track."""

GPU_CATEGORIES = frozenset({"kernel", "gpu_memset", "gpu_memcpy"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
_NAMED_RANGES = frozenset({"user_annotation", "gpu_user_annotation"})
MODULE_PREFIX = "nn.Module: "

@dataclass(slots=True)
class GpuOp:
    """One kernel/memset/memcpy on the GPU timeline (times in microseconds), and what it was linked to."""

    name: str
    ts: float
    dur: float
    device: int
    stream: int
    correlation: int | None
    is_kernel: bool
    cls: KernelClass = KernelClass.OTHER
    launch_ts: float | None = None
    launch_thread: Thread | None = None
    launch_name: str = ""
    host: int | None = None  # innermost host range around the launch (index into TraceEvents.ranges)
    layer: str | None = None
    call: Any = None  # key of the layer call (annotation/module/op instance) the op belongs to
    phase: str = "forward"
    cat: str = "kernel"

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True)
class HostRange:
    """One CPU-side range: an op, an annotation, a module call or a profiler step."""

    kind: str  # "op", "annotation", "module", "step"
    name: str
    ts: float
    end: float
    thread: Thread
    dims: Any = None
    types: Any = None
    strides: Any = None
    concrete: Any = None
    seq: int | None = None
    fwd_thread: int | None = None  # ops the autograd engine ran: the forward thread that created their node
    index: int = 0
    parent: int = -1
    launches: int = 0  # GPU ops launched inside (set while linking)


@dataclass(slots=True)
class SyncEvent:
    """A ``cuda_sync`` activity on a GPU stream."""

    name: str
    ts: float
    dur: float
    stream: int
    correlation: int | None


@dataclass
class TraceEvents:
    """Everything ``read_events`` keeps from one trace file."""

    gpu: list[GpuOp] = field(default_factory=list)
    launches: dict[int, tuple[float, Thread, str]] = field(default_factory=dict)
    flow_starts: dict[Any, tuple[float, Thread]] = field(default_factory=dict)
    ranges: list[HostRange] = field(default_factory=list)
    gpu_annotations: list[HostRange] = field(default_factory=list)
    steps: list[HostRange] = field(default_factory=list)
    gpu_steps: list[HostRange] = field(default_factory=list)
    syncs: list[SyncEvent] = field(default_factory=list)
    thread_names: dict[Thread, set[str]] = field(default_factory=lambda: defaultdict(set))
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    metadata: dict[str, Any] = field(default_factory=dict)
    ts_base: float | None = None  # subtracted from every timestamp (exactly: Sterbenz) so sums keep sub-microsecond precision

    def rebase(self, ts: float) -> float:
        """``ts`` relative to the trace's first timestamp."""
        if self.ts_base is None:
            self.ts_base = ts
        return ts - self.ts_base


def num(value: Any) -> float | None:
    """A JSON number as float; None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def as_int(value: Any) -> int | None:
    """A JSON integer (or integral float) as int; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


_NOT_TENSORS = frozenset({"scalar", "scalarlist", "tensorlist", "genericlist", "string", "device", "layout", "memoryformat"})
"""``Input type`` entries that name no tensor element type."""


def input_dtype(name: Any) -> str | None:
    """Canonical dtype of one ``Input type`` entry (core.dtypes' one table), the name itself when unknown;
    '' and 'Scalar'-like entries give None."""
    if not isinstance(name, str) or not name or name.lower() in _NOT_TENSORS:
        return None
    return canonical_dtype(name) or name


def _gpu_op(event: dict[str, Any], name: Any, ts: float, dur: float, args: dict[str, Any], trace: TraceEvents) -> GpuOp:
    if not isinstance(name, str) or not name:
        name = "<unnamed kernel>"
        trace.skipped["kernel without name (kept as <unnamed kernel>)"] += 1
    device = as_int(args.get("device"))
    stream = as_int(args.get("stream"))
    cat = str(event.get("cat"))
    return GpuOp(
        name=name,
        ts=ts,
        dur=dur,
        device=device if device is not None else as_int(event.get("pid")) or 0,
        stream=stream if stream is not None else as_int(event.get("tid")) or 0,
        correlation=as_int(args.get("correlation")),
        is_kernel=cat == "kernel",
        cat=cat,
    )


def _host_range(cat: str, name: str, ts: float, dur: float, thread: Thread, args: dict[str, Any]) -> HostRange | None:
    if cat == "python_function":
        return HostRange("module", name[len(MODULE_PREFIX) :], ts, ts + dur, thread) if name.startswith(MODULE_PREFIX) else None
    if name.startswith("ProfilerStep#"):
        return HostRange("step", name, ts, ts + dur, thread)
    if cat == "user_annotation":
        return HostRange("annotation", name, ts, ts + dur, thread)
    return HostRange(
        "op", name, ts, ts + dur, thread,
        dims=args.get("Input Dims"), types=args.get("Input type"), strides=args.get("Input Strides"),
        concrete=args.get("Concrete Inputs"), seq=as_int(args.get("Sequence number")),
        fwd_thread=as_int(args.get("Fwd thread id")),
    )


def _metadata_event(event: dict[str, Any], trace: TraceEvents) -> None:
    if event.get("name") == "thread_name":
        args = event.get("args")
        if isinstance(args, dict) and isinstance(args.get("name"), str):
            trace.thread_names[(event.get("pid"), event.get("tid"))].add(args["name"])


def _flow_event(event: dict[str, Any], trace: TraceEvents) -> None:
    if event.get("ph") == "s":
        ts = num(event.get("ts"))
        if ts is not None and "id" in event:
            trace.flow_starts[event["id"]] = (trace.rebase(ts), (event.get("pid"), event.get("tid")))


_KEPT = GPU_CATEGORIES | LAUNCH_CATEGORIES | _NAMED_RANGES | {"cpu_op", "python_function", "cuda_sync"}


def _keep(event: dict[str, Any], trace: TraceEvents) -> None:
    """File one complete (ph X) event of a kept category."""
    cat = event["cat"]
    name = event.get("name")
    args = event.get("args")
    if not isinstance(args, dict):
        args = {}
    ts, dur = event.get("ts"), event.get("dur")
    # num() inlined (once per event): a JSON number, not a boolean
    ts = float(ts) if type(ts) is float or type(ts) is int else None
    dur = float(dur) if type(dur) is float or type(dur) is int else None
    if ts is None or dur is None or dur < 0:
        if cat in GPU_CATEGORIES or cat in LAUNCH_CATEGORIES or cat in _NAMED_RANGES:
            trace.skipped[f"{cat} {untimed(ts, dur)}"] += 1
        return
    ts = trace.rebase(ts)
    thread = (event.get("pid"), event.get("tid"))
    if cat in GPU_CATEGORIES:
        trace.gpu.append(_gpu_op(event, name, ts, dur, args, trace))
    elif cat in LAUNCH_CATEGORIES:
        corr = as_int(args.get("correlation"))
        if corr is not None:
            trace.launches[corr] = (ts, thread, name if isinstance(name, str) else "")
    elif cat == "cuda_sync":
        stream = as_int(args.get("stream"))
        trace.syncs.append(SyncEvent(str(name), ts, dur, -1 if stream is None else stream, as_int(args.get("correlation"))))
    elif not isinstance(name, str) or not name:
        if cat in _NAMED_RANGES:
            trace.skipped["annotation without name"] += 1
    elif cat == "gpu_user_annotation":
        target = trace.gpu_steps if name.startswith("ProfilerStep#") else trace.gpu_annotations
        target.append(HostRange("annotation", name, ts, ts + dur, thread))
    else:
        host = _host_range(cat, name, ts, dur, thread, args)
        if host is not None:
            (trace.steps if host.kind == "step" else trace.ranges).append(host)


def read_events(path: Path) -> TraceEvents:
    """Stream ``path`` (``.json`` or ``.json.gz``) and keep the events the analysis needs."""
    trace = TraceEvents()
    for event in iter_trace(path, trace.metadata):
        if not isinstance(event, dict):
            trace.skipped["not an object"] += 1
            continue
        if not well_formed(event):
            trace.skipped["malformed (a list or object as ph, cat, name, pid, tid or id)"] += 1
            continue
        ph = event.get("ph")
        cat = event.get("cat")
        if ph == "M":
            _metadata_event(event, trace)
        elif ph in ("s", "f"):
            if cat == "ac2g":
                _flow_event(event, trace)
        elif ph == "X" and cat in _KEPT:
            _keep(event, trace)
    for index, host in enumerate(trace.ranges):
        host.index = index
    return trace
