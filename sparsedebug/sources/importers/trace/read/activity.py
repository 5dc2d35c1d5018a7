"""Device activity from a profiler database (Nsight Systems, rocprofv3) as the events a PyTorch trace gives.

The readers (``importers.nsys``, ``importers.rocprof``) list kernels, copies, launches and annotated
ranges (:class:`~sparsedebug.sources.importers.activity.Activity`); this turns them into a
:class:`TraceEvents` so that the one trace pipeline finds their layers (NVTX/ROCTx ranges around the
launches, else kernel names), iterations, busy and span:

* device work becomes GPU ops (``kernel``, ``gpu_memcpy``, ``gpu_memset``) in microseconds;
* launches become runtime calls by correlation id, so the idle split knows when each op was issued;
* annotated ranges become host annotations on their thread (nested as NVTX push/pop nests); the ranges
  ``torch.autograd.profiler.emit_nvtx`` writes (``aten::linear, seq = 12, sizes = [[8, 512], [1024, 512], [1024]]``)
  become the ops they name, with their input shapes, so layers are named as in a PyTorch trace
  (``linear#3 [1024x512]``), and the changing ``seq = N`` of other ranges is dropped from their names;
* devices become ``deviceProperties`` entries and the capture's UTC start ``baseTimeNanoseconds``.

Times are rebased on the profile's first timestamp before the division to microseconds, so sums keep
nanosecond precision.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.sources.importers.activity import Activity, DeviceFacts
from sparsedebug.sources.importers.trace.read.events import GpuOp, HostRange, TraceEvents

_CATEGORIES = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
# PyTorch's NVTX range names (torch/csrc/profiler/util.cpp getNvtxStr): "<name>[, seq = <n>][, sizes = [[...], ...]]".
_TORCH_NVTX = re.compile(r"^(?P<name>.+?)(?:, seq = (?P<seq>-?\d+))?(?:, sizes = (?P<sizes>\[.*\]))?$")


def _host_range(name: str, ts: float, end: float, thread: tuple[int, int], index: int) -> HostRange:
    """An annotated range as a host range: an op when PyTorch's emit_nvtx named it after one (``ns::op``), else an annotation."""
    match = _TORCH_NVTX.match(name)
    if match is None or (match.group("seq") is None and match.group("sizes") is None):
        return HostRange("annotation", name, ts, end, thread, index=index)
    base, seq, sizes = match.group("name"), match.group("seq"), match.group("sizes")
    if "::" not in base:
        return HostRange("annotation", base, ts, end, thread, index=index)
    dims: Any = None
    if sizes is not None:
        try:
            dims = json.loads(sizes)
        except ValueError:
            dims = None
    return HostRange("op", base, ts, end, thread, dims=dims, seq=int(seq) if seq is not None and int(seq) >= 0 else None, index=index)


def _properties(device: DeviceFacts) -> dict[str, Any]:
    """One ``deviceProperties`` entry, with the keys a Kineto trace uses."""
    prop: dict[str, Any] = {"id": device.index}
    if device.vendor is not None:
        prop["vendor"] = device.vendor
    if device.name:
        prop["name"] = device.name
    if device.compute_capability and device.vendor == "AMD":
        prop["gcnArchName"] = device.compute_capability
    elif device.compute_capability and "." in device.compute_capability:
        major, minor = device.compute_capability.split(".", 1)
        if major.isdigit() and minor.isdigit():
            prop["computeMajor"], prop["computeMinor"] = int(major), int(minor)
    for key, value in (("numSms", device.multiprocessors), ("totalGlobalMem", device.memory_bytes), ("warpSize", device.warp_size)):
        if value:
            prop[key] = value
    return prop


def events_of(activity: Activity, digest: FileDigest) -> TraceEvents:
    """The trace events of ``activity`` (read from the file ``digest`` names)."""
    trace = TraceEvents(digest=digest)
    starts = [w.start_ns for w in activity.work] + [c.start_ns for c in activity.calls] + [r.start_ns for r in activity.ranges]
    base = min(starts) if starts else 0
    trace.ts_base = base / 1e3
    for work in activity.work:
        trace.gpu.append(GpuOp(work.name, (work.start_ns - base) / 1e3, (work.end_ns - work.start_ns) / 1e3, work.device, work.stream,
                               work.correlation, work.kind == "kernel", cat=_CATEGORIES[work.kind]))
    for call in activity.calls:
        trace.launches[call.correlation] = ((call.start_ns - base) / 1e3, (0, call.thread), call.name)
    for index, annotated in enumerate(sorted(activity.ranges, key=lambda r: (r.start_ns, -r.end_ns))):
        trace.ranges.append(_host_range(annotated.name, (annotated.start_ns - base) / 1e3, (annotated.end_ns - base) / 1e3,
                                        (0, annotated.thread), index))
    trace.metadata["deviceProperties"] = [_properties(d) for d in activity.devices.values()]
    if activity.utc_start_ns is not None:
        trace.metadata["baseTimeNanoseconds"] = activity.utc_start_ns
    for reason, count in activity.skipped.items():
        trace.skipped[reason] += count
    return trace
