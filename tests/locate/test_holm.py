"""Holm's step-down over the per-layer tests (locate.common.holm_levels, compare_layers)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.locate.common import holm_levels


def test_holm_steps_down_until_the_first_miss() -> None:
    levels = holm_levels([0.001, 0.04, 0.012, None], 0.05)
    # sorted: 0.001 (0.05/4 = 0.0125, rejected), 0.012 (0.05/3, rejected), 0.04 (0.05/2 = 0.025, stops), None
    assert levels == pytest.approx([0.0125, 0.025, 0.05 / 3, 0.025])


def test_holm_is_bonferroni_when_nothing_is_rejected() -> None:
    assert holm_levels([0.5, 0.9, None], 0.05) == pytest.approx([0.05 / 3] * 3)
    assert holm_levels([], 0.05) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), min_size=1, max_size=60), st.floats(0.001, 0.2))
def test_holm_rejects_a_superset_of_bonferroni_and_keeps_the_family(p_values: list[float | None], alpha: float) -> None:
    levels = holm_levels(p_values, alpha)
    m = len(p_values)
    rejected = {i for i, p in enumerate(p_values) if p is not None and p <= levels[i]}
    bonferroni = {i for i, p in enumerate(p_values) if p is not None and p <= alpha / m}
    assert bonferroni <= rejected
    assert all(alpha / m - 1e-15 <= level <= alpha for level in levels)
    # step-down: whatever is rejected has a smaller p than whatever is not
    if rejected and len(rejected) < m:
        worst_rejected = max(p_values[i] or 0.0 for i in rejected)
        kept = [1.0 if p_values[i] is None else p_values[i] for i in range(m) if i not in rejected]
        assert worst_rejected <= min(v for v in kept if v is not None)


def test_holm_controls_false_alarms_over_many_null_layers() -> None:
    rng = np.random.default_rng(0)
    alarms = sum(
        any(p <= level for p, level in zip(ps, holm_levels(list(ps), 0.05), strict=True))
        for ps in rng.uniform(0.0, 1.0, (2000, 50))
    )
    assert alarms / 2000 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 2000)
