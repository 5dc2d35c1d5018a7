"""Hypothesis properties of the rank statistics over sample counts from 2 to 10^5.

Samples are drawn with numpy from a hypothesis-chosen seed and size (hypothesis
lists of 10^5 floats would be slow to generate); above ``MAX_TEST_SAMPLES`` per
side the comparison runs on its deterministic subsample, so one example costs
tens of milliseconds at most and the file runs in a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.stats import (
    MAX_TEST_SAMPLES,
    compare_samples,
    hodges_lehmann_ratio,
    min_attainable_p,
    rank_test_p,
)

sizes = st.integers(min_value=2, max_value=100_000)
large = st.integers(min_value=200, max_value=100_000)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
budget = settings(max_examples=25, deadline=None)


def _draw(seed: int, n: int, shift: float = 1.0, sigma: float = 0.1) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(shift), sigma, n)


@budget
@given(sizes, sizes, seeds, st.floats(0.5, 2.0), st.booleans())
def test_outputs_are_finite_and_in_range(m: int, n: int, seed: int, shift: float, quantised: bool) -> None:
    base, cand = _draw(seed, m), _draw(seed + 1, n, shift)
    if quantised:  # timer resolution: many ties
        base, cand = np.round(base, 1) + 0.1, np.round(cand, 1) + 0.1
    r = compare_samples(base, cand)
    assert math.isfinite(r.ratio) and r.ratio > 0
    assert (r.n_base, r.n_cand) == (min(m, MAX_TEST_SAMPLES), min(n, MAX_TEST_SAMPLES))
    assert (r.subsampled_from is not None) == (max(m, n) > MAX_TEST_SAMPLES)
    if r.p_value is not None:
        assert math.isfinite(r.p_value) and 0.0 <= r.p_value <= 1.0
    assert 0.0 <= min_attainable_p(m, n) <= 1.0
    if r.ci_low is not None and r.ci_high is not None:
        assert 0 < r.ci_low <= r.ci_high and math.isfinite(r.ci_high)
        hl = hodges_lehmann_ratio(base, cand)
        assert r.ci_low * (1 - 1e-9) <= hl <= r.ci_high * (1 + 1e-9)


@budget
@given(sizes, sizes, seeds, st.floats(0.5, 2.0))
def test_swapping_the_sides_mirrors_the_result(m: int, n: int, seed: int, shift: float) -> None:
    base, cand = _draw(seed, m), _draw(seed + 1, n, shift)
    a, b = compare_samples(base, cand), compare_samples(cand, base)
    assert b.ratio * a.ratio == np.float64(1.0) or abs(b.ratio * a.ratio - 1.0) < 1e-12
    assert {a.direction, b.direction} in ({"same"}, {"slower", "faster"})
    if a.p_value is not None and b.p_value is not None:
        assert abs(a.p_value - b.p_value) <= 1e-9 * max(a.p_value, 1e-300) + 1e-15
    if a.ci_low is not None and b.ci_high is not None and a.ci_high is not None and b.ci_low is not None:
        assert abs(a.ci_low * b.ci_high - 1.0) < 1e-9 and abs(a.ci_high * b.ci_low - 1.0) < 1e-9


@budget
@given(large, large, seeds, st.floats(1.3, 3.0))
def test_a_real_shift_is_detected_at_large_n(m: int, n: int, seed: int, shift: float) -> None:
    r = compare_samples(_draw(seed, m), _draw(seed + 1, n, shift))
    assert r.significant and r.direction == "slower" and r.persistent
    assert r.ci_low is not None and r.ci_high is not None and r.ci_low <= shift * 1.1 and r.ci_high >= shift / 1.1
    faster = compare_samples(_draw(seed, m), _draw(seed + 1, n, 1.0 / shift))
    assert faster.direction == "faster"


@budget
@given(sizes, seeds)
def test_identical_distributions_are_never_significant(n: int, seed: int) -> None:
    base = _draw(seed, n)
    shuffled = np.random.default_rng(seed + 7).permutation(base)
    same = compare_samples(base, shuffled)
    assert not same.significant and same.direction == "same" and same.ratio == 1.0
    if same.p_value is not None and same.subsampled_from is None:
        assert same.p_value == 1.0  # the same multiset: U sits exactly at its mean
    if n >= 200:  # a fresh draw of the same distribution: the medians agree far inside the 1.10 factor
        fresh = compare_samples(base, _draw(seed + 1, n))
        assert not fresh.significant and fresh.direction == "same"


@budget
@given(st.integers(2, 20_000), st.integers(2, 20_000), seeds, st.floats(1.0001, 2.0), st.floats(1.0001, 2.0))
def test_monotone_in_the_effect(m: int, n: int, seed: int, f1: float, f2: float) -> None:
    f1, f2 = min(f1, f2), max(f1, f2)
    base, other = _draw(seed, m), _draw(seed + 1, n)
    small, big = compare_samples(base, other * f1), compare_samples(base, other * f2)
    assert big.ratio >= small.ratio * (1 - 1e-12)
    if small.ci_low is not None and big.ci_low is not None and small.ci_high is not None and big.ci_high is not None:
        # the interval of a log-shift moves with the shift: scaled by f2 / f1
        assert big.ci_low / small.ci_low == np.float64(f2 / f1) or abs(big.ci_low / small.ci_low * f1 / f2 - 1) < 1e-9
        assert abs(big.ci_high / small.ci_high * f1 / f2 - 1) < 1e-9
    # the same sample scaled up: every extra factor can only raise U above m*n/2, so p cannot rise
    p1, p2 = rank_test_p(base, base * f1), rank_test_p(base, base * f2)
    assert p2 <= p1 * (1 + 1e-9) + 1e-15


@budget
@given(st.integers(2, 100), st.integers(2, 100), seeds, st.floats(0.3, 3.0))
def test_exact_small_sample_p_never_beats_the_attainable_bound(m: int, n: int, seed: int, shift: float) -> None:
    base, cand = _draw(seed, m), _draw(seed + 1, n, shift)
    p = rank_test_p(base, cand)
    assert min_attainable_p(m, n) * (1 - 1e-9) <= p <= 1.0
    extreme = rank_test_p(base, base.max() * 2 + _draw(seed + 2, n))  # every candidate above every baseline
    if m * n <= 10_000:  # the exact region reaches the bound exactly
        assert extreme == pytest.approx(min_attainable_p(m, n), rel=1e-9)
