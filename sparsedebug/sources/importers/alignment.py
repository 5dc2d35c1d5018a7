"""Place sampled readings against a run's absolute time window.

A log of periodic readings (nvidia-smi rows, DCGM scrapes, power samples) says what held at each
sample time; each sample stands for the time until the next one, the last for a typical sampling
interval. Classify's clock evidence (``nvidia_smi.samples_in_window``) and the energy of a window
(``power.window``) both take their samples through these functions, so the two agree on which
samples a run's window holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparsedebug.core.stats import median


def typical_interval(times: Sequence[float]) -> float:
    """The median positive gap between successive sorted sample times (0 for fewer than two distinct times)."""
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    return median(gaps) if gaps else 0.0


def sample_spans(times: Sequence[float]) -> list[tuple[float, float]]:
    """The time each sample of sorted ``times`` stands for: from itself to the next sample, the last one for
    :func:`typical_interval`."""
    interval = typical_interval(times)
    return [(t, times[k + 1] if k + 1 < len(times) else t + interval) for k, t in enumerate(times)]


def overlapping(spans: Sequence[tuple[float, float]], start: float, end: float) -> list[int]:
    """Indices of the spans that touch ``[start, end]`` (a window shorter than a span still gets the span that covers it)."""
    return [k for k, (begin, stop) in enumerate(spans) if begin <= end and stop >= start]


def overlap_s(span: tuple[float, float], start: float, end: float) -> float:
    """Seconds of ``span`` inside ``[start, end]``."""
    return max(0.0, min(span[1], end) - max(span[0], start))


# Every offset from UTC a civil clock has had in recent decades (IANA's zones, summer time included): whole hours from
# -12 to +14, the half hours (Newfoundland, India, Iran, Myanmar, central Australia...) and the three-quarter hours
# (Nepal +5:45, Eucla +8:45, Chatham +12:45).
REAL_UTC_OFFSETS_H: tuple[float, ...] = tuple(sorted(
    {float(h) for h in range(-12, 15)} | {-9.5, -3.5, -2.5, 3.5, 4.5, 5.5, 6.5, 9.5, 10.5} | {5.75, 8.75, 12.75}
))


@dataclass(frozen=True)
class OffsetSearch:
    """The real UTC offsets under which a zone-less log covers every run's window, of ``tried`` tried."""

    aligned: tuple[float, ...]
    tried: int
    # The log's first timestamp read as UTC (its local clock), None for an empty log.
    log_first_s: float | None
    log_last_s: float | None

    @property
    def offset_h(self) -> float | None:
        """The one offset that aligns, None when several or none do."""
        return self.aligned[0] if len(self.aligned) == 1 else None


def search_utc_offset(local_s: Sequence[float], windows: Sequence[tuple[float, float]]) -> OffsetSearch:
    """Try every real UTC offset (:data:`REAL_UTC_OFFSETS_H`) on a log whose timestamps carry no zone: ``local_s``
    are its timestamps read as if they were UTC; an offset aligns when, shifted by it, the time the log's samples
    stand for (:func:`sample_spans`) holds every ``(start, end)`` window (absolute UTC seconds) whole."""
    times = sorted(local_s)
    if not times:
        return OffsetSearch((), len(REAL_UTC_OFFSETS_H), None, None)
    spans = sample_spans(times)
    first, last = spans[0][0], spans[-1][1]
    aligned = tuple(
        offset for offset in REAL_UTC_OFFSETS_H
        if windows and all(first - offset * 3600.0 <= start and end <= last - offset * 3600.0 for start, end in windows)
    )
    return OffsetSearch(aligned, len(REAL_UTC_OFFSETS_H), times[0], times[-1])


def calendar_problem(exc: ValueError) -> str | None:
    """Why a time written in the right layout is no time (``day is out of range for month`` for Feb 30, ``hour
    must be in 0..23``), from the ``ValueError`` of ``strptime`` or ``fromisoformat``; None when the text's layout
    did not match (a different message is due: what layout was expected)."""
    text = str(exc)
    layout = ("does not match format", "Invalid isoformat", "unconverted data remains")
    return None if any(marker in text for marker in layout) else text
