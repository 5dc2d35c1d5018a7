"""The equal-latency comparison both graph sources share: the narrowing fractions, the search on each clock, the record.

"At this latency, is sparsity better than a smaller dense model?" The dense
model is narrowed (a graph source's :class:`~sparsedebug.sources.replay.protocol.Narrowing`
removes a share of its FFN neurons) until it is as fast as the sparse candidate,
then the qualities are compared. The latency to match is on the target clock
when the workload's backend profile models a GPU (projected, the same for the
same workload), with this machine's timed search kept as the cross-check; else
on this machine's clock (timed, noisy). When the dense model is already as fast
as the candidate, nothing is narrowed and the comparison reports the quality the
sparsity costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.records.run import EqualLatencyQuality, QualityDelta
from sparsedebug.records.target import LatencyMatch, TargetClock
from sparsedebug.sources.replay.protocol import Narrowing

# Narrowing fractions searched are ``k / FRACTION_STEPS`` for ``k = 0 .. FRACTION_STEPS - 1``.
FRACTION_STEPS = 16


@dataclass(frozen=True)
class FfnGroup:
    """One FFN: the linears that produce its neurons (gate/up) and the one that consumes them (down), in either graph source."""

    producers: tuple[str, ...]
    consumer: str
    width: int


def equal_latency_step(ratio: Callable[[int], float], steps: int) -> tuple[int, bool]:
    """Smallest narrowing step in ``1 .. steps-1`` whose latency ratio (narrowed / candidate) is at most 1.

    ``ratio(step)`` measures it; bisection assumes it falls as the step grows
    (fewer neurons, less work). Returns ``(step, reached)``; when even the
    largest step is slower, ``(steps - 1, False)``.
    """
    lo, hi = 1, steps - 1
    if ratio(hi) > 1.0:
        return hi, False
    while lo < hi:
        mid = (lo + hi) // 2
        if ratio(mid) <= 1.0:
            hi = mid
        else:
            lo = mid + 1
    ratio(lo)
    return lo, True


@dataclass(frozen=True)
class Match:
    """The result of an equal-latency search on one clock."""

    step: int
    reached: bool
    narrowed_ms: float
    candidate_ms: float


def search_projected(dense_ms: Callable[[int], float], candidate_ms: float) -> Match:
    """The search on the target clock: ``dense_ms(step)`` is the narrowed dense forward, projected (deterministic)."""
    projected: dict[int, float] = {}

    def at(step: int) -> float:
        if step not in projected:
            projected[step] = dense_ms(step)
        return projected[step]

    if at(0) <= candidate_ms:
        return Match(0, True, at(0), candidate_ms)
    step, reached = equal_latency_step(lambda s: at(s) / candidate_ms, FRACTION_STEPS)
    return Match(step, reached, at(step), candidate_ms)


def search_timed(
    narrowed: Callable[[int], Callable[[], object]], candidate: Callable[[], object],
    span: list[float], dense_samples: list[float], repeats: int,
) -> Match:
    """The search on this machine's clock: interleaved timings of the candidate and each narrowed forward tried."""
    rounds = max(5, repeats // 2)
    cache: dict[int, tuple[float, float, float]] = {}

    def ratio(step: int) -> float:
        if step not in cache:
            timed = interleaved({"candidate": candidate, "narrowed": narrowed(step)}, rounds=rounds, warmup=1)
            narrowed_p50, candidate_p50 = median(timed["narrowed"]), median(timed["candidate"])
            cache[step] = (narrowed_p50 / candidate_p50, narrowed_p50, candidate_p50)
        return cache[step][0]

    if median(dense_samples) <= median(span):
        return Match(0, True, median(dense_samples), median(span))
    step, reached = equal_latency_step(ratio, FRACTION_STEPS)
    return Match(step, reached, cache[step][1], cache[step][2])


def _projected_dense(narrowing: Narrowing, target: TargetClock) -> Callable[[int], float]:
    dense = target.forward.dense

    def at(step: int) -> float:
        if step == 0 and dense is not None:
            return dense.total_ms
        value = narrowing.target_dense_ms(step, target.launch)
        return value if value is not None else float("inf")

    return at


def equal_latency(
    narrowing: Narrowing,
    candidate: Callable[[], object],
    span: list[float],
    dense_samples: list[float],
    repeats: int,
    candidate_quality: QualityDelta,
    target: TargetClock | None = None,
) -> EqualLatencyQuality:
    """Narrow the dense model until it is as fast as the candidate; compare qualities (see the module docstring).

    ``span`` and ``dense_samples`` are this machine's whole-forward samples of
    the candidate and the dense model; ``candidate`` runs one candidate forward.
    With a ``target`` clock whose whole forward has figures the narrowing is chosen
    there and this machine's search is kept as ``cross_check``.
    """
    cpu = search_timed(narrowing.forward, candidate, span, dense_samples, repeats)
    on_target = None
    if target is not None and target.forward.candidate is not None and target.forward.dense is not None:
        on_target = search_projected(_projected_dense(narrowing, target), target.forward.candidate.total_ms)
    chosen = on_target or cpu
    narrowed_quality = narrowing.quality(chosen.step)
    cross = None
    if on_target is not None:
        cross = LatencyMatch(
            clock="this_machine", narrowed_ffn_fraction=cpu.step / FRACTION_STEPS, narrowed_latency_ms=cpu.narrowed_ms,
            candidate_latency_ms=cpu.candidate_ms, latency_matched=cpu.reached,
        )
    return EqualLatencyQuality(
        narrowed_ffn_fraction=chosen.step / FRACTION_STEPS,
        narrowed_latency_ms=chosen.narrowed_ms,
        candidate_latency_ms=chosen.candidate_ms,
        narrowed=narrowed_quality,
        candidate=candidate_quality,
        latency_matched=chosen.reached,
        sparsity_wins=(not chosen.reached) or narrowing.better(candidate_quality, narrowed_quality),
        clock="target" if on_target is not None else "this_machine",
        cross_check=cross,
        importance=narrowing.importance,
    )
