"""Paired statistics (core.paired): the signed-rank test against scipy, the interval, and drift that cancels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from sparsedebug.core.paired import (
    MAX_PAIRED,
    block_log_ratios,
    compare_paired,
    compare_timings,
    enough_pairs,
    fewest_pairs,
    paired_ratio,
    per_round_separated,
    signed_rank_p,
)
from sparsedebug.core.stats import compare_samples
from sparsedebug.render.words.core import comparison_words

seeds = st.integers(min_value=0, max_value=2**32 - 1)
budget = settings(max_examples=30, deadline=None)


@pytest.mark.parametrize("n", [5, 9, 20, 60, 401, 900])
@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_signed_rank_p_matches_scipy(n: int, alternative: str) -> None:
    d = np.random.default_rng(n).normal(0.05, 0.2, n)
    method = "exact" if n <= 400 else "approx"
    ref = scipy_stats.wilcoxon(d, alternative=alternative, method=method, correction=True).pvalue
    assert signed_rank_p(d, alternative) == pytest.approx(ref, rel=1e-9, abs=1e-15)  # type: ignore[arg-type]


def test_signed_rank_p_with_ties_and_zeros_matches_scipy() -> None:
    d = np.round(np.random.default_rng(3).normal(0.1, 0.3, 50), 1)
    ref = scipy_stats.wilcoxon(d, method="approx", correction=True, zero_method="wilcox").pvalue
    assert signed_rank_p(d) == pytest.approx(ref, rel=1e-9)
    assert signed_rank_p([0.0, 0.0]) == 1.0


def test_fewest_pairs() -> None:
    assert fewest_pairs(0.05, one_sided=True) == 5  # 1/32 <= 0.05 < 1/16
    assert fewest_pairs(0.05) == 6  # 2/64
    assert enough_pairs(5, 0.05, one_sided=True) and not enough_pairs(5, 0.05)


@budget
@given(seeds, st.integers(min_value=6, max_value=400), st.floats(0.5, 2.0))
def test_drift_common_to_both_sides_cancels(seed: int, n: int, shift: float) -> None:
    """A slowdown of the machine that multiplies both sides of each round leaves the paired result unchanged."""
    rng = np.random.default_rng(seed)
    base = rng.lognormal(0.0, 0.05, n)
    cand = base * shift * rng.lognormal(0.0, 0.01, n)
    drift = np.exp(np.cumsum(rng.normal(0.0, 0.3, n)))  # wild, trending machine speed
    calm, drifted = compare_paired(base, cand), compare_paired(base * drift, cand * drift)
    assert drifted.ratio == pytest.approx(calm.ratio, rel=1e-9)
    assert drifted.p_value == pytest.approx(calm.p_value, rel=1e-9)
    assert (drifted.direction, drifted.significant) == (calm.direction, calm.significant)


def test_common_drift_is_no_finding_where_two_samples_see_one() -> None:
    """The same A/A pair: round by round no change; as two samples the drift between halves is a "change"."""
    rng = np.random.default_rng(7)
    work = rng.lognormal(0.0, 0.02, 30)
    drift = np.where(np.arange(30) < 15, 1.0, 1.6)  # the machine slowed down half way
    base = work * drift * rng.lognormal(0.0, 0.02, 30)
    cand = work * drift * rng.lognormal(0.0, 0.02, 30)
    paired = compare_paired(base, cand)
    assert paired.direction == "same" and paired.paired
    # the same values, unpaired but in a skewed time order: candidate rounds all from the slow half
    skewed = compare_samples(np.sort(base)[:15], np.sort(cand)[15:])
    assert skewed.direction == "slower"


@budget
@given(seeds, st.integers(min_value=6, max_value=300), st.floats(0.7, 1.5))
def test_interval_holds_the_estimate_and_swap_mirrors(seed: int, n: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    base = rng.lognormal(0.0, 0.1, n)
    cand = base * shift * rng.lognormal(0.0, 0.1, n)
    r, back = compare_paired(base, cand), compare_paired(cand, base)
    assert r.ci_low is not None and r.ci_high is not None
    assert r.ci_low <= r.ratio <= r.ci_high
    assert r.ratio * back.ratio == pytest.approx(1.0, rel=1e-9)
    assert r.p_value == pytest.approx(back.p_value, rel=1e-9)
    assert 0.0 <= (r.p_value or 0.0) <= 1.0


def test_clear_slowdown_is_found_and_one_sided_ignores_a_speedup() -> None:
    rng = np.random.default_rng(1)
    base = rng.lognormal(0.0, 0.3, 15)
    cand = base * 1.2 * rng.lognormal(0.0, 0.02, 15)
    r = compare_paired(base, cand, alternative="greater")
    assert r.direction == "slower" and r.persistent and r.ratio == pytest.approx(1.2, rel=0.03)
    faster = compare_paired(cand, base, alternative="greater")
    assert faster.direction == "same"
    assert compare_paired(cand, base).direction == "faster"


def test_too_few_pairs_are_said() -> None:
    r = compare_paired([1.0, 1.1, 1.0, 1.2], [2.0, 2.2, 2.0, 2.4], alternative="greater")
    assert not r.enough_samples and r.direction == "same" and r.nonzero is not None and r.min_attainable_p is not None
    assert "paired blocks with a difference" in comparison_words(r)
    assert per_round_separated([1.0, 1.1, 1.0, 1.2], [2.0, 2.2, 2.0, 2.4], 1.05)
    assert not per_round_separated([1.0, 1.1], [2.0, 1.0], 1.05)


def test_blocks_do_not_straddle_segments() -> None:
    base = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
    cand = np.array([2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    ratios = block_log_ratios(base, cand, 2, segments=[3, 3])
    assert np.allclose(ratios, [math.log(2.0), 0.0])  # the trailing single round of each segment is left out
    with pytest.raises(ValueError):
        block_log_ratios(base, cand, 2, segments=[2, 2])
    assert paired_ratio([1.0, 2.0, 4.0], [2.0, 4.0, 8.0]) == pytest.approx(2.0)


def test_large_series_use_a_deterministic_subsample() -> None:
    rng = np.random.default_rng(5)
    base = rng.lognormal(0.0, 0.1, MAX_PAIRED + 500)
    cand = base * 1.01
    a, b = compare_paired(base, cand), compare_paired(base, cand)
    assert a.subsampled_from == [MAX_PAIRED + 500, MAX_PAIRED + 500] and a.n_base == MAX_PAIRED
    assert a == b


def test_compare_timings_pairs_only_equal_lengths() -> None:
    base, cand = [1.0, 1.1, 1.2, 1.0, 1.1, 1.3], [1.1, 1.2, 1.3, 1.1, 1.2, 1.4]
    assert compare_timings(base, cand, block=1).paired
    assert not compare_timings(base, cand[:-1], block=1).paired
    assert not compare_timings(base, cand, block=None).paired


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="one of each per round"):
        compare_paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        compare_paired([1.0, -2.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        compare_paired([1.0], [1.0], alpha=1.5)
