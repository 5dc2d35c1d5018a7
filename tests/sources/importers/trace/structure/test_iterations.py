"""Iterations from the repeating call sequence: the period, and grouping repeated blocks into forwards by host gaps."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.sources.importers.trace.structure.iterations import group_by_gaps, smallest_period


def test_smallest_period_of_a_repeated_unit() -> None:
    unit = ["to", "pow", "mean", "linear", "linear", "sdpa", "linear", "add"]
    assert smallest_period(unit * 3) == len(unit)
    assert smallest_period(unit) is None
    assert smallest_period(["a"] * 7) == 1
    assert smallest_period([]) is None


def test_a_few_mismatches_are_tolerated_but_not_noise() -> None:
    unit = [f"op{i}" for i in range(40)]
    seq = unit * 4
    seq[45] = "warmup_only"  # one odd op in 160
    assert smallest_period(seq) == 40
    noisy = [f"op{(i * 7919) % 97}" for i in range(160)]
    assert smallest_period(noisy) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=12), st.integers(2, 6))
def test_period_divides_the_unit(unit: list[int], repeats: int) -> None:
    p = smallest_period(unit * repeats)
    assert p is not None and len(unit) % p == 0


def test_gaps_group_blocks_into_forwards() -> None:
    # 12 identical blocks; the Python loop between forwards adds ~20 us after blocks 4 and 8 (H200 dense trace)
    gaps = [21.3, 20.5, 19.9, 45.4, 20.1, 19.8, 19.9, 39.2, 19.1, 18.9, 19.8]
    found = group_by_gaps(gaps)
    assert found is not None and found[0] == 4
    # union bound over the groupings at least as extreme: 4 (1/C(11,2)), 3 (1/C(11,3)), 2 (1/C(11,5))
    assert found[1] == 1 / math.comb(11, 2) + 1 / math.comb(11, 3) + 1 / math.comb(11, 5)


def test_no_grouping_without_separation_or_evidence() -> None:
    assert group_by_gaps([20.0, 22.0, 19.0, 21.0, 20.5, 20.0, 19.5, 20.7, 20.2, 19.9, 21.5]) is None
    # two forwards of four blocks: one boundary among seven gaps is chance 1/7, not evidence
    assert group_by_gaps([20.0, 20.0, 20.0, 45.0, 20.0, 20.0, 20.0]) is None
    assert group_by_gaps([]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=1, max_size=20))
def test_grouping_is_a_divisor_with_strictly_longer_boundary_gaps(gaps: list[float]) -> None:
    found = group_by_gaps(gaps)
    if found is None:
        return
    m, chance = found
    k = len(gaps) + 1
    assert k % m == 0 and 1 < m < k and 1 / math.comb(k - 1, k // m - 1) <= chance <= 0.05
    boundary = [g for j, g in enumerate(gaps, start=1) if j % m == 0]
    inside = [g for j, g in enumerate(gaps, start=1) if j % m]
    assert min(boundary) > max(inside)
