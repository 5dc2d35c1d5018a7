"""Place sampled readings against a run's absolute time window.

A log of periodic readings (nvidia-smi rows, DCGM scrapes, power samples) says what held at each
sample time; each sample stands for the time until the next one, the last for a typical sampling
interval. Classify's clock evidence (``nvidia_smi.samples_in_window``) and the energy of a window
(``power.window``) both take their samples through these functions, so the two agree on which
samples a run's window holds.
"""

from __future__ import annotations

from collections.abc import Sequence

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
