"""Device timeline figures every importer may use: busy (union of intervals), span, and the idle split by cause.

Moved here from the trace importer so that any importer with timed device work (a trace's GPU ops,
a TensorRT engine's timed inferences) computes busy, span and the host/kernel wait split one way.
An interval is anything with ``ts`` and ``end`` (microseconds) and ``launch_ts`` (when the host
issued it; None when unknown): see :class:`Interval`. Each idle gap between the union's segments
is *host wait* when the next interval was issued after the device went idle, *kernel wait* when it
was already issued, *other* when its issue time is unknown (Holistic Trace Analysis's idle split).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal, Protocol


class Interval(Protocol):
    """Timed device work: start and end, and when the host issued it (microseconds on one clock)."""

    @property
    def ts(self) -> float: ...

    @property
    def end(self) -> float: ...

    @property
    def launch_ts(self) -> float | None: ...


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


# Sort key of intervals (GPU ops): start, then end.
BY_START = attrgetter("ts", "end")

# Why the GPU sat idle before an op: its launch came after the previous work ended (host wait), before it (kernel
# wait: a dependency or the stream), or the op has no launch to tell (other).
GapCause = Literal["host_wait", "kernel_wait", "other"]


def segments_and_gaps(ops: Sequence[Interval]) -> tuple[list[tuple[float, float]], list[tuple[float, float, GapCause]]]:
    """The union of ``ops``' intervals as ``(start_us, end_us)`` segments, and the gaps between them as
    ``(start_us, dur_us, cause)``, in time order: the one place the idle split is decided."""
    ordered = sorted(ops, key=BY_START)
    if not ordered:
        return [], []
    segments: list[tuple[float, float]] = []
    gaps: list[tuple[float, float, GapCause]] = []
    seg_start, seg_end = ordered[0].ts, ordered[0].end
    for op in ordered[1:]:
        if op.ts > seg_end:
            segments.append((seg_start, seg_end))
            cause: GapCause
            if op.launch_ts is None:
                cause = "other"
            elif op.launch_ts > seg_end:
                cause = "host_wait"
            else:
                cause = "kernel_wait"
            gaps.append((seg_end, op.ts - seg_end, cause))
            seg_start, seg_end = op.ts, op.end
        elif op.end > seg_end:
            seg_end = op.end
    segments.append((seg_start, seg_end))
    return segments, gaps


def timeline(ops: Sequence[Interval]) -> Timeline:
    """Busy (union of intervals), span and the HTA idle split of ``ops`` on one device."""
    if not ops:
        return Timeline(0.0, 0.0, 0.0, 0.0, 0.0)
    segments, gaps = segments_and_gaps(ops)
    busy = 0.0
    for start, end in segments:
        busy += end - start
    waits = {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
    for _, dur, cause in gaps:
        waits[cause] += dur
    span = segments[-1][1] - segments[0][0]  # the union's ends: the last end and the first start
    return Timeline(busy / 1e3, span / 1e3, waits["host_wait"] / 1e3, waits["kernel_wait"] / 1e3, waits["other"] / 1e3)


def union_us(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals."""
    total = 0.0
    seg_start = seg_end = None
    for start, end in sorted(intervals):
        if seg_end is None or seg_start is None:
            seg_start, seg_end = start, end
        elif start > seg_end:
            total += seg_end - seg_start
            seg_start, seg_end = start, end
        elif end > seg_end:
            seg_end = end
    if seg_start is not None and seg_end is not None:
        total += seg_end - seg_start
    return total
