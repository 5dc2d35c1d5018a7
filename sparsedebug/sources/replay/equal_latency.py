"""The equal-latency search both graph sources share: the narrowing fractions tried and the bisection over them."""

from __future__ import annotations

from collections.abc import Callable

FRACTION_STEPS = 16
"""Narrowing fractions searched are ``k / FRACTION_STEPS`` for ``k = 0 .. FRACTION_STEPS - 1``."""


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
