"""Significance tests on raw samples: exact rank distribution, CI coverage, effect factor, persistence."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from sparsedebug.core.stats import (
    _moses_k,
    _u_cdf_exact,
    compare_samples,
    enough_samples,
    hodges_lehmann_ratio,
    median,
    min_attainable_p,
    percentiles,
)


def test_percentiles_and_median_unchanged() -> None:
    p = percentiles([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (p.n, p.p50) == (5, 3.0)
    assert p.p99 == pytest.approx(96.16)
    assert median([3.0, 1.0, 2.0]) == 2.0
    with pytest.raises(ValueError):
        percentiles([])
    with pytest.raises(ValueError):
        median([])


@pytest.mark.parametrize(("m", "n"), [(1, 1), (2, 3), (3, 3), (3, 5), (4, 4)])
def test_exact_u_distribution_matches_brute_force(m: int, n: int) -> None:
    counts = [0] * (m * n + 1)
    for positions in itertools.combinations(range(m + n), m):
        # U = number of (x, y) pairs with x < y where the m "x" items sit at ``positions``.
        u = sum(sum(1 for y in range(m + n) if y not in positions and y > p) for p in positions)
        counts[u] += 1
    total = math.comb(m + n, m)
    expected = np.cumsum(counts) / total
    assert np.allclose(_u_cdf_exact(m, n), expected)


def test_exact_cdf_agrees_with_scipy_exact_test() -> None:
    base = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    cand = np.array([3.5, 5.5, 7.0, 8.0, 9.0])
    u = sps.mannwhitneyu(cand, base, method="exact").statistic
    lower = min(u, base.size * cand.size - u)
    p_exact = sps.mannwhitneyu(cand, base, method="exact", alternative="two-sided").pvalue
    assert 2 * _u_cdf_exact(5, 6)[int(lower)] == pytest.approx(p_exact)


def test_too_few_samples_is_said_not_guessed() -> None:
    assert min_attainable_p(3, 3) == pytest.approx(0.1)
    assert not enough_samples(3, 3)
    assert enough_samples(4, 4)
    result = compare_samples([1.0, 1.01, 0.99], [2.0, 2.02, 1.98])
    assert not result.enough_samples and not result.significant and result.direction == "same"
    assert result.ratio == pytest.approx(2.0)
    assert result.p_value is None and result.ci_low is None
    assert "too few samples" in result.reason


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
    assert "minimum effect" in result.reason
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
    assert "first half" in result.reason


def test_outliers_are_dropped_before_confirming() -> None:
    base = [1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09]
    cand = [1.50, 1.51, 1.52, 1.53, 1.54, 1.55, 1.56, 1.57, 9.0, 1.58]
    result = compare_samples(base, cand)
    assert result.persistent
    assert "outlier" in result.reason


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
    assert abs(_moses_k(100, 101, 0.05) - _moses_k(99, 101, 0.05)) < 60
    assert _moses_k(3, 3, 0.05) == 0
    assert _moses_k(4, 4, 0.05) == 1


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
