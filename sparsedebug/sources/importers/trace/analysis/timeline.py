"""GPU timeline figures: busy, span, the idle split, per-stream figures and HTA's temporal breakdown.

Busy time is the length of the union of GPU activity intervals (kernels,
memsets, memcpys) across all streams of the device; span is first start to last
end; idle = span - busy. Each idle gap (between the end of the busy interval
before it and the start of the next GPU op) is split as Holistic Trace Analysis
does: *host wait* when the call that launched the next op started after the
previous op ended (the GPU waited for the CPU to enqueue work), *kernel wait*
when the launch was already queued, *other* when the next op has no linked
launch call. HTA walks the gaps of each stream; here the gaps are those of the
device-wide union of all streams, so host + kernel + other wait always add up to
span - busy (on a single stream the two definitions agree).

HTA 0.5's temporal breakdown (``get_temporal_breakdown``) splits the same span
into *compute* (union of computation kernels), *non-compute* (the rest of the
union: memory and communication kernels, and whatever else HTA does not count as
computation) and *idle*, by HTA's own kernel-name rules
(``kernel_names.hta_kernel_type``). Two conventions are reported:

* ``all_iterations``: the device's kernels, memsets and memcpys over the whole
  trace; compute + non-compute = busy.
* ``hta``: HTA 0.5's defaults: with two or more ProfilerSteps, only GPU events
  launched by CPU events that start before the last step (HTA drops the last
  ProfilerStep; with ``include_last_step`` it keeps those launched up to its
  end); ``cuda_sync`` events on a stream count as GPU time (non-compute); every
  device in the file. Two deliberate departures from HTA: host events that carry
  a ``stream`` argument (Inductor's ``triton_*`` launcher ops, ROCm runtime calls)
  are not GPU time here, and timestamps are not rounded to whole microseconds (set
  ``HTA_DISABLE_NS_ROUNDING=1`` when comparing: HTA 0.5's rounding makes
  sub-microsecond memsets negative and trips its own assertion on H200 traces).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from sparsedebug.core.kernel_names import hta_kernel_type
from sparsedebug.records.trace import StreamSummary as StreamSummary
from sparsedebug.records.trace import TemporalBreakdown as TemporalBreakdown
from sparsedebug.sources.importers.timeline import BY_START as BY_START
from sparsedebug.sources.importers.timeline import GapCause as GapCause
from sparsedebug.sources.importers.timeline import Timeline as Timeline
from sparsedebug.sources.importers.timeline import segments_and_gaps as segments_and_gaps
from sparsedebug.sources.importers.timeline import timeline as timeline
from sparsedebug.sources.importers.timeline import union_us as union_us
from sparsedebug.sources.importers.trace.read.events import GpuOp, TraceEvents


def streams(ops: list[GpuOp]) -> list[StreamSummary]:
    """Per-stream op count, busy time (union on that stream), span and time by kernel class."""
    by_stream: dict[int, list[GpuOp]] = defaultdict(list)
    for op in ops:
        by_stream[op.stream].append(op)
    out = []
    for stream, items in sorted(by_stream.items()):
        by_class: dict[str, float] = defaultdict(float)
        for op in items:
            by_class[op.cls.value] += op.dur / 1e3
        out.append(
            StreamSummary(
                stream=stream,
                gpu_ops=len(items),
                busy_ms=union_us((op.ts, op.end) for op in items) / 1e3,
                span_ms=(max(op.end for op in items) - min(op.ts for op in items)) / 1e3,
                by_class_ms=dict(by_class),
            )
        )
    return out


def _busy_and_compute(events: list[tuple[str, float, float]]) -> tuple[float, float, float]:
    """``union_us`` of all the events and of HTA's computation kernels among them, and the events' span, in one pass over one sort."""
    computation = {name: hta_kernel_type(name) == "computation" for name in {name for name, _ts, _end in events}}
    busy = compute = 0.0
    b_start = b_end = c_start = c_end = float("nan")
    started = c_started = False
    first = float("nan")
    for name, start, end in sorted(events, key=_start_end):
        if not started:
            first = b_start = start
            b_end, started = end, True
        elif start > b_end:
            busy += b_end - b_start
            b_start, b_end = start, end
        elif end > b_end:
            b_end = end
        if computation[name]:
            if not c_started:
                c_start, c_end, c_started = start, end, True
            elif start > c_end:
                compute += c_end - c_start
                c_start, c_end = start, end
            elif end > c_end:
                c_end = end
    if started:
        busy += b_end - b_start
    if c_started:
        compute += c_end - c_start
    return busy, compute, b_end - first  # the last segment's end is the latest end


def _start_end(event: tuple[str, float, float]) -> tuple[float, float]:
    return event[1], event[2]


def _breakdown(events: list[tuple[str, float, float]], convention: Literal["all_iterations", "hta"], steps: int, dropped: bool) -> TemporalBreakdown:
    if not events:
        return TemporalBreakdown(convention=convention, profiler_steps=steps, span_ms=0.0, compute_ms=0.0, non_compute_ms=0.0,
                                 idle_ms=0.0, gpu_events=0, dropped_last_step=dropped)
    busy, compute, span = _busy_and_compute(events)
    return TemporalBreakdown(
        convention=convention, profiler_steps=steps, span_ms=span / 1e3, compute_ms=compute / 1e3,
        non_compute_ms=(busy - compute) / 1e3, idle_ms=(span - busy) / 1e3, gpu_events=len(events), dropped_last_step=dropped,
    )


def temporal_breakdowns(trace: TraceEvents, ops: list[GpuOp], *, include_last_step: bool = False) -> list[TemporalBreakdown]:
    """The breakdown over ``ops`` (all iterations) and under HTA 0.5's conventions (see the module docstring)."""
    ours = _breakdown([(op.name, op.ts, op.end) for op in ops], "all_iterations", len(trace.steps + trace.gpu_steps), False)
    events = [(op.name, op.ts, op.end, op.correlation) for op in trace.gpu]
    events += [(s.name, s.ts, s.ts + s.dur, s.correlation) for s in trace.syncs if s.stream >= 0]
    steps = trace.steps + trace.gpu_steps
    dropped = False
    if len({s.name for s in steps}) >= 2:
        cutoff = max(s.end for s in steps) if include_last_step else max(s.ts for s in steps)
        launched = {corr for corr, (ts, _thread, _name) in trace.launches.items() if (ts <= cutoff if include_last_step else ts < cutoff)}
        events = [e for e in events if e[3] is not None and e[3] >= 0 and e[3] in launched]
        dropped = not include_last_step
    hta = _breakdown([(name, ts, end) for name, ts, end, _c in events], "hta", len(steps), dropped)
    return [ours, hta]
