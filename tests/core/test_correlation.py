"""Spearman's rank correlation in numpy against scipy's ``spearmanr`` (fp64), ties included, and its edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparsedebug.core.correlation import regularized_beta, spearman, student_t_two_sided_p

scipy_stats = pytest.importorskip("scipy.stats")
scipy_special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize("n", [3, 4, 9, 30, 200, 5000])
@pytest.mark.parametrize("ties", [False, True])
def test_matches_scipy_on_latency_like_series(n: int, ties: bool) -> None:
    rng = np.random.default_rng(n + 1000 * ties)
    for trend in (0.0, 0.002, -0.01, 0.2):
        y = 5.0 + trend * np.arange(n) + rng.gamma(2.0, 0.05, n)
        if ties:
            y = np.round(y, 1)  # a timer's resolution: many equal samples
        x = np.arange(n)
        rho, p = spearman(x, y)
        ref = scipy_stats.spearmanr(x, y)
        assert rho == pytest.approx(float(ref.statistic), rel=1e-12, abs=1e-14)
        assert p == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-300)


def test_ties_on_both_sides_and_perfect_orders() -> None:
    x = np.array([1, 1, 2, 2, 3, 3, 4, 5, 5, 5], dtype=np.float64)
    y = np.array([2, 1, 2, 4, 3, 3, 9, 7, 7, 8], dtype=np.float64)
    ref = scipy_stats.spearmanr(x, y)
    assert spearman(x, y) == pytest.approx((float(ref.statistic), float(ref.pvalue)), rel=1e-12)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == (1.0, 0.0)
    rho, p = spearman([1, 2, 3, 4], [4, 3, 2, 1])
    assert (rho, p) == (-1.0, 0.0)
    rho, p = spearman([1, 2, 3, 4], [7, 7, 7, 7])
    assert math.isnan(rho) and math.isnan(p)  # as scipy: a constant sample has no rank order
    with pytest.raises(ValueError, match="same length"):
        spearman([1, 2, 3], [1, 2])


def test_the_incomplete_beta_and_t_tail_against_scipy() -> None:
    for a, b in ((0.5, 0.5), (1.0, 0.5), (14.5, 0.5), (2500.0, 0.5), (3.0, 7.0)):
        for x in (1e-12, 1e-4, 0.1, 0.5, 0.9, 0.999999):
            assert regularized_beta(a, b, x) == pytest.approx(float(scipy_special.betainc(a, b, x)), rel=1e-11, abs=1e-300)
    for df in (1, 2, 7, 28, 4998):
        for t in (0.0, 0.3, 2.0, 8.0, 40.0):
            assert student_t_two_sided_p(t, df) == pytest.approx(float(2 * scipy_stats.t.sf(t, df)), rel=1e-10, abs=1e-300)
    assert student_t_two_sided_p(math.inf, 5) == 0.0
