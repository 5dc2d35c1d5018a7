"""Tails without assuming a distribution: confidence bounds for a quantile, and a test of a heavier tail.

The p99 of 20 samples is, by interpolation, almost their maximum: one preempted round
moves it by any amount. Whether the *true* p99 is over a budget, or over a multiple of
another run's, is a question about the distribution, and order statistics answer it
without assuming a shape: with ``n`` samples, ``X_(k) <= q-quantile`` exactly when at
least ``k`` samples fall at or below the quantile, which happens with probability
``P(Binomial(n, q) >= k)``. So

- the **lower bound** at confidence ``1 - alpha`` is ``X_(k)`` for the largest ``k`` with
  ``P(Binomial(n, q) >= k) >= 1 - alpha`` (for ``q = 0.99`` and 20 samples: the second
  largest sample, so a single outlier cannot carry it);
- the **upper bound** is ``X_(k)`` for the smallest ``k`` with
  ``P(Binomial(n, q) <= k - 1) >= 1 - alpha``; below about ``log(alpha) / log(q)`` samples
  (299 for p99 at 95%) no sample is one, and the bound is ``None``.

Whether a candidate's tail is heavier than a baseline's is a two-sample question, and
with 20 samples neither p99 is known. :func:`exceedance_p` answers the question that
can be answered: if both samples came from one distribution (every ordering of the
pooled samples equally likely), the chance that at least ``k`` candidate samples lie
above every baseline sample is ``C(n_cand, k) / C(n_base + n_cand, k)`` (the top ``k``
of the pooled ranks all candidates). Counting the candidate samples above a *multiple*
of the baseline's largest sample only makes that rarer, so the same figure bounds the
p-value of "this many candidate samples exceed 1.25x the baseline's worst".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sparsedebug.records.base import Record
from sparsedebug.records.stats import DEFAULT_ALPHA

P99 = 0.99


class QuantileBounds(Record):
    """A quantile's sample value and its one-sided confidence bounds (``high`` None: not bounded by any sample)."""

    q: float
    n: int
    alpha: float
    low: float
    high: float | None


def _binom_sf(n: int, q: float) -> list[float]:
    """``P(Binomial(n, q) >= k)`` for k = 0..n+1, by summing the pmf from the top (exact enough for n <= 10^5)."""
    log_q, log_p = math.log(q), math.log1p(-q)
    pmf = [math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_q + (n - k) * log_p) for k in range(n + 1)]
    sf = [0.0] * (n + 2)
    for k in range(n, -1, -1):
        sf[k] = sf[k + 1] + pmf[k]
    return [min(1.0, value) for value in sf]


def quantile_bounds(samples: Sequence[float], q: float = P99, alpha: float = DEFAULT_ALPHA) -> QuantileBounds:
    """One-sided ``1 - alpha`` confidence bounds of the ``q`` quantile of the distribution ``samples`` came from.

    Raises ``ValueError`` on an empty sample or ``q``/``alpha`` outside (0, 1).
    """
    if not samples:
        raise ValueError("quantile bounds of an empty sample")
    if not 0.0 < q < 1.0 or not 0.0 < alpha < 1.0:
        raise ValueError(f"q and alpha must be in (0, 1), got q={q}, alpha={alpha}")
    ordered = sorted(float(x) for x in samples)
    n = len(ordered)
    sf = _binom_sf(n, q)
    low_k = max((k for k in range(1, n + 1) if sf[k] >= 1.0 - alpha), default=1)
    # P(Bin <= k-1) = 1 - P(Bin >= k)
    high_k = next((k for k in range(1, n + 1) if 1.0 - sf[k] >= 1.0 - alpha), None)
    return QuantileBounds(
        q=q, n=n, alpha=alpha, low=ordered[low_k - 1], high=ordered[high_k - 1] if high_k is not None else None
    )


def exceedance_p(k: int, n_base: int, n_cand: int) -> float:
    """Under one distribution, the chance that ``k`` or more of ``n_cand`` samples exceed all ``n_base`` others."""
    if k <= 0:
        return 1.0
    if k > n_cand or n_base < 1:
        return 0.0 if k > n_cand else 1.0
    return math.comb(n_cand, k) / math.comb(n_base + n_cand, k)


def exceedances_needed(n_base: int, n_cand: int, alpha: float) -> int | None:
    """The fewest candidate samples above the baseline's worst that are significant at ``alpha`` (None: no count is)."""
    return next((k for k in range(1, n_cand + 1) if exceedance_p(k, n_base, n_cand) <= alpha), None)
