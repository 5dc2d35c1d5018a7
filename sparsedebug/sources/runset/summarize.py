"""One rank's trace to a compact :class:`RankSummary`: the figures the set analysis needs, a few KB.

The trace is streamed once (``read_events``) and analysed by the trace importer; only the summary
leaves the worker, so memory per rank is the streaming importer's, whatever the number of ranks.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from sparsedebug.core.stats import median
from sparsedebug.records.ranks import Collective, LayerTime, RankSummary
from sparsedebug.records.run import KernelClass, KernelPath
from sparsedebug.sources.importers.trace.analysis.timeline import union_us
from sparsedebug.sources.importers.trace.importer import analyze_trace, busiest_device
from sparsedebug.sources.importers.trace.read.events import GpuOp, read_events
from sparsedebug.sources.runset.discover import RankFile


def _per_iteration(total_us: float, steps: int) -> float:
    return total_us / 1e3 / max(steps, 1)


def _collectives(comm: list[GpuOp], origin: float) -> tuple[str | None, list[Collective]]:
    """Instances of the communication kernel with the most total time, with each one's compute time before it."""
    if not comm:
        return None, []
    total: dict[str, float] = defaultdict(float)
    for op in comm:
        total[op.name] += op.dur
    dominant = max(total, key=lambda name: (total[name], name))
    out: list[Collective] = []
    previous_end: float | None = None
    for op in sorted(comm, key=lambda o: o.ts):
        if op.name == dominant:
            since = None if previous_end is None else (op.ts - previous_end) / 1e3
            out.append(Collective(name=op.name, start_ms=(op.ts - origin) / 1e3, dur_ms=op.dur / 1e3, since_previous_ms=since))
        previous_end = op.end if previous_end is None else max(previous_end, op.end)
    return dominant, out


def summarize(member: RankFile) -> RankSummary:
    """Read one rank's trace and summarise it (runs in a worker: everything it returns is picklable and small)."""
    path = Path(member.path)
    events = read_events(path)
    imported = analyze_trace(path, events=events)
    run = imported.record
    device = busiest_device(events.gpu)
    ops = [op for op in events.gpu if op.device == device]
    comm = [op for op in ops if op.cls is KernelClass.COMMUNICATION]  # every NCCL naming (core.kernel_names)
    comm_ids = {id(op) for op in comm}
    compute = [op for op in ops if id(op) not in comm_ids]
    steps = max(len(run.schedule.span_samples_ms), 1)
    busy = union_us((op.ts, op.end) for op in ops)
    comm_us = union_us((op.ts, op.end) for op in comm)
    compute_us = union_us((op.ts, op.end) for op in compute)
    overlap_us = max(comm_us + compute_us - busy, 0.0)
    span_us = (max(op.end for op in ops) - min(op.ts for op in ops)) if ops else 0.0
    paths = {layer.name: layer.path for layer in run.lower.layers}
    layers = [
        LayerTime(name=k.name, p50_ms=median(k.samples_ms), path="sparse" if paths.get(k.name) is KernelPath.SPARSE else "dense")
        for k in run.kernel.layers
        if k.samples_ms
    ]
    dominant, collectives = _collectives(comm, min(op.ts for op in ops) if ops else 0.0)
    busy_samples = run.schedule.busy_samples_ms
    return RankSummary(
        rank=member.rank,
        rank_source=member.source,
        world_size=member.world_size,
        file=str(path),
        device=imported.summary.device,
        steps=len(run.schedule.span_samples_ms),
        step_samples_ms=list(run.schedule.span_samples_ms),
        step_p50_ms=median(run.schedule.span_samples_ms) if run.schedule.span_samples_ms else None,
        busy_ms=median(busy_samples) if busy_samples else _per_iteration(busy, steps),
        compute_ms=_per_iteration(compute_us, steps),
        communication_ms=_per_iteration(comm_us, steps),
        overlap_ms=_per_iteration(overlap_us, steps),
        idle_ms=_per_iteration(max(span_us - busy, 0.0), steps),
        layers=layers,
        collectives=collectives,
        dominant_collective=dominant,
    )
