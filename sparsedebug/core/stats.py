"""Statistics over raw timing samples: percentiles, and the significance test bisect and gate use.

Latencies are always quoted as p50/p95/p99 (never a bare mean): tails are where
sparse deployments hide their per-call overheads.

``compare_samples`` decides whether a candidate's samples differ from a
baseline's *for real*, the way asv does it, plus a persistence check:

- **significant**: a two-sided Mann-Whitney U rank test rejects "same
  distribution" at ``alpha`` AND the ratio of medians passes a minimum effect
  factor (default 1.05, ``records.defaults.DEFAULT_MIN_EFFECT``: a 1% shift on a
  noisy machine is not a finding, a 10% one must be);
- **effect size**: the candidate/baseline median ratio, with a distribution-free
  confidence interval for the ratio: the Hodges-Lehmann shift of the log samples
  and its Moses (rank-based) interval;
- **persistent**: the shift also holds in each time-ordered half of the samples
  and survives dropping outliers (Tukey fences), so one burst of noise cannot
  make a finding;
- **too few samples**: with ``m`` and ``n`` samples the smallest two-sided p a
  rank test can reach is ``2 / C(m+n, m)`` (0.10 for 3 versus 3). When that is
  above ``alpha`` the comparison says so (``enough_samples=False``) instead of
  guessing; the ratio is still reported.

Valid for any sample count from 2 to millions:

- ``C(m+n, m)`` is never formed as a float: the smallest attainable p is
  computed in log space (it underflows to 0.0, never overflows).
- p-values (``rank_test_p``): without ties and ``m*n <= 10,000``, the exact
  null distribution of U (lower half of the Gaussian binomial, float64, no
  cancellation); with ties in a small sample, the exact permutation
  distribution of the mid-rank sum (bounded by ``ranks.TIES_EXACT_COST``); else the
  normal approximation with tie and continuity correction (as scipy's
  ``method="asymptotic"``, without importing scipy). Identical values give p = 1.
- The Moses interval's ``k`` is exact up to ``m*n = 10,000``, normal above (ties
  ignored there: slightly conservative). Beyond ``ranks.MAX_PAIRS`` pairwise
  differences the k-th one is found by bisection on its value, not by sorting.
- **Cap**: past ``MAX_TEST_SAMPLES`` (10,000) samples on a side, the test, the
  interval and the persistence checks use a deterministic subsample (fixed seed,
  kept in time order); ``subsampled_from`` holds the original sizes and the
  reason says so. Medians and the ratio always use every sample.

**Pooling: what one sample is.** Each sample counts as one independent draw.
Imported traces give the kernel stage one sample *per call* (per annotation
instance, or per kernel without annotations: a layer called 624 times gives 624
samples) and the schedule and outcome stages one *per iteration*. Calls of one
iteration share its clocks, caches and host load, so a per-call test is more
sensitive than a per-iteration one; the persistence checks (both time-ordered
halves, without outliers) keep a burst inside one iteration from becoming a
finding. For per-iteration pooling, sum each iteration's calls before calling.
Bisect pools identical layers of one role (per call) when one has too few.

Two runs timed in the same rounds of one session are compared round by round instead
(:mod:`sparsedebug.core.paired`, the Wilcoxon signed-rank test on per-round ratios):
the machine's drift, common to both sides of a round, cancels there and not here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from sparsedebug.core.ranks import FloatArray, kth_pairwise_difference, moses_k, rank_test_p
from sparsedebug.records.notes import Note, note
from sparsedebug.records.stats import (
    DEFAULT_ALPHA as DEFAULT_ALPHA,
)
from sparsedebug.records.stats import (
    DEFAULT_MIN_EFFECT as DEFAULT_MIN_EFFECT,
)
from sparsedebug.records.stats import (
    P99_FEW_SAMPLES as P99_FEW_SAMPLES,
)
from sparsedebug.records.stats import (
    TAIL_MIN_SAMPLES as TAIL_MIN_SAMPLES,
)
from sparsedebug.records.stats import (
    Direction as Direction,
)
from sparsedebug.records.stats import (
    Percentiles as Percentiles,
)
from sparsedebug.records.stats import (
    SampleComparison as SampleComparison,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_EFFECT",
    "MAX_TEST_SAMPLES",
    "P99_FEW_SAMPLES",
    "Direction",
    "Percentiles",
    "SampleComparison",
    "Samples",
    "compare_samples",
    "enough_samples",
    "fewest_samples",
    "hodges_lehmann_ratio",
    "log_min_attainable_p",
    "median",
    "min_attainable_p",
    "percentiles",
    "quantiles",
    "rank_test_p",
    "separated",
    "subsample",
]

# Per side, the most samples the rank test, interval and persistence checks use; above, a deterministic subsample.
MAX_TEST_SAMPLES = 10_000

# Seed of the deterministic subsample (the same input always gives the same subsample).
_SUBSAMPLE_SEED = 0x5D5EED


def quantiles(samples: Sequence[float], points: Sequence[float]) -> list[float]:
    """The ``points`` percentiles (0-100, linear interpolation) of non-empty ``samples``."""
    if len(samples) == 0:
        raise ValueError("percentiles of an empty sample")
    return [float(v) for v in np.percentile(np.asarray(samples, dtype=np.float64), list(points))]


def percentiles(samples: Sequence[float]) -> Percentiles:
    """p50/p95/p99 (linear interpolation) of non-empty ``samples``."""
    p50, p95, p99, slowest = quantiles(samples, (50.0, 95.0, 99.0, 100.0))
    return Percentiles(n=len(samples), p50=p50, p95=p95, p99=p99, slowest=slowest)


def median(samples: Sequence[float]) -> float:
    """Median of non-empty ``samples``."""
    if len(samples) == 0:
        raise ValueError("median of an empty sample")
    return float(np.median(np.asarray(samples, dtype=np.float64)))


# Raw samples: a list of floats or a 1-D numpy array.
Samples = Sequence[float] | npt.NDArray[np.floating[Any]]


# --------------------------------------------------------------------------- attainable p


def log_min_attainable_p(n_base: int, n_cand: int, *, one_sided: bool = False) -> float:
    """Natural log of ``min_attainable_p``: ``log 2 - log C(m+n, m)`` (``- log C`` one-sided), finite for any sizes."""
    if n_base < 1 or n_cand < 1:
        return 0.0
    log_comb = math.lgamma(n_base + n_cand + 1) - math.lgamma(n_base + 1) - math.lgamma(n_cand + 1)
    return min(0.0, (0.0 if one_sided else math.log(2.0)) - log_comb)


def min_attainable_p(n_base: int, n_cand: int, *, one_sided: bool = False) -> float:
    """Smallest p-value an exact rank test (no ties) can give for these sample sizes.

    ``2 / C(m+n, m)`` two-sided, ``1 / C(m+n, m)`` one-sided, capped at 1, computed
    in log space: for large sizes it underflows to 0.0 instead of overflowing.
    """
    return math.exp(log_min_attainable_p(n_base, n_cand, one_sided=one_sided))


def enough_samples(n_base: int, n_cand: int, alpha: float = DEFAULT_ALPHA, *, one_sided: bool = False) -> bool:
    """Whether a rank test on samples of these sizes can reach significance ``alpha`` at all (3 vs 3 one-sided at 0.05)."""
    if alpha <= 0.0:
        return False
    return log_min_attainable_p(n_base, n_cand, one_sided=one_sided) <= math.log(alpha) + 1e-12


def fewest_samples(alpha: float = DEFAULT_ALPHA, *, one_sided: bool = False) -> int:
    """The fewest samples per side (equal sides) with which a rank test can reach ``alpha``."""
    n = 1
    while not enough_samples(n, n, alpha, one_sided=one_sided):
        n += 1
    return n


def separated(base: Samples, cand: Samples, factor: float) -> bool:
    """Every candidate sample beyond every baseline sample by ``factor`` (slower): the evidence left when a test cannot reach alpha."""
    return float(np.min(np.asarray(cand, dtype=np.float64))) > factor * float(np.max(np.asarray(base, dtype=np.float64)))


def _log_sorted(base: FloatArray, cand: FloatArray) -> tuple[FloatArray, FloatArray]:
    return np.sort(np.log(base)), np.sort(np.log(cand))

def _ratio_interval(base: FloatArray, cand: FloatArray, alpha: float) -> tuple[float | None, float | None]:
    """Moses confidence interval for the median ratio (a shift on the log scale)."""
    m, n = base.size, cand.size
    k = moses_k(m, n, alpha)
    if k < 1:
        return None, None
    lb, lc = _log_sorted(base, cand)
    low, high = kth_pairwise_difference(lb, lc, [k, m * n + 1 - k])
    return float(np.exp(low)), float(np.exp(high))


def subsample(values: Samples, cap: int = MAX_TEST_SAMPLES) -> FloatArray:
    """At most ``cap`` of ``values``: all of them when they fit, else a fixed-seed draw kept in the original order."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size <= cap:
        return arr
    rng = np.random.default_rng([_SUBSAMPLE_SEED, arr.size])
    keep = np.sort(rng.choice(arr.size, size=cap, replace=False))
    picked: FloatArray = arr[keep]
    return picked


def hodges_lehmann_ratio(base: Samples, cand: Samples) -> float:
    """Hodges-Lehmann estimate of the cand/base ratio: exp of the median pairwise log difference.

    Above ``MAX_TEST_SAMPLES`` per side, on the same deterministic subsample as ``compare_samples``.
    """
    b = subsample(_check_samples("base", base))
    c = subsample(_check_samples("cand", cand))
    lb, lc = _log_sorted(b, c)
    total = b.size * c.size
    mid = kth_pairwise_difference(lb, lc, [(total + 1) // 2, total // 2 + 1])
    return float(np.exp((mid[0] + mid[1]) / 2.0))


# --------------------------------------------------------------------------- comparison


def beyond_factor(ratio: float, factor: float) -> int:
    """+1 when ratio >= factor, -1 when ratio <= 1/factor, else 0 (within the minimum effect either way)."""
    if ratio >= factor:
        return 1
    if ratio <= 1.0 / factor:
        return -1
    return 0


def _tukey_inliers(values: FloatArray) -> FloatArray:
    q1, q3 = np.percentile(values, [25.0, 75.0])
    spread = q3 - q1
    mask = (values >= q1 - 1.5 * spread) & (values <= q3 + 1.5 * spread)
    kept: FloatArray = values[mask]
    return kept


def _check_samples(name: str, samples: Samples) -> FloatArray:
    values = np.asarray(samples, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name}: expected a non-empty sequence of numbers")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: samples must be finite")
    if np.any(values <= 0):
        raise ValueError(f"{name}: samples must be positive (times, or a positive metric)")
    return values


def _persistence(
    base: FloatArray, cand: FloatArray, sign: int, alpha: float, min_effect: float, one_sided: bool = False
) -> tuple[bool, list[Note]]:
    """Whether a significant shift holds in each time-ordered half and without outliers.

    When too few samples remain without outliers for the test to reach ``alpha``, the
    shift persists only if the remaining samples are separated by ``min_effect`` (every
    one of one side beyond every one of the other).
    """
    notes: list[Note] = []
    half_factor = math.sqrt(min_effect)
    if base.size >= 4 and cand.size >= 4:
        for label, b, c in (
            ("first half", base[: base.size // 2], cand[: cand.size // 2]),
            ("second half", base[base.size // 2 :], cand[cand.size // 2 :]),
        ):
            half_ratio = float(np.median(c) / np.median(b))
            if beyond_factor(half_ratio, half_factor) != sign:
                return False, [note("core.half_differs", half=label, ratio=half_ratio, paired=False)]
        notes.append(note("core.halves_hold"))
    else:
        notes.append(note("core.halves_too_few", paired=False))
    b_in, c_in = _tukey_inliers(base), _tukey_inliers(cand)
    dropped = (base.size - b_in.size) + (cand.size - c_in.size)
    if dropped:
        if not enough_samples(b_in.size, c_in.size, alpha, one_sided=one_sided):
            apart = separated(b_in, c_in, min_effect) if sign > 0 else separated(c_in, b_in, min_effect)
            if not apart:
                return False, [*notes, note("core.inliers_overlap", n_base=int(b_in.size), n_cand=int(c_in.size))]
            notes.append(note("core.inliers_separated", n_base=int(b_in.size), n_cand=int(c_in.size), factor=min_effect))
            return True, notes
        p = rank_test_p(b_in, c_in, "greater" if one_sided else "two-sided")
        ratio = float(np.median(c_in) / np.median(b_in))
        if p > alpha or beyond_factor(ratio, min_effect) != sign:
            return False, [*notes, note("core.outlier_driven", dropped=dropped, ratio=ratio, p=p, paired=False)]
        notes.append(note("core.outliers_dropped", dropped=dropped, paired=False))
    else:
        notes.append(note("core.no_outliers", paired=False))
    return True, notes


def no_change_that_counts(common: dict[str, Any], *, p: float, alpha: float, sign: int) -> SampleComparison | None:
    """The comparison when a test found no change that counts: not significant, or significant but within the
    minimum effect (``sign`` 0: the ratio lies within it); None when it found one. ``common`` holds the
    comparison's other fields."""
    if p <= alpha and sign != 0:
        return None
    return SampleComparison(**common, p_value=p, significant=False, persistent=False, enough_samples=True, direction="same")


def compare_samples(
    base: Samples,
    cand: Samples,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alternative: Literal["two-sided", "greater"] = "two-sided",
) -> SampleComparison:
    """Compare candidate samples with baseline samples (positive values such as times).

    ``alternative="greater"`` tests one side only, the direction of harm (the candidate
    slower): a faster candidate is then ``same``, and 3 against 3 samples can reach 0.05.

    Returns the median ratio with its rank-based confidence interval, the
    Mann-Whitney U p-value, and whether the change is significant (p < alpha
    and the ratio beyond ``min_effect`` either way), persistent (also in each
    half and without outliers) and decidable at all with these sample sizes.
    Above ``MAX_TEST_SAMPLES`` per side the test runs on a deterministic
    subsample and ``subsampled_from`` says so. Raises ``ValueError`` on empty,
    non-finite or non-positive samples, or on ``alpha`` outside (0, 1) or
    ``min_effect`` below 1.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not min_effect >= 1.0:
        raise ValueError(f"min_effect must be >= 1, got {min_effect}")
    full_b = _check_samples("base", base)
    full_c = _check_samples("cand", cand)
    b_med, c_med = float(np.median(full_b)), float(np.median(full_c))
    ratio = c_med / b_med
    b, c = subsample(full_b), subsample(full_c)
    shrunk = b.size < full_b.size or c.size < full_c.size
    ci_low, ci_high = _ratio_interval(b, c, alpha)
    common: dict[str, Any] = {
        "n_base": int(b.size),
        "n_cand": int(c.size),
        "base_median": b_med,
        "cand_median": c_med,
        "ratio": ratio,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "alpha": alpha,
        "min_effect": min_effect,
        "subsampled_from": [int(full_b.size), int(full_c.size)] if shrunk else None,
    }
    one_sided = alternative == "greater"
    if not enough_samples(b.size, c.size, alpha, one_sided=one_sided):
        return SampleComparison(
            **common,
            p_value=None,
            significant=False,
            persistent=False,
            enough_samples=False,
            direction="same",
            min_attainable_p=min_attainable_p(b.size, c.size, one_sided=one_sided),
        )
    p = rank_test_p(b, c, alternative)
    sign = beyond_factor(ratio, min_effect)
    if one_sided and sign < 0:
        sign = 0
    unmoved = no_change_that_counts(common, p=p, alpha=alpha, sign=sign)
    if unmoved is not None:
        return unmoved
    persistent, checks = _persistence(b, c, sign, alpha, min_effect, one_sided)
    direction: Direction = "slower" if sign > 0 else "faster"
    return SampleComparison(
        **common, p_value=p, significant=True, persistent=persistent, enough_samples=True, direction=direction, persistence=checks,
    )
