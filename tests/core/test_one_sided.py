"""One-sided rank tests in the direction of harm (issue 25): exact against enumeration, and what 3 a side can reach."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.ranks import rank_test_p
from sparsedebug.core.stats import compare_samples, enough_samples, fewest_samples, min_attainable_p, separated


def _enumerated(base: list[float], cand: list[float]) -> float:
    pooled = np.array(base + cand, dtype=np.float64)
    order = np.argsort(pooled, kind="stable")
    ranks = np.empty(pooled.size)
    ranks[order] = np.arange(1, pooled.size + 1)
    for value in np.unique(pooled):  # mid-ranks for ties
        ranks[pooled == value] = ranks[pooled == value].mean()
    observed = ranks[len(base):].sum()
    count = sum(1 for s in itertools.combinations(range(pooled.size), len(cand)) if ranks[list(s)].sum() >= observed - 1e-9)
    return count / math.comb(pooled.size, len(cand))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=6),
    st.lists(st.integers(1, 6), min_size=1, max_size=6),
)
def test_one_sided_p_is_the_exact_permutation_tail(base: list[int], cand: list[int]) -> None:
    b, c = [float(x) for x in base], [float(x) for x in cand]
    if len(set(b + c)) == 1:
        assert rank_test_p(b, c, "greater") == 1.0
        return
    assert rank_test_p(b, c, "greater") == pytest.approx(_enumerated(b, c), abs=1e-9)


def test_three_a_side_reach_alpha_one_sided_only() -> None:
    assert not enough_samples(3, 3, 0.05) and enough_samples(3, 3, 0.05, one_sided=True)
    assert min_attainable_p(3, 3, one_sided=True) == pytest.approx(0.05)
    assert fewest_samples(0.05, one_sided=True) == 3 and fewest_samples(0.05) == 4
    slower = compare_samples([1.0, 1.1, 1.2], [15.0, 15.5, 16.0], alternative="greater")
    assert slower.direction == "slower" and slower.p_value == pytest.approx(0.05)
    faster = compare_samples([15.0, 15.5, 16.0], [1.0, 1.1, 1.2], alternative="greater")
    assert faster.direction == "same" and faster.p_value == 1.0


def test_separation() -> None:
    assert separated([1.0, 1.2], [1.3, 1.4], 1.05) and not separated([1.0, 1.3], [1.3, 1.4], 1.05)


def test_asymptotic_one_sided_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    base, cand = rng.normal(10, 1, 300), rng.normal(10.2, 1, 400)
    expected = scipy_stats.mannwhitneyu(cand, base, alternative="greater", method="asymptotic").pvalue
    assert rank_test_p(base, cand, "greater") == pytest.approx(expected, rel=1e-9)
