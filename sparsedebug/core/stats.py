"""Statistics over raw timing samples: percentiles, and the significance test bisect and gate use.

Latencies are always quoted as p50/p95/p99 (never a bare mean): tails are where
sparse deployments hide their per-call overheads.

``compare_samples`` decides whether a candidate's samples differ from a
baseline's *for real*, the way asv does it, plus a persistence check:

- **significant**: a two-sided Mann-Whitney U rank test rejects "same
  distribution" at ``alpha`` AND the ratio of medians passes a minimum effect
  factor (default 1.10: a 1% shift on a noisy machine is not a finding);
- **effect size**: the candidate/baseline median ratio, with a distribution-free
  confidence interval for the ratio: the Hodges-Lehmann shift of the log samples
  and its Moses (rank-based) interval, exact for small samples;
- **persistent**: the shift also holds in each time-ordered half of the samples
  and survives dropping outliers (Tukey fences), so one burst of noise cannot
  make a finding;
- **too few samples**: with ``m`` and ``n`` samples the smallest two-sided p a
  rank test can reach is ``2 / C(m+n, m)`` (0.10 for 3 versus 3). When that is
  above ``alpha`` the comparison says so (``enough_samples=False``) instead of
  guessing; the ratio is still reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

DEFAULT_ALPHA = 0.05
"""Significance level of the rank test (two-sided)."""

DEFAULT_MIN_EFFECT = 1.10
"""Minimum ratio of medians (either way) that counts as a change, as asv's ``factor``."""

_EXACT_LIMIT = 10_000
"""Largest m*n for which the U distribution is computed exactly; the normal approximation above."""

_MAX_PAIRS = 4_000_000
"""Above this many pairwise differences the Hodges-Lehmann interval uses a deterministic thinning."""


class Percentiles(BaseModel):
    """p50/p95/p99 of a sample, with its size."""

    n: int
    p50: float
    p95: float
    p99: float


def percentiles(samples: Sequence[float]) -> Percentiles:
    """p50/p95/p99 (linear interpolation) of non-empty ``samples``."""
    if len(samples) == 0:
        raise ValueError("percentiles of an empty sample")
    p50, p95, p99 = np.percentile(np.asarray(samples, dtype=np.float64), [50.0, 95.0, 99.0])
    return Percentiles(n=len(samples), p50=float(p50), p95=float(p95), p99=float(p99))


def median(samples: Sequence[float]) -> float:
    """Median of non-empty ``samples``."""
    if len(samples) == 0:
        raise ValueError("median of an empty sample")
    return float(np.median(np.asarray(samples, dtype=np.float64)))


Direction = Literal["slower", "faster", "same"]

Samples = Sequence[float] | npt.NDArray[np.floating[Any]]
"""Raw samples: a list of floats or a 1-D numpy array."""


class SampleComparison(BaseModel):
    """Candidate samples versus baseline samples: effect size, CI, test, persistence, verdict.

    ``ratio`` is candidate median / baseline median (above 1: the candidate is
    larger, i.e. slower for times). ``ci_low``/``ci_high`` bound that ratio at
    confidence ``1 - alpha``; they are ``None`` when the sample sizes cannot
    support an interval at that level. ``direction`` is ``"same"`` unless the
    change is significant (test AND minimum effect).
    """

    model_config = ConfigDict(extra="forbid")  # persisted inside bisect.json: unknown keys are refused

    n_base: int
    n_cand: int
    base_median: float
    cand_median: float
    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    alpha: float
    min_effect: float
    significant: bool
    persistent: bool
    enough_samples: bool
    direction: Direction
    reason: str


def min_attainable_p(n_base: int, n_cand: int) -> float:
    """Smallest two-sided p-value an exact rank test can give for these sample sizes."""
    if n_base < 1 or n_cand < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_base + n_cand, n_base))


def enough_samples(n_base: int, n_cand: int, alpha: float = DEFAULT_ALPHA) -> bool:
    """Whether a rank test on samples of these sizes can reach significance ``alpha`` at all."""
    return min_attainable_p(n_base, n_cand) <= alpha


@lru_cache(maxsize=256)
def _u_cdf_exact(m: int, n: int) -> tuple[float, ...]:
    """P(U <= u) for u = 0..m*n under H0 (no ties), from the Gaussian binomial coefficient."""
    # Number of arrangements with U = u is the coefficient of q^u in [m+n choose m]_q
    # = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i). Python ints keep it exact.
    size = m * n + 1
    coeffs = [0] * size
    coeffs[0] = 1
    for i in range(1, m + 1):
        shift = n + i
        for u in range(size - 1, shift - 1, -1):  # multiply by (1 - q^(n+i))
            coeffs[u] -= coeffs[u - shift]
    for i in range(1, m + 1):
        for u in range(i, size):  # divide by (1 - q^i): running sum with stride i
            coeffs[u] += coeffs[u - i]
    total = math.comb(m + n, m)
    running = 0
    cdf = []
    for count in coeffs:
        running += count
        cdf.append(running / total)
    return tuple(cdf)


def _moses_k(m: int, n: int, alpha: float) -> int:
    """Number of pairwise differences to cut from each end for a two-sided ``1 - alpha`` interval.

    The largest k with P(U <= k - 1) <= alpha / 2; 0 means no interval exists at this level.
    """
    if m * n <= _EXACT_LIMIT:
        cdf = _u_cdf_exact(min(m, n), max(m, n))
        k = 0
        while k < len(cdf) and cdf[k] <= alpha / 2:
            k += 1
        return k
    from scipy import stats as sps  # imported here: scipy.stats costs ~0.5 s at CLI start

    z = float(sps.norm.ppf(1 - alpha / 2))
    k = math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12.0))
    return max(k, 0)


def _log_differences(base: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Sorted pairwise differences log(cand_j) - log(base_i), and the sample sizes they came from."""
    lb = np.log(base)
    lc = np.log(cand)
    if lb.size * lc.size > _MAX_PAIRS:
        # Deterministic thinning: keep evenly spaced order statistics of each sample.
        keep = int(math.sqrt(_MAX_PAIRS))
        lb = np.sort(lb)[np.linspace(0, lb.size - 1, min(keep, lb.size)).astype(int)]
        lc = np.sort(lc)[np.linspace(0, lc.size - 1, min(keep, lc.size)).astype(int)]
    return np.sort((lc[None, :] - lb[:, None]).ravel()), int(lb.size), int(lc.size)


def _ratio_interval(base: np.ndarray, cand: np.ndarray, alpha: float) -> tuple[float | None, float | None]:
    """Moses confidence interval for the median ratio (a shift on the log scale)."""
    diffs, m, n = _log_differences(base, cand)
    k = _moses_k(m, n, alpha)
    if k < 1:
        return None, None
    return float(np.exp(diffs[k - 1])), float(np.exp(diffs[diffs.size - k]))


def hodges_lehmann_ratio(base: Samples, cand: Samples) -> float:
    """Hodges-Lehmann estimate of the cand/base ratio: exp of the median pairwise log difference."""
    diffs, _, _ = _log_differences(_check_samples("base", base), _check_samples("cand", cand))
    return float(np.exp(np.median(diffs)))


def _rank_p(base: np.ndarray, cand: np.ndarray) -> float:
    if np.all(base == base[0]) and np.array_equal(np.unique(cand), np.unique(base)):
        return 1.0
    from scipy import stats as sps

    result = sps.mannwhitneyu(cand, base, alternative="two-sided", method="auto")
    return float(result.pvalue)


def _beyond(ratio: float, factor: float) -> int:
    """+1 when ratio >= factor, -1 when ratio <= 1/factor, else 0."""
    if ratio >= factor:
        return 1
    if ratio <= 1.0 / factor:
        return -1
    return 0


def _tukey_inliers(values: np.ndarray) -> np.ndarray:
    q1, q3 = np.percentile(values, [25.0, 75.0])
    spread = q3 - q1
    mask = (values >= q1 - 1.5 * spread) & (values <= q3 + 1.5 * spread)
    kept: np.ndarray = values[mask]
    return kept


def _check_samples(name: str, samples: Samples) -> np.ndarray:
    values = np.asarray(samples, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name}: expected a non-empty sequence of numbers")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: samples must be finite")
    if np.any(values <= 0):
        raise ValueError(f"{name}: samples must be positive (times, or a positive metric)")
    return values


def _persistence(base: np.ndarray, cand: np.ndarray, sign: int, alpha: float, min_effect: float) -> tuple[bool, str]:
    """Whether a significant shift holds in each time-ordered half and without outliers."""
    notes: list[str] = []
    half_factor = math.sqrt(min_effect)
    if base.size >= 4 and cand.size >= 4:
        for label, b, c in (
            ("first half", base[: base.size // 2], cand[: cand.size // 2]),
            ("second half", base[base.size // 2 :], cand[cand.size // 2 :]),
        ):
            half_ratio = float(np.median(c) / np.median(b))
            if _beyond(half_ratio, half_factor) != sign:
                return False, f"not persistent: in the {label} the median ratio is {half_ratio:.3f}"
        notes.append("holds in both halves")
    else:
        notes.append("too few samples to split in halves")
    b_in, c_in = _tukey_inliers(base), _tukey_inliers(cand)
    dropped = (base.size - b_in.size) + (cand.size - c_in.size)
    if dropped:
        if not enough_samples(b_in.size, c_in.size, alpha):
            return False, f"not persistent: only {b_in.size} vs {c_in.size} samples remain without outliers"
        p = _rank_p(b_in, c_in)
        ratio = float(np.median(c_in) / np.median(b_in))
        if p > alpha or _beyond(ratio, min_effect) != sign:
            return False, f"outlier-driven: without {dropped} outlier(s) ratio {ratio:.3f}, p={p:.3g}"
        notes.append(f"survives dropping {dropped} outlier(s)")
    else:
        notes.append("no outliers")
    return True, "persistent: " + ", ".join(notes)


def compare_samples(
    base: Samples,
    cand: Samples,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> SampleComparison:
    """Compare candidate samples with baseline samples (positive values such as times).

    Returns the median ratio with its rank-based confidence interval, the
    Mann-Whitney U p-value, and whether the change is significant (p < alpha
    and the ratio beyond ``min_effect`` either way), persistent (also in each
    half and without outliers) and decidable at all with these sample sizes.
    Raises ``ValueError`` on empty, non-finite or non-positive samples, or on
    ``alpha`` outside (0, 1) or ``min_effect`` below 1.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not min_effect >= 1.0:
        raise ValueError(f"min_effect must be >= 1, got {min_effect}")
    b = _check_samples("base", base)
    c = _check_samples("cand", cand)
    b_med, c_med = float(np.median(b)), float(np.median(c))
    ratio = c_med / b_med
    enough = enough_samples(b.size, c.size, alpha)
    ci_low, ci_high = _ratio_interval(b, c, alpha)
    common = dict(
        n_base=int(b.size),
        n_cand=int(c.size),
        base_median=b_med,
        cand_median=c_med,
        ratio=ratio,
        ci_low=ci_low,
        ci_high=ci_high,
        alpha=alpha,
        min_effect=min_effect,
    )
    if not enough:
        return SampleComparison(
            **common,
            p_value=None,
            significant=False,
            persistent=False,
            enough_samples=False,
            direction="same",
            reason=(
                f"too few samples: {b.size} vs {c.size}; the smallest p a rank test can reach is "
                f"{min_attainable_p(b.size, c.size):.3g} > alpha {alpha:g} (ratio {ratio:.3f} not tested)"
            ),
        )
    p = _rank_p(b, c)
    sign = _beyond(ratio, min_effect)
    if p > alpha:
        return SampleComparison(
            **common, p_value=p, significant=False, persistent=False, enough_samples=True, direction="same",
            reason=f"no significant difference: p={p:.3g} > {alpha:g} (ratio {ratio:.3f})",
        )
    if sign == 0:
        return SampleComparison(
            **common, p_value=p, significant=False, persistent=False, enough_samples=True, direction="same",
            reason=f"significant (p={p:.3g}) but below the minimum effect: ratio {ratio:.3f} within x{min_effect:g}",
        )
    persistent, why = _persistence(b, c, sign, alpha, min_effect)
    direction: Direction = "slower" if sign > 0 else "faster"
    return SampleComparison(
        **common, p_value=p, significant=True, persistent=persistent, enough_samples=True, direction=direction,
        reason=f"{direction} x{ratio:.3f} (p={p:.3g}); {why}",
    )
