"""What one iteration's GPU timeline strip adds up to: its idle time by cause, its busy time, its time per kernel class.

Derived from ``records.run.TimelineStrip`` once, here, so the page and any other reader print the same sums.
"""

from __future__ import annotations

from sparsedebug.records.run import TimelineStrip


def idle(strip: TimelineStrip, cause: str) -> tuple[float, int]:
    """The strip's idle time for one gap cause, in ms, and how many gaps it is."""
    durations = [g.dur_ms for g in strip.gaps if g.cause == cause]
    return sum(durations), len(durations)


def busy_ms(strip: TimelineStrip) -> float:
    """The span less every idle gap kept in the strip."""
    return strip.span_ms - sum(g.dur_ms for g in strip.gaps)


def by_class(strip: TimelineStrip) -> dict[str, tuple[float, int]]:
    """GPU time in ms and op count per kernel class, over the ops kept in the strip."""
    out: dict[str, tuple[float, int]] = {}
    for e in strip.events:
        ms, n = out.get(e.kernel_class.value, (0.0, 0))
        out[e.kernel_class.value] = (ms + e.dur_ms, n + 1)
    return out
