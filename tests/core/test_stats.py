"""Significance tests on raw samples: exact rank distribution, CI coverage, effect factor, persistence."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from sparsedebug.core.ranks import kth_pairwise_difference, moses_k, u_cdf_exact
from sparsedebug.core.stats import (
    MAX_TEST_SAMPLES,
    compare_samples,
    enough_samples,
    hodges_lehmann_ratio,
    log_min_attainable_p,
    median,
    min_attainable_p,
    percentiles,
    rank_test_p,
    subsample,
)
from sparsedebug.render.words.core import comparison_words


def test_percentiles_and_median_unchanged() -> None:
    p = percentiles([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (p.n, p.p50) == (5, 3.0)
    assert p.p99 == pytest.approx(96.16)
    assert median([3.0, 1.0, 2.0]) == 2.0
    with pytest.raises(ValueError):
        percentiles([])
    with pytest.raises(ValueError):
        median([])


def _exact_u_cdf_with_python_ints(m: int, n: int) -> list[float]:
    """The whole U distribution from the Gaussian binomial coefficient, in exact Python integers."""
    size = m * n + 1
    coeffs = [0] * size
    coeffs[0] = 1
    for i in range(1, m + 1):
        shift = n + i
        for u in range(size - 1, shift - 1, -1):
            coeffs[u] -= coeffs[u - shift]
    for i in range(1, m + 1):
        for u in range(i, size):
            coeffs[u] += coeffs[u - i]
    total = math.comb(m + n, m)
    running, cdf = 0, []
    for count in coeffs:
        running += count
        cdf.append(running / total)
    return cdf


@pytest.mark.parametrize(("m", "n"), [(1, 1), (2, 3), (3, 3), (3, 5), (4, 4)])
def test_exact_u_distribution_matches_brute_force(m: int, n: int) -> None:
    counts = [0] * (m * n + 1)
    for positions in itertools.combinations(range(m + n), m):
        # U = number of (x, y) pairs with x < y where the m "x" items sit at ``positions``.
        u = sum(sum(1 for y in range(m + n) if y not in positions and y > p) for p in positions)
        counts[u] += 1
    total = math.comb(m + n, m)
    expected = np.cumsum(counts) / total
    lower = u_cdf_exact(m, n)
    assert len(lower) == m * n // 2 + 1  # the lower half: all a two-sided test needs
    assert np.allclose(lower, expected[: len(lower)], rtol=1e-12, atol=0)


@pytest.mark.parametrize(("m", "n"), [(10, 30), (50, 50), (100, 100), (8, 1250), (2, 5000), (60, 150)])
def test_float_u_distribution_keeps_relative_accuracy_deep_in_the_tail(m: int, n: int) -> None:
    # The float64 recurrence against exact integers, relative error at every u (down to ~1e-59).
    exact = np.array(_exact_u_cdf_with_python_ints(m, n))
    got = np.array(u_cdf_exact(m, n))
    ref = exact[: got.size]
    assert np.all(np.abs(got - ref) <= 1e-10 * ref)


def test_too_few_samples_is_said_not_guessed() -> None:
    assert min_attainable_p(3, 3) == pytest.approx(0.1)
    assert not enough_samples(3, 3)
    assert enough_samples(4, 4)
    result = compare_samples([1.0, 1.01, 0.99], [2.0, 2.02, 1.98])
    assert not result.enough_samples and not result.significant and result.direction == "same"
    assert result.ratio == pytest.approx(2.0)
    assert result.p_value is None and result.ci_low is None
    assert not result.enough_samples and result.min_attainable_p is not None
    assert "too few samples" in comparison_words(result)


def test_clear_slowdown_is_significant_and_persistent_with_ci() -> None:
    rng = np.random.default_rng(1)
    base = rng.lognormal(0.0, 0.03, 30)
    cand = rng.lognormal(math.log(1.4), 0.03, 30)
    result = compare_samples(base, cand)
    assert result.significant and result.persistent and result.direction == "slower"
    assert result.ci_low is not None and result.ci_high is not None
    assert result.ci_low <= 1.4 <= result.ci_high
    assert result.ci_low > 1.3 and result.ci_high < 1.5
    faster = compare_samples(cand, base)
    assert faster.direction == "faster" and faster.ratio == pytest.approx(1 / result.ratio)


def test_small_shift_is_below_minimum_effect_even_when_the_test_rejects() -> None:
    rng = np.random.default_rng(2)
    base = rng.lognormal(0.0, 0.005, 400)
    cand = rng.lognormal(math.log(1.01), 0.005, 400)
    result = compare_samples(base, cand)
    assert result.p_value is not None and result.p_value < 1e-6
    assert not result.significant and result.direction == "same"
    assert result.p_value is not None and result.p_value <= result.alpha and not result.significant
    assert "minimum effect" in comparison_words(result)
    assert compare_samples(base, cand, min_effect=1.005).significant


def test_noise_alone_is_not_a_finding() -> None:
    rng = np.random.default_rng(3)
    noisy = sum(compare_samples(rng.lognormal(0, 0.2, 20), rng.lognormal(0, 0.2, 20)).significant for _ in range(200))
    assert noisy <= 16  # at most the alpha rate (10 expected) plus binomial slack
    # With 3% noise the rank test still rejects about 5% of the time, but the 1.10 factor never passes.
    mild = [compare_samples(rng.lognormal(0, 0.03, 20), rng.lognormal(0, 0.03, 20)) for _ in range(200)]
    assert sum(r.p_value is not None and r.p_value < 0.05 for r in mild) >= 1
    assert not any(r.significant for r in mild)


def test_shift_in_only_one_half_is_not_persistent() -> None:
    base = [1.0 + 0.01 * i for i in range(16)]
    cand = [1.0 + 0.01 * i for i in range(8)] + [2.0 + 0.01 * i for i in range(8)] + [2.1] * 4
    result = compare_samples(base, cand)
    assert result.significant and result.direction == "slower"
    assert not result.persistent
    assert [n.code for n in result.persistence][-1] == "core.half_differs"
    assert "first half" in comparison_words(result)


def test_outliers_are_dropped_before_confirming() -> None:
    base = [1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09]
    cand = [1.50, 1.51, 1.52, 1.53, 1.54, 1.55, 1.56, 1.57, 9.0, 1.58]
    result = compare_samples(base, cand)
    assert result.persistent
    assert result.persistence[-1].code == "core.outliers_dropped" and result.persistence[-1].values["dropped"] == 1
    assert "outlier" in comparison_words(result)


def test_moses_interval_covers_the_true_ratio_about_95_percent() -> None:
    rng = np.random.default_rng(4)
    covered = 0
    trials = 300
    for _ in range(trials):
        r = compare_samples(rng.lognormal(0, 0.1, 12), rng.lognormal(math.log(1.2), 0.1, 12))
        assert r.ci_low is not None and r.ci_high is not None
        covered += r.ci_low <= 1.2 <= r.ci_high
    assert 0.90 <= covered / trials <= 0.99


def test_normal_approximation_for_large_samples_is_close_to_exact() -> None:
    assert abs(moses_k(100, 101, 0.05) - moses_k(99, 101, 0.05)) < 60
    assert moses_k(3, 3, 0.05) == 0
    assert moses_k(4, 4, 0.05) == 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        compare_samples([1.0, 0.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        compare_samples([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-empty"):
        compare_samples([], [1.0])
    with pytest.raises(ValueError, match="alpha"):
        compare_samples([1.0], [1.0], alpha=0.0)
    with pytest.raises(ValueError, match="min_effect"):
        compare_samples([1.0], [1.0], min_effect=0.9)


positive = st.floats(min_value=0.01, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(positive, min_size=1, max_size=15), st.lists(positive, min_size=1, max_size=15), st.floats(0.1, 10.0))
def test_properties_scale_free_and_symmetric(base: list[float], cand: list[float], scale: float) -> None:
    a = compare_samples(base, cand)
    b = compare_samples([x * scale for x in base], [x * scale for x in cand])
    assert a.ratio == pytest.approx(b.ratio, rel=1e-9)
    assert a.significant == b.significant
    swapped = compare_samples(cand, base)
    assert swapped.ratio == pytest.approx(1 / a.ratio, rel=1e-9)
    assert {a.direction, swapped.direction} in ({"same"}, {"slower", "faster"})
    if a.ci_low is not None and a.ci_high is not None:
        assert a.ci_low <= hodges_lehmann_ratio(base, cand) * (1 + 1e-9)
        assert hodges_lehmann_ratio(base, cand) <= a.ci_high * (1 + 1e-9)
        assert swapped.ci_low == pytest.approx(1 / a.ci_high, rel=1e-9)


# --------------------------------------------------------------------------- large and tied samples


def test_min_attainable_p_is_finite_for_any_size() -> None:
    # 624 calls per side made 2 / C(1248, 624) overflow a float (issue 14).
    for m, n in [(1, 1), (3, 3), (8, 9), (40, 41)]:
        assert min_attainable_p(m, n) == pytest.approx(2 / math.comb(m + n, m), rel=1e-12) or math.comb(m + n, m) == 1
    for m, n in [(624, 624), (10**6, 10**6), (1, 10**7)]:
        p = min_attainable_p(m, n)
        assert math.isfinite(p) and 0.0 <= p <= 1.0
        assert math.isfinite(log_min_attainable_p(m, n))
    assert log_min_attainable_p(624, 624) == pytest.approx(math.log(2) - math.log(math.comb(1248, 624)), rel=1e-12)
    assert enough_samples(624, 624, alpha=1e-300)
    assert not enough_samples(2, 2, alpha=0.05) and not enough_samples(0, 10)


def test_624_calls_per_side_compare_without_error() -> None:
    rng = np.random.default_rng(5)
    result = compare_samples(rng.lognormal(0, 0.05, 624), rng.lognormal(math.log(1.25), 0.05, 624), alpha=0.05 / 200)
    assert result.direction == "slower" and result.persistent
    assert result.subsampled_from is None and result.n_base == 624


def _permutation_p(base: np.ndarray, cand: np.ndarray) -> float:
    """Two-sided permutation p of the mid-rank sum, by enumerating every split."""
    pooled = np.concatenate([base, cand])
    ranks = sps.rankdata(pooled)
    m, total = base.size, pooled.size
    mean = m * (total + 1) / 2
    observed = abs(ranks[:m].sum() - mean)
    hits = splits = 0
    for chosen in itertools.combinations(range(total), m):
        splits += 1
        hits += abs(ranks[list(chosen)].sum() - mean) >= observed - 1e-9
    return hits / splits


def test_rank_p_with_ties_is_the_exact_permutation_p() -> None:
    rng = np.random.default_rng(6)
    for _ in range(120):
        base = rng.integers(1, 5, int(rng.integers(1, 7))).astype(float)
        cand = rng.integers(1, 6, int(rng.integers(1, 8))).astype(float)
        assert rank_test_p(base, cand) == pytest.approx(_permutation_p(base, cand), abs=1e-12)
    assert rank_test_p([2.0, 2.0, 2.0], [2.0, 2.0]) == 1.0


def test_rank_p_matches_scipy_exact_and_asymptotic() -> None:
    rng = np.random.default_rng(7)
    for _ in range(100):
        base, cand = rng.random(int(rng.integers(1, 12))), rng.random(int(rng.integers(1, 12))) + 0.2
        assert rank_test_p(base, cand) == pytest.approx(sps.mannwhitneyu(cand, base, method="exact").pvalue, abs=1e-12)
    for base, cand in [(rng.random(300), rng.random(400) + 0.05), (np.round(rng.random(300), 2), np.round(rng.random(400) + 0.05, 2))]:
        expected = sps.mannwhitneyu(cand, base, method="asymptotic").pvalue  # with ties: tie-corrected variance
        assert rank_test_p(base, cand) == pytest.approx(expected, rel=1e-9)
        assert rank_test_p(cand, base) == pytest.approx(expected, rel=1e-9)


def test_kth_pairwise_by_bisection_equals_the_full_sort() -> None:
    rng = np.random.default_rng(8)
    for m, n in [(1, 1), (7, 13), (40, 25), (200, 150)]:
        lb, lc = np.sort(rng.normal(size=m)), np.sort(rng.normal(size=n))
        lb[: m // 3] = lb[0]  # ties inside one sample
        full = np.sort((lc[None, :] - lb[:, None]).ravel())
        ks = [1, max(1, full.size // 3), full.size // 2 + 1, full.size]
        assert kth_pairwise_difference(lb, lc, ks, max_pairs=0) == pytest.approx([float(full[k - 1]) for k in ks], rel=0, abs=1e-12)
        assert kth_pairwise_difference(lb, lc, ks) == [float(full[k - 1]) for k in ks]


def test_subsample_is_deterministic_ordered_and_capped() -> None:
    values = np.arange(1.0, 30_001.0)
    a, b = subsample(values), subsample(values.copy())
    assert a.size == MAX_TEST_SAMPLES and np.array_equal(a, b)
    assert np.all(np.diff(a) > 0)  # time order kept
    assert np.array_equal(subsample(values[:500]), values[:500])
    # both halves of the time series are represented
    assert 0.4 < np.mean(a <= 15_000) < 0.6


def test_large_comparisons_are_subsampled_and_say_so() -> None:
    rng = np.random.default_rng(9)
    base = rng.lognormal(0, 0.1, 60_000)
    cand = rng.lognormal(math.log(1.3), 0.1, 45_000)
    result = compare_samples(base, cand)
    assert result.subsampled_from == [60_000, 45_000]
    assert (result.n_base, result.n_cand) == (MAX_TEST_SAMPLES, MAX_TEST_SAMPLES)
    assert "subsample of 10000 of 60000" in comparison_words(result)
    assert result.base_median == pytest.approx(float(np.median(base)))  # medians from every sample
    assert result.direction == "slower" and result.ci_low is not None and result.ci_high is not None
    assert result.ci_low < 1.3 < result.ci_high
    assert compare_samples(base, cand) == result
    small = compare_samples(base[:100], cand[:100])
    assert small.subsampled_from is None and "subsample" not in comparison_words(small)
