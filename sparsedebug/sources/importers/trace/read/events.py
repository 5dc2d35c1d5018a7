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

The first Kineto traces (PyTorch 1.8-1.9) wrote capitalised categories (``Kernel``,
``Memcpy``, ``Memset``, ``Runtime``, ``Operator``): they are read as the ones above, an
``Operator`` without a namespace and not an autograd node (``ProfilerStep#3``, a ``record_function``
name) as an annotation.
Everything else is ignored; malformed events are skipped and counted by reason.
"""

from __future__ import annotations

import gc
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from sparsedebug.core.bounds import MAX_TRACE_DURATION_US, MAX_TRACE_TIMESTAMP_US, check_bounded
from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.run import KernelClass
from sparsedebug.sources.importers.trace.read.stream import Event, EventArgs, Scalar, decoded, iter_event_batches, untimed

# (pid, tid) of a host thread, or (device, stream) of a GPU annotation track.
Thread = tuple[Any, Any]

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
    end: float = field(init=False)  # ts + dur, set once (ops are never moved after reading)

    def __post_init__(self) -> None:
        self.end = self.ts + self.dur


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
    digest: FileDigest | None = None  # the file's sha256 and size, hashed as it was read
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


# ``Input type`` entries that name no tensor element type.
_NOT_TENSORS = frozenset({"scalar", "scalarlist", "tensorlist", "genericlist", "string", "device", "layout", "memoryformat"})


def input_dtype(name: Any) -> str | None:
    """Canonical dtype of one ``Input type`` entry (core.dtypes' one table), the name itself when unknown;
    '' and 'Scalar'-like entries give None."""
    if not isinstance(name, str) or not name or name.lower() in _NOT_TENSORS:
        return None
    return canonical_dtype(name) or name


_KEPT = GPU_CATEGORIES | LAUNCH_CATEGORIES | _NAMED_RANGES | {"cpu_op", "python_function", "cuda_sync"}
# The capitalised categories of Kineto's first Chrome traces (PyTorch 1.8-1.9, 2021), read as today's.
LEGACY_CATEGORIES = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Runtime": "cuda_runtime", "Operator": "cpu_op"}
_UNTIMED_COUNTED = GPU_CATEGORIES | LAUNCH_CATEGORIES | _NAMED_RANGES
_NO_ARGS = EventArgs()
_AUTOGRAD_NODE = re.compile(r"Backward\d*$")


def _legacy_annotation(name: Scalar) -> bool:
    """Whether a legacy ``Operator`` is a ``record_function`` range: no namespace (``aten::``) and no autograd node."""
    return isinstance(name, str) and "::" not in name and _AUTOGRAD_NODE.search(name) is None


class _Filer:
    """Files the events of one trace into a ``TraceEvents``: one call per kept event, state in locals of the instance."""

    def __init__(self, trace: TraceEvents, path: Path) -> None:
        self.trace = trace
        self.path = path
        self.threads: dict[Thread, Thread] = {}  # one tuple per thread, shared by its ranges
        self.inputs: dict[bytes, Any] = {}  # decoded Input Dims/type/Strides/Concrete Inputs, once per distinct text
        self.names: dict[Scalar, Scalar] = {}  # one string per distinct name (the decoder builds one per event)
        self.op_cache: dict[tuple[bytes, bytes, bytes, bytes], tuple[Any, Any, Any, Any]] = {}

    def op_inputs(self, args: EventArgs) -> tuple[Any, Any, Any, Any]:
        """Input Dims, Input type, Input Strides and Concrete Inputs of an op, decoded once per distinct four texts."""
        dims, types, strides, concrete = args.dims, args.types, args.strides, args.concrete
        inputs = self.inputs
        if dims.__class__ is types.__class__ is strides.__class__ is concrete.__class__ is msgspec.Raw:
            key = (bytes(dims), bytes(types), bytes(strides), bytes(concrete))
            found = self.op_cache.get(key)
            if found is None:
                found = self.op_cache[key] = (
                    decoded(dims, inputs), decoded(types, inputs), decoded(strides, inputs), decoded(concrete, inputs),
                )
            return found
        return decoded(dims, inputs), decoded(types, inputs), decoded(strides, inputs), decoded(concrete, inputs)

    def thread(self, event: Event) -> Thread:
        key = (event.pid, event.tid)
        return self.threads.get(key) or self.threads.setdefault(key, key)

    def metadata(self, event: Event) -> None:
        if event.name == "thread_name":
            args = event.args
            if args is not None and isinstance(args.name, str):
                self.trace.thread_names[(event.pid, event.tid)].add(args.name)

    def flow(self, event: Event) -> None:
        if event.ph == "s":
            ts = num(event.ts)
            if ts is not None and event.id is not msgspec.UNSET:
                self.trace.flow_starts[event.id] = (self.trace.rebase(ts), self.thread(event))

    def keep(self, event: Event, cat: str) -> None:
        """File one complete (ph X) event of a kept category."""
        trace = self.trace
        name = self.names.setdefault(event.name, event.name)
        args = event.args or _NO_ARGS
        ts, dur = event.ts, event.dur
        # num() inlined (once per event): a JSON number, not a boolean
        ts = float(ts) if type(ts) is float or type(ts) is int else None
        dur = float(dur) if type(dur) is float or type(dur) is int else None
        if ts is None or dur is None or dur < 0:
            if cat in _UNTIMED_COUNTED:
                trace.skipped[f"{cat}:{untimed(ts, dur)}"] += 1
            return
        if not (dur <= MAX_TRACE_DURATION_US and -MAX_TRACE_TIMESTAMP_US <= ts <= MAX_TRACE_TIMESTAMP_US):  # NaN fails too
            self.refuse(cat, name, ts, dur)
        base = trace.ts_base
        if base is None:
            base = trace.ts_base = ts
        ts -= base
        if cat == "cpu_op":
            if type(name) is not str or not name:
                return
            if name.startswith("ProfilerStep#"):
                trace.steps.append(HostRange("step", name, ts, ts + dur, self.thread(event)))
                return
            dims, types, strides, concrete = self.op_inputs(args)
            seq, fwd = args.seq, args.fwd_thread
            trace.ranges.append(HostRange(
                "op", name, ts, ts + dur, self.thread(event), dims, types, strides, concrete,
                seq if seq.__class__ is int else as_int(seq), fwd if fwd.__class__ is int else as_int(fwd),
            ))
        elif cat in GPU_CATEGORIES:
            trace.gpu.append(self.gpu_op(event, cat, name, ts, dur, args))
        elif cat in LAUNCH_CATEGORIES:
            corr = as_int(args.correlation)
            if corr is not None:
                trace.launches[corr] = (ts, self.thread(event), name if isinstance(name, str) else "")
        elif cat == "cuda_sync":
            stream = as_int(args.stream)
            trace.syncs.append(SyncEvent(str(name), ts, dur, -1 if stream is None else stream, as_int(args.correlation)))
        elif not isinstance(name, str) or not name:
            if cat in _NAMED_RANGES:
                trace.skipped["annotation:unnamed"] += 1
        elif cat == "gpu_user_annotation":
            target = trace.gpu_steps if name.startswith("ProfilerStep#") else trace.gpu_annotations
            target.append(HostRange("annotation", name, ts, ts + dur, self.thread(event)))
        elif cat == "python_function":
            if name.startswith(MODULE_PREFIX):
                trace.ranges.append(HostRange("module", name[len(MODULE_PREFIX) :], ts, ts + dur, self.thread(event)))
        elif name.startswith("ProfilerStep#"):
            trace.steps.append(HostRange("step", name, ts, ts + dur, self.thread(event)))
        else:  # user_annotation
            trace.ranges.append(HostRange("annotation", name, ts, ts + dur, self.thread(event)))

    def refuse(self, cat: str, name: Scalar, ts: float, dur: float) -> None:
        """Refuse the trace for an event whose ts or dur no profiler writes (NaN, infinite, beyond any run)."""
        what = f"{self.path}: {cat} event {name!r}"
        check_bounded(dur, f"{what}: dur (us)", 0.0, MAX_TRACE_DURATION_US, "microseconds")
        check_bounded(ts, f"{what}: ts (us)", -MAX_TRACE_TIMESTAMP_US, MAX_TRACE_TIMESTAMP_US, "microseconds")

    def gpu_op(self, event: Event, cat: str, name: Scalar, ts: float, dur: float, args: EventArgs) -> GpuOp:
        if not isinstance(name, str) or not name:
            name = "<unnamed kernel>"
            self.trace.skipped["kernel:unnamed"] += 1  # kept as <unnamed kernel>
        device, stream, correlation = args.device, args.stream, args.correlation
        device = device if device.__class__ is int else as_int(device)
        stream = stream if stream.__class__ is int else as_int(stream)
        return GpuOp(
            name, ts, dur,
            device if device is not None else as_int(event.pid) or 0,
            stream if stream is not None else as_int(event.tid) or 0,
            correlation if correlation.__class__ is int else as_int(correlation),
            cat == "kernel",
            cat=cat,
        )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a trace's structures are built (reference counting still frees).

    An import builds a few hundred thousand small objects that all live until it ends, and every
    collection walks them again: a sixth of the import's time on a 200k-event trace. What it builds
    holds no reference cycles to wait for; the collector resumes (if it was on) on the way out.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_events(path: Path) -> TraceEvents:
    """Stream ``path`` (``.json`` or ``.json.gz``) and keep the events the analysis needs."""
    with gc_paused():
        return _read_events(path)


def _read_events(path: Path) -> TraceEvents:
    trace = TraceEvents()
    sha256 = hashlib.sha256()
    filer = _Filer(trace, path)
    keep, skipped = filer.keep, trace.skipped
    kept, legacy = _KEPT, LEGACY_CATEGORIES
    for batch in iter_event_batches(path, trace.metadata, sha256):
        for event in batch:
            if event.__class__ is not Event:
                if isinstance(event, dict):
                    skipped["event:malformed"] += 1
                else:
                    skipped["event:not_object"] += 1
                continue
            ph = event.ph
            if ph == "X":
                cat = event.cat
                if cat in kept:
                    keep(event, cat)
                elif cat in legacy:
                    cat = legacy[cat]
                    keep(event, "user_annotation" if cat == "cpu_op" and _legacy_annotation(event.name) else cat)
            elif ph == "M":
                filer.metadata(event)
            elif (ph == "s" or ph == "f") and event.cat == "ac2g":
                filer.flow(event)
    for index, host in enumerate(trace.ranges):
        host.index = index
    trace.digest = FileDigest(path=str(path), sha256=sha256.hexdigest(), size_bytes=path.stat().st_size)
    return trace
