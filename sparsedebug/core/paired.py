"""Paired comparison of two runs timed in the same rounds: per-round ratios, so drift common to both cancels.

Two replays run one after the other see different machines: on a loaded machine a
microsecond layer moves by 20-90% between them while each replay is internally tight,
and a two-sample rank test (:func:`sparsedebug.core.stats.compare_samples`) rightly calls
that significant. When baseline and candidate are timed *in the same rounds* (an
interleaved session, :func:`sparsedebug.sources.replay.replay.replay_pair`), round ``i``
of each saw the same machine, and the per-round log ratio ``d_i = log(c_i / b_i)``
carries the change without the drift: a slowdown of the machine during round ``i``
multiplies both sides and cancels in ``d_i``.

:func:`compare_paired` tests the ``d_i`` the way ``compare_samples`` tests two samples,
and answers with the same record (:class:`~sparsedebug.records.stats.SampleComparison`,
``paired=True``):

- **test**: the Wilcoxon signed-rank test of "median log ratio 0" (two-sided, or
  one-sided in the direction of harm), exact without ties up to ``EXACT_SIGNED`` pairs,
  else the normal approximation with tie and continuity correction (as scipy's
  ``wilcoxon(..., method="approx", correction=True)``); zero differences dropped
  (Wilcoxon's convention);
- **effect size**: ``ratio`` is the Hodges-Lehmann per-round ratio (exp of the median of
  the Walsh averages of ``d``), with Tukey's distribution-free interval from the same
  signed-rank distribution;
- **significant**: p <= alpha AND the ratio beyond ``min_effect``; **persistent**: the
  paired ratio on the same side of 1 in each time-ordered half (a burst confined to
  one half cannot make the finding; drift, which moves both sides, cannot flip a half,
  so the halves are not asked for ``sqrt(min_effect)`` as two separate samples are),
  and the test still significant without outlier rounds (Tukey fences on ``d``);
- **too few pairs**: the smallest p a signed-rank test can reach is ``2 / 2^n``
  (``1 / 2^n`` one-sided): 6 pairs two-sided, 5 one-sided at 0.05.

Above ``MAX_PAIRED`` pairs the test, interval and persistence use a deterministic
subsample of whole rounds (the same rounds of both sides); medians use every sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from sparsedebug.core.ranks import FloatArray
from sparsedebug.core.stats import beyond_factor, compare_samples, no_change_that_counts
from sparsedebug.records.notes import Note, note
from sparsedebug.records.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, Direction, SampleComparison

__all__ = [
    "EXACT_SIGNED",
    "MAX_PAIRED",
    "compare_paired",
    "compare_timings",
    "enough_pairs",
    "fewest_pairs",
    "paired_ratio",
    "per_round_separated",
    "signed_rank_p",
]

# Largest number of non-zero differences for which the signed-rank distribution (no ties) is computed exactly.
EXACT_SIGNED = 400

# Most pairs the test, the interval and the persistence checks use (their Walsh averages: n(n+1)/2); above, a
# subsample.
MAX_PAIRED = 2_000

# Seed of the deterministic subsample of rounds.
_SUBSAMPLE_SEED = 0x9A1D


@lru_cache(maxsize=64)
def signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(W+ <= w) under H0 (no ties, no zeros) for w = 0..n(n+1)/2: subsets of {1..n} by their sum, over 2^n."""
    top = n * (n + 1) // 2
    dist = np.zeros(top + 1, dtype=np.float64)
    dist[0] = 1.0
    for k in range(1, n + 1):
        shifted = np.zeros_like(dist)
        shifted[k:] = dist[: top + 1 - k]
        dist = 0.5 * (dist + shifted)  # halving each step: a probability throughout, never 2^n
    return tuple(float(v) for v in np.minimum(np.cumsum(dist), 1.0))


def log_min_attainable_pairs_p(n: int, *, one_sided: bool = False) -> float:
    """Natural log of the smallest p a signed-rank test of ``n`` non-zero differences can reach."""
    if n < 1:
        return 0.0
    return min(0.0, (0.0 if one_sided else math.log(2.0)) - n * math.log(2.0))


def enough_pairs(n: int, alpha: float = DEFAULT_ALPHA, *, one_sided: bool = False) -> bool:
    """Whether ``n`` paired rounds can reach significance ``alpha`` at all (5 one-sided, 6 two-sided at 0.05)."""
    return alpha > 0.0 and log_min_attainable_pairs_p(n, one_sided=one_sided) <= math.log(alpha) + 1e-12


def fewest_pairs(alpha: float = DEFAULT_ALPHA, *, one_sided: bool = False) -> int:
    """The fewest paired rounds with which a signed-rank test can reach ``alpha``."""
    n = 1
    while not enough_pairs(n, alpha, one_sided=one_sided):
        n += 1
    return n


def mid_ranks(values: FloatArray) -> tuple[FloatArray, bool]:
    """Mid-ranks (1-based) of ``values`` and whether there were ties."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    _, first, counts = np.unique(sorted_values, return_index=True, return_counts=True)
    mid = first + (counts + 1) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(mid, counts)
    return ranks, bool(np.any(counts > 1))


def signed_rank_p(diffs: FloatArray | list[float], alternative: Literal["two-sided", "greater"] = "two-sided") -> float:
    """Wilcoxon signed-rank p-value of ``diffs`` (zeros dropped); ``greater``: against "the differences are positive".

    Exact without ties up to ``EXACT_SIGNED`` non-zero differences, else the normal
    approximation with tie and continuity correction; 1.0 when nothing is left.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[d != 0.0]
    n = d.size
    if n == 0:
        return 1.0
    ranks, ties = mid_ranks(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    top = n * (n + 1) / 2.0
    if not ties and n <= EXACT_SIGNED:
        cdf = signed_rank_cdf(n)
        w = round(w_plus)
        upper = 1.0 if w <= 0 else 1.0 - cdf[w - 1]  # P(W+ >= w)
        if alternative == "greater":
            return float(min(1.0, max(0.0, upper)))
        lower = cdf[w]  # P(W+ <= w)
        return float(min(1.0, 2.0 * min(upper, lower)))
    _, counts = np.unique(np.abs(d), return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(counts.astype(np.float64) ** 3 - counts)) / 48.0
    if var <= 0.0:
        return 1.0
    mean = top / 2.0
    if alternative == "greater":
        z = (w_plus - mean - 0.5) / math.sqrt(var)
        return min(1.0, max(0.0, 0.5 * math.erfc(z / math.sqrt(2.0))))
    z = (abs(w_plus - mean) - 0.5) / math.sqrt(var)
    return min(1.0, max(0.0, math.erfc(z / math.sqrt(2.0)))) if z > 0 else 1.0


def _walsh(d: FloatArray) -> FloatArray:
    """All Walsh averages (d_i + d_j) / 2, i <= j, sorted."""
    i, j = np.triu_indices(d.size)
    averages: FloatArray = np.sort((d[i] + d[j]) / 2.0)
    return averages


def _tukey_k(n: int, alpha: float) -> int:
    """Walsh averages to cut from each end for a two-sided ``1 - alpha`` interval: the largest k with P(W+ <= k - 1) <= alpha / 2."""
    if n <= EXACT_SIGNED:
        return int(np.searchsorted(np.asarray(signed_rank_cdf(n)), alpha / 2, side="right"))
    z = -NormalDist().inv_cdf(alpha / 2)
    return max(0, math.floor(n * (n + 1) / 4.0 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)))


def _inliers(d: FloatArray) -> FloatArray:
    q1, q3 = np.percentile(d, [25.0, 75.0])
    spread = q3 - q1
    kept: FloatArray = d[(d >= q1 - 1.5 * spread) & (d <= q3 + 1.5 * spread)]
    return kept


def per_round_separated(base: FloatArray | list[float], cand: FloatArray | list[float], factor: float) -> bool:
    """Every round's candidate beyond its own baseline by ``factor``: the paired evidence left when a test cannot reach alpha."""
    b, c = np.asarray(base, dtype=np.float64), np.asarray(cand, dtype=np.float64)
    return b.size > 0 and b.size == c.size and bool(np.all(c > factor * b))


def _persistence(d: FloatArray, sign: int, alpha: float, min_effect: float, one_sided: bool) -> tuple[bool, list[Note]]:
    """Whether a significant per-round shift holds in each time-ordered half and without outlier rounds."""
    notes: list[Note] = []
    if d.size >= 4:
        for label, half in (("first half", d[: d.size // 2]), ("second half", d[d.size // 2 :])):
            hl = float(np.median(_walsh(half)))
            if sign * hl <= 0.0:
                return False, [note("core.half_differs", half=label, ratio=math.exp(hl), paired=True)]
        notes.append(note("core.halves_hold"))
    else:
        notes.append(note("core.halves_too_few", paired=True))
    kept = _inliers(d)
    dropped = d.size - kept.size
    if not dropped:
        notes.append(note("core.no_outliers", paired=True))
        return True, notes
    if not enough_pairs(int(np.count_nonzero(kept)), alpha, one_sided=one_sided):
        if not np.all(sign * kept >= math.log(min_effect)):
            return False, [*notes, note("core.inlier_rounds_mixed", rounds=int(kept.size), factor=min_effect)]
        notes.append(note("core.inlier_rounds_moved", rounds=int(kept.size), factor=min_effect))
        return True, notes
    p = signed_rank_p(kept, "greater" if one_sided else "two-sided")
    hl = float(np.median(_walsh(kept)))
    if p > alpha or beyond_factor(math.exp(hl), min_effect) != sign:
        return False, [*notes, note("core.outlier_driven", dropped=dropped, ratio=math.exp(hl), p=p, paired=True)]
    notes.append(note("core.outliers_dropped", dropped=dropped, paired=True))
    return True, notes


def _check(name: str, values: Any) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty sequence of numbers")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name}: samples must be finite and positive")
    return arr


def block_log_ratios(base: FloatArray, cand: FloatArray, block: int, segments: Sequence[int] | None = None) -> FloatArray:
    """``log(sum cand / sum base)`` over each block of ``block`` consecutive samples, within each segment.

    ``segments`` are the lengths of consecutive runs of samples that blocks must not
    straddle (pooled layers: one segment per layer); a trailing partial block of a
    segment is left out of the test.
    """
    lengths = list(segments) if segments is not None else [base.size]
    if sum(lengths) != base.size or any(n < 0 for n in lengths):
        raise ValueError(f"segments {lengths} do not add up to the {base.size} samples")
    out: list[FloatArray] = []
    start = 0
    for length in lengths:
        whole = (length // block) * block
        b = base[start : start + whole].reshape(-1, block).sum(axis=1)
        c = cand[start : start + whole].reshape(-1, block).sum(axis=1)
        out.append(np.log(c) - np.log(b))
        start += length
    ratios: FloatArray = np.concatenate(out) if out else np.zeros(0)
    return ratios


def paired_ratio(base: Any, cand: Any, block: int = 1, segments: Sequence[int] | None = None) -> float:
    """The Hodges-Lehmann paired ratio of ``cand`` to ``base`` (exp of the median Walsh average of the block log ratios)."""
    d = block_log_ratios(_check("base", base), _check("cand", cand), block, segments)
    return math.exp(float(np.median(_walsh(d)))) if d.size else float(np.median(cand) / np.median(base))


def compare_paired(
    base: Any,
    cand: Any,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alternative: Literal["two-sided", "greater"] = "two-sided",
    block: int = 1,
    segments: Sequence[int] | None = None,
) -> SampleComparison:
    """Compare ``cand`` with ``base`` round by round (``base[i]`` and ``cand[i]`` timed in the same round).

    ``block`` > 1: the unit is a block of that many consecutive rounds (where a call's
    position in its round must cancel); ``segments`` as :func:`block_log_ratios`.
    ``alternative="greater"``: the side of harm only (the candidate slower). Returns a
    :class:`SampleComparison` with ``paired=True``: ``ratio`` is the Hodges-Lehmann
    per-block ratio and its interval, ``n_base == n_cand`` the blocks tested, medians of
    every sample. ``ValueError`` on sides of different lengths, empty, non-finite or
    non-positive samples, ``alpha`` outside (0, 1) or ``min_effect`` below 1.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not min_effect >= 1.0:
        raise ValueError(f"min_effect must be >= 1, got {min_effect}")
    full_b, full_c = _check("base", base), _check("cand", cand)
    if full_b.size != full_c.size:
        raise ValueError(f"paired samples need one of each per round: {full_b.size} vs {full_c.size}")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    d_full = block_log_ratios(full_b, full_c, block, segments)
    d = d_full
    if d.size > MAX_PAIRED:
        d = d_full[np.sort(np.random.default_rng([_SUBSAMPLE_SEED, d.size]).choice(d.size, size=MAX_PAIRED, replace=False))]
    d = d if d.size else np.zeros(1)
    walsh = _walsh(d)
    log_ratio = float(np.median(walsh))
    ratio = math.exp(log_ratio)
    k = _tukey_k(d.size, alpha)
    ci_low, ci_high = (math.exp(float(walsh[k - 1])), math.exp(float(walsh[walsh.size - k]))) if k >= 1 else (None, None)
    common: dict[str, Any] = {
        "n_base": int(d.size), "n_cand": int(d.size),
        "base_median": float(np.median(full_b)), "cand_median": float(np.median(full_c)),
        "ratio": ratio, "ci_low": ci_low, "ci_high": ci_high, "alpha": alpha, "min_effect": min_effect,
        "subsampled_from": [int(d_full.size), int(d_full.size)] if d.size < d_full.size else None, "paired": True, "block": block,
    }
    one_sided = alternative == "greater"
    nonzero = int(np.count_nonzero(d))
    if not enough_pairs(nonzero, alpha, one_sided=one_sided):
        smallest = math.exp(log_min_attainable_pairs_p(nonzero, one_sided=one_sided))
        return SampleComparison(
            **common, p_value=None, significant=False, persistent=False, enough_samples=False, direction="same",
            min_attainable_p=smallest, nonzero=nonzero,
        )
    p = signed_rank_p(d, alternative)
    sign = beyond_factor(ratio, min_effect)
    if one_sided and sign < 0:
        sign = 0
    unmoved = no_change_that_counts(common, p=p, alpha=alpha, sign=sign)
    if unmoved is not None:
        return unmoved
    persistent, checks = _persistence(d, sign, alpha, min_effect, one_sided)
    direction: Direction = "slower" if sign > 0 else "faster"
    return SampleComparison(
        **common, p_value=p, significant=True, persistent=persistent, enough_samples=True, direction=direction, persistence=checks,
    )


def compare_timings(
    base: Any,
    cand: Any,
    *,
    block: int | None,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alternative: Literal["two-sided", "greater"] = "two-sided",
    segments: Sequence[int] | None = None,
) -> SampleComparison:
    """Paired by blocks of ``block`` samples (:func:`compare_paired`) when ``block`` is set and the sides have as many samples, else two samples.

    ``block`` (None: unpaired) is how many consecutive samples of each side make one
    balanced unit of the session that timed both in the same rounds; samples of unequal
    length cannot be paired and are compared as two samples
    (:func:`sparsedebug.core.stats.compare_samples`).
    """
    if block is not None and len(base) == len(cand):
        return compare_paired(base, cand, alpha=alpha, min_effect=min_effect, alternative=alternative, block=block, segments=segments)
    return compare_samples(base, cand, alpha=alpha, min_effect=min_effect, alternative=alternative)
