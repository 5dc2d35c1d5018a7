"""The timeline strip of a traced run: one iteration's GPU ops and idle gaps, for the HTML page.

The trace importer hands :func:`iteration_strip` its ops grouped by iteration; the
strip keeps the iteration with the median span (the lower median; iterations of equal
span in trace order), so a warm-up iteration does not stand for the run. Times are milliseconds from
that iteration's first GPU op start. Each idle gap of the device-wide busy union is
classed as the importer's ``timeline`` classes it, Holistic Trace Analysis style:
*host wait* when the next op's launch call started after the device went idle,
*kernel wait* when it was already queued, *other* when the next op has no linked
launch call; so the gaps' sum by cause equals the iteration's ``host_wait_ms`` and
``kernel_wait_ms`` share.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparsedebug.records.run import TimelineEvent, TimelineGap, TimelineStrip
from sparsedebug.sources.importers.trace.analysis.timeline import GapCause, segments_and_gaps
from sparsedebug.sources.importers.trace.read.events import GpuOp

# Most GPU ops a strip keeps; a longer iteration is cut there (``TimelineStrip.cut_at_ms``).
MAX_EVENTS = 4000


def _span(ops: Sequence[GpuOp]) -> float:
    return max(op.end for op in ops) - min(op.ts for op in ops)


def idle_gaps(ops: Sequence[GpuOp]) -> list[tuple[float, float, GapCause]]:
    """``(start_us, dur_us, cause)`` of every gap in the union of ``ops``' intervals, in time order."""
    return segments_and_gaps(ops)[1]


def iteration_strip(groups: Sequence[Sequence[GpuOp]], max_events: int = MAX_EVENTS) -> TimelineStrip | None:
    """The strip of the median-span iteration among ``groups`` (ops per iteration); None without ops."""
    candidates = [(i, group) for i, group in enumerate(groups) if group]
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda item: (_span(item[1]), item[0]))
    index, group = ranked[(len(ranked) - 1) // 2]
    ordered = sorted(group, key=lambda op: (op.ts, op.end))
    origin = ordered[0].ts
    cut_at: float | None = None
    kept = ordered
    if len(ordered) > max_events:
        kept = ordered[:max_events]
        cut_at = ordered[max_events].ts
    events = [
        TimelineEvent(
            start_ms=(op.ts - origin) / 1e3, dur_ms=op.dur / 1e3, kernel_class=op.cls, stream=op.stream, layer=op.layer
        )
        for op in kept
    ]
    gaps = [
        TimelineGap(start_ms=(start - origin) / 1e3, dur_ms=dur / 1e3, cause=cause)
        for start, dur, cause in idle_gaps(ordered)
        if cut_at is None or start + dur <= cut_at
    ]
    return TimelineStrip(
        iteration=index,
        span_ms=_span(ordered) / 1e3,
        events=events,
        events_total=len(ordered),
        gaps=gaps,
        cut_at_ms=(cut_at - origin) / 1e3 if cut_at is not None else None,
    )
