"""Rank-test distributions behind ``sparsedebug.core.stats``: exact where cheap, asymptotic elsewhere, any sample size.

- ``u_cdf_exact``: the null distribution of Mann-Whitney U without ties, lower
  half, exact to rounding for ``m*n <= EXACT_LIMIT``;
- ``rank_test_p``: the two-sided p-value: exact U without ties for small
  samples, the exact permutation distribution of the mid-rank sum with ties when
  that is cheap (``TIES_EXACT_COST``), else the normal approximation with tie and
  continuity correction (the same formula as scipy's ``method="asymptotic"``,
  without importing scipy: it costs ~0.5 s at CLI start);
- ``moses_k``: how many pairwise differences a Moses interval cuts from each end;
- ``kth_pairwise_difference``: the k-th smallest ``c_j - b_i`` without forming all
  ``m*n`` of them once there are more than ``MAX_PAIRS``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

# Largest m*n for which the U distribution (no ties) is computed exactly; the normal approximation above.
EXACT_LIMIT = 10_000

# Largest cost (array cells touched) of the exact permutation p-value with ties; asymptotic above.
TIES_EXACT_COST = 20_000_000

# Up to this many pairwise differences are formed and partitioned; above, the k-th is found by bisection.
MAX_PAIRS = 1_000_000


@lru_cache(maxsize=512)
def u_cdf_exact(m: int, n: int) -> tuple[float, ...]:
    """P(U <= u) under H0 (no ties) for u = 0..floor(m*n/2): the lower half, the only one the tests need.

    The count of arrangements with U = u is the coefficient of q^u in the Gaussian
    binomial ``[m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)``, built as
    ``c'[u] = c'[u-i] + c[u] - c[u-n-i]`` up to ``floor(m*n/2)`` only: float64 then
    keeps a relative accuracy of ~1e-12 down to the deepest tail (tested against
    exact integers); counts stay below C(200, 100) ~ 1e59 within ``EXACT_LIMIT``.
    """
    m, n = min(m, n), max(m, n)
    top = (m * n) // 2
    coeffs = np.zeros(top + 1, dtype=np.float64)
    coeffs[0] = 1.0
    for i in range(1, m + 1):
        diff = coeffs.copy()
        shift = n + i
        if shift <= top:
            diff[shift:] -= coeffs[: top + 1 - shift]
        # divide by (1 - q^i): a running sum with stride i, one cumsum per residue class
        padded = np.zeros(-(-(top + 1) // i) * i, dtype=np.float64)
        padded[: top + 1] = diff
        coeffs = np.cumsum(padded.reshape(-1, i), axis=0).ravel()[: top + 1]
    total = math.exp(math.lgamma(m + n + 1) - math.lgamma(m + 1) - math.lgamma(n + 1))
    cdf = np.minimum(np.cumsum(coeffs) / total, 1.0)
    return tuple(float(v) for v in cdf)


def _exact_p_no_ties(u: float, m: int, n: int) -> float:
    """Two-sided exact p of U = u (no ties): 2 P(U <= min(u, mn - u)), capped at 1."""
    low = round(min(u, m * n - u))
    return min(1.0, 2.0 * u_cdf_exact(m, n)[low])


def _exact_p_greater(u: float, m: int, n: int) -> float:
    """One-sided exact p of U >= u (no ties; U counts the pairs where the candidate is larger)."""
    cdf = u_cdf_exact(m, n)
    total = m * n
    if u > total / 2:
        return float(cdf[round(total - u)])  # P(U >= u) = P(U <= mn - u), by symmetry
    k = round(u) - 1
    return 1.0 if k < 0 else float(max(0.0, 1.0 - cdf[min(k, len(cdf) - 1)]))


def _ties_exact_cost(pooled_size: int, small: int) -> int:
    return (small + 1) * (2 * small * (pooled_size + 1) + 1) * (pooled_size + small)


def _exact_p_ties(small_side: FloatArray, other: FloatArray, tail: int = 0) -> float:
    """Exact two-sided permutation p of the mid-rank sum of ``small_side``, ties included.

    Doubled mid-ranks are integers; ``ways[j, s]`` counts the subsets of ``j`` items
    of the tie groups seen so far with doubled rank sum ``s`` (non-negative sums
    only, so float64 stays accurate). The p-value is the probability of a rank sum
    at least as far from its mean as the observed one.
    """
    pooled = np.concatenate([small_side, other])
    values, counts = np.unique(pooled, return_counts=True)
    ms, total = small_side.size, pooled.size
    upper = np.cumsum(counts)
    doubled = (2 * upper - counts + 1).astype(np.int64)  # first + last rank of each group
    observed = int(doubled[np.searchsorted(values, small_side)].sum())
    size = 2 * ms * (total + 1) + 1
    ways = np.zeros((ms + 1, size), dtype=np.float64)
    ways[0, 0] = 1.0
    for g, r in zip(counts.tolist(), doubled.tolist(), strict=True):
        new = ways.copy()
        for c in range(1, min(g, ms) + 1):
            new[c:, c * r :] += math.comb(g, c) * ways[: ms + 1 - c, : size - c * r]
        ways = new
    dist = ways[ms]
    mean = ms * (total + 1)
    sums = np.arange(size)
    if tail > 0:
        far = sums >= observed
    elif tail < 0:
        far = sums <= observed
    else:
        far = np.abs(sums - mean) >= abs(observed - mean)
    return float(min(1.0, dist[far].sum() / dist.sum()))


def rank_test_p(
    base: Sequence[float] | npt.NDArray[np.floating[Any]],
    cand: Sequence[float] | npt.NDArray[np.floating[Any]],
    alternative: Literal["two-sided", "greater"] = "two-sided",
) -> float:
    """Mann-Whitney U p-value of ``cand`` against ``base``: exact where cheap, asymptotic elsewhere.

    ``alternative="greater"``: one-sided, against "the candidate's values are larger"
    (slower, for times): the test a gate runs in the direction of harm. See the module
    docstring for which method applies; the result is always a finite number in [0, 1].
    No subsampling here (``compare_samples`` does that).
    """
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    pooled = np.concatenate([b, c])
    if pooled.size == 0 or b.size == 0 or c.size == 0 or np.all(pooled == pooled[0]):
        return 1.0
    m, n = b.size, c.size
    small, other = (b, c) if m <= n else (c, b)
    greater = alternative == "greater"
    ties = np.unique(pooled).size < pooled.size
    if not ties and m * n <= EXACT_LIMIT:
        if greater:
            ranks_c = np.searchsorted(np.sort(pooled), c).astype(np.float64) + 1.0
            return _exact_p_greater(float(ranks_c.sum()) - n * (n + 1) / 2.0, m, n)
        ranks_small = np.searchsorted(np.sort(pooled), small).astype(np.float64) + 1.0
        u = float(ranks_small.sum()) - small.size * (small.size + 1) / 2.0
        return _exact_p_no_ties(u, m, n)
    if ties and _ties_exact_cost(pooled.size, small.size) <= TIES_EXACT_COST:
        tail = 0 if not greater else (1 if small is c else -1)  # the candidate's rank sum high, or the baseline's low
        return _exact_p_ties(small, other, tail)
    return _asymptotic_p(b, c, pooled, greater)


def _asymptotic_p(b: FloatArray, c: FloatArray, pooled: FloatArray, greater: bool = False) -> float:
    """Normal approximation with tie and continuity correction, as scipy's ``method="asymptotic"``."""
    m, n, total = b.size, c.size, pooled.size
    order = np.sort(pooled)
    _, counts = np.unique(order, return_counts=True)
    # mid-ranks of c's values: (number below) + (ties + 1) / 2
    below = np.searchsorted(order, c, side="left").astype(np.float64)
    ties = np.searchsorted(order, c, side="right") - below
    u = float((below + (ties + 1.0) / 2.0).sum()) - n * (n + 1) / 2.0
    tie_term = float(np.sum(counts.astype(np.float64) ** 3 - counts))
    var = m * n / 12.0 * ((total + 1) - tie_term / (total * (total - 1)))
    if var <= 0.0:
        return 1.0
    if greater:
        z1 = (u - m * n / 2.0 - 0.5) / math.sqrt(var)
        return min(1.0, max(0.0, 0.5 * math.erfc(z1 / math.sqrt(2.0))))
    z = (abs(u - m * n / 2.0) - 0.5) / math.sqrt(var)
    return min(1.0, max(0.0, math.erfc(z / math.sqrt(2.0)))) if z > 0 else 1.0


def moses_k(m: int, n: int, alpha: float) -> int:
    """Number of pairwise differences to cut from each end for a two-sided ``1 - alpha`` interval.

    The largest k with P(U <= k - 1) <= alpha / 2; 0 means no interval exists at this level.
    """
    if m * n <= EXACT_LIMIT:
        cdf = u_cdf_exact(m, n)
        return int(np.searchsorted(np.asarray(cdf), alpha / 2, side="right"))
    z = -NormalDist().inv_cdf(alpha / 2)  # stdlib: no scipy import, accurate for tiny alpha
    k = math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12.0))
    return max(k, 0)


def kth_pairwise_difference(lb: FloatArray, lc: FloatArray, ks: Sequence[int], max_pairs: int = MAX_PAIRS) -> list[float]:
    """The k-th smallest (1-based) of the pairwise differences ``lc[j] - lb[i]``, for each k in ``ks``.

    ``lb`` and ``lc`` are sorted. Up to ``max_pairs`` differences they are formed
    and partitioned; above, each k-th is found by bisection on the value, counting
    the differences at or below it with one sorted search per step, then snapped to
    the largest actual difference at or below the bound.
    """
    m, n = lb.size, lc.size
    if m * n <= max_pairs:
        diffs = (lc[None, :] - lb[:, None]).ravel()
        idx = sorted({k - 1 for k in ks})
        part = np.partition(diffs, idx)
        return [float(part[k - 1]) for k in ks]

    def count(t: float) -> int:
        return int(m * n - np.searchsorted(lb, lc - t, side="left").sum())

    out: list[float] = []
    first, last = float(lc[0] - lb[-1]), float(lc[-1] - lb[0])
    slack = 1e-9 * (last - first) + 1e-12 * max(abs(first), abs(last), 1.0)  # room for rounding in lc - t
    for k in ks:
        lo, hi = first - slack, last + slack
        for _ in range(200):  # count(lo) < k <= count(hi)
            mid = lo + (hi - lo) / 2.0
            if mid <= lo or mid >= hi:
                break
            if count(mid) >= k:
                hi = mid
            else:
                lo = mid
        at = np.searchsorted(lb, lc - hi, side="left")
        valid = at < m
        out.append(float(np.max(lc[valid] - lb[at[valid]])) if np.any(valid) else hi)
    return out
