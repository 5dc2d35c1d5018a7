"""Nsight Systems exports and rocprofv3 kernel traces as five-stage run records, through the trace importer's pipeline.

The one place that joins a profiler database reader (``importers.nsys``, ``importers.rocprof``: each
lists device activity, neither imports the trace importer) to the trace pipeline
(``trace.read.activity`` turns the activity into trace events, ``trace.importer.analyze_events`` finds
layers, iterations, busy and span exactly as for a PyTorch trace). The readers stay apart from each
other and from the trace importer (the ``importers-apart`` contract); this module is their common user.

A file with several devices is read per device: one device is analysed (``device``, default the
busiest), and every device's figures are listed (:class:`DeviceShare`), as a run set lists its ranks.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import reading
from sparsedebug.core.kernel_names import GEMM_CLASSES, classify_kernel
from sparsedebug.core.kernel_names_rocm import sparse_inferred_from_name
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.profile import DeviceShare, ProfileSummary
from sparsedebug.records.run import KernelClass, RunRecord
from sparsedebug.sources.importers.activity import Activity
from sparsedebug.sources.importers.nsys import read_nsys
from sparsedebug.sources.importers.rocprof import read_rocprof
from sparsedebug.sources.importers.timeline import timeline
from sparsedebug.sources.importers.trace.importer import TraceImport, analyze_events, busiest_device
from sparsedebug.sources.importers.trace.read.activity import events_of
from sparsedebug.sources.importers.trace.read.events import GpuOp

# The run records' ``RunSource.kind`` of each format (registered in ``sources.registry``).
NSYS_SOURCE = "nsys"
ROCPROF_SOURCE = "rocprof"


class ProfileImport(ProfileSummary):
    """A profile's run record (one device), the whole-file summary behind it, and every device's figures."""

    imported: TraceImport


def _digest(path: Path) -> FileDigest:
    sha = hashlib.sha256()
    with reading(path), path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    return FileDigest(path=str(path), sha256=sha.hexdigest(), size_bytes=path.stat().st_size)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".sqlite", ".sqlite3", ".db", ".csv"):
        name = name.removesuffix(suffix)
    return name or path.name


def _shares(ops: list[GpuOp], activity: Activity) -> list[DeviceShare]:
    """Every device's figures over the whole file: work counts, busy (union) and span."""
    by_device: dict[int, list[GpuOp]] = defaultdict(list)
    for op in ops:
        by_device[op.device].append(op)
    out = []
    for device, mine in sorted(by_device.items()):
        facts = activity.devices.get(device)
        tl = timeline(mine)
        out.append(DeviceShare(device=device, name=facts.name if facts is not None else None, gpu_ops=len(mine),
                               kernels=sum(1 for op in mine if op.is_kernel), busy_ms=tl.busy_ms, span_ms=tl.span_ms))
    return out


def for_device(activity: Activity, device: int) -> Activity:
    """The part of ``activity`` that concerns one device: its work, the calls that launched it, and the ranges of the
    threads that made those calls (all ranges when no call is linked: nothing tells the threads apart)."""
    work = [w for w in activity.work if w.device == device]
    correlations = {w.correlation for w in work if w.correlation is not None}
    calls = [c for c in activity.calls if c.correlation in correlations]
    threads = {c.thread for c in calls}
    ranges = [r for r in activity.ranges if r.thread in threads] if threads else list(activity.ranges)
    return replace(activity, work=work, calls=calls, ranges=ranges, devices={device: activity.devices[device]} if device in activity.devices else {})


def analyze_profile(path: Path, read: Callable[[Path], Activity], source_kind: str, device: int | None = None) -> ProfileImport:
    """Read ``path`` with ``read`` and import one of its devices (default: the busiest) as a run record."""
    activity = read(path)
    present = sorted({w.device for w in activity.work})
    if device is not None and device not in present:
        raise UserError(f"{path}: --device {device}: no work on that device (devices with work: {', '.join(map(str, present))})")
    digest = _digest(path)
    whole = events_of(activity, digest)
    shares = _shares(whole.gpu, activity)
    chosen = device if device is not None else busiest_device(whole.gpu)
    imported = analyze_events(path, events_of(for_device(activity, chosen), digest), source_kind=source_kind, name=_stem(path), device=chosen)
    names = {name for layer in imported.record.lower.layers for name in layer.kernels}
    classes = {name: classify_kernel(name) for name in names}
    sparse = sorted(name for name, cls in classes.items() if cls is KernelClass.SPARSE_GEMM)
    return ProfileImport(
        format=activity.format, device=chosen, devices=shares, sparse_kernels=sparse,
        inferred_sparse=[name for name in sparse if sparse_inferred_from_name(name)],
        gemm_kernels=sum(1 for cls in classes.values() if cls in GEMM_CLASSES), imported=imported,
    )


def analyze_nsys(path: Path, device: int | None = None) -> ProfileImport:
    """An Nsight Systems SQLite export (``nsys export --type sqlite``), one device of it."""
    return analyze_profile(path, read_nsys, NSYS_SOURCE, device)


def analyze_rocprof(path: Path, device: int | None = None) -> ProfileImport:
    """A rocprofv3 JSON, kernel_trace.csv or rocpd database, one device of it."""
    return analyze_profile(path, read_rocprof, ROCPROF_SOURCE, device)


def import_nsys(path: Path) -> RunRecord:
    """The run record of an Nsight Systems export's busiest device (the registry's loader)."""
    return analyze_nsys(path).imported.record


def import_rocprof(path: Path) -> RunRecord:
    """The run record of a rocprofv3 output's busiest device (the registry's loader)."""
    return analyze_rocprof(path).imported.record
