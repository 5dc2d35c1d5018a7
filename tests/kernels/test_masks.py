"""Pattern parsing, mask selection and compliance counting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import (
    FEW_GROUPS,
    SMALL_GROUP,
    Pattern,
    _keep_by_broadcast,
    _keep_by_pairs,
    check_compliance,
    choice_to_mask,
    group_choice,
    group_keep,
    nm_mask,
    parse_pattern,
    vnm_choice,
    vnm_mask,
)
from tests.kernels.strategies import Case, cases
from tests.support.reference_kernels import argsort_group_choice, argsort_group_keep


@pytest.mark.parametrize(
    ("text", "expected", "shown"),
    [
        ("2:4", Pattern(n=2, m=4), "2:4"),
        (" 1:2 ", Pattern(n=1, m=2), "1:2"),
        ("64:2:4", Pattern(n=2, m=4, block=64), "64:2:4"),
        ("4:8", Pattern(n=4, m=8), "4:8"),
        ("15:16", Pattern(n=15, m=16), "15:16"),
    ],
)
def test_parse_pattern(text: str, expected: Pattern, shown: str) -> None:
    parsed = parse_pattern(text)
    assert parsed == expected
    assert str(parsed) == shown


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("4:4", "N=4"),
        ("5:4", "N=5"),
        ("0:4", "N=0"),
        ("1:17", "M=17"),
        ("0:2:4", "V=0"),
        ("2-4", "expected 'N:M'"),
        ("a:b", "expected 'N:M'"),
        ("1:2:3:4", "expected 'N:M'"),
    ],
)
def test_parse_pattern_rejects(text: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_pattern(text)


def _groups(mask: np.ndarray, m: int) -> np.ndarray:
    return mask.reshape(mask.shape[0], -1, m)


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_nm_mask_keeps_exactly_n_largest_per_group(case: Case) -> None:
    w = case.weight()
    mask = nm_mask(w, case.n, case.m)
    assert mask.shape == w.shape and mask.dtype == bool
    assert (_groups(mask, case.m).sum(axis=2) == case.n).all()
    mags = _groups(np.abs(w), case.m)
    kept_min = np.where(_groups(mask, case.m), mags, np.inf).min(axis=2)
    dropped_max = np.where(_groups(mask, case.m), -np.inf, mags).max(axis=2)
    assert (kept_min >= dropped_max).all()
    assert check_compliance(w * mask, case.n, case.m).violating_groups == 0


@settings(max_examples=40, deadline=None)
@given(case=cases(max_rows=40), block=st.integers(1, 48))
def test_vnm_mask_shares_one_choice_per_block(case: Case, block: int) -> None:
    w = case.weight()
    mask = vnm_mask(w, case.n, case.m, block)
    assert (_groups(mask, case.m).sum(axis=2) == case.n).all()
    for start in range(0, case.rows, block):
        rows = mask[start : start + block]
        assert (rows == rows[0]).all()
        # the block's choice maximises summed magnitude within each group
        sums = _groups(np.abs(w[start : start + block]).sum(axis=0, keepdims=True), case.m)[0]
        chosen = _groups(rows[:1], case.m)[0]
        assert (np.where(chosen, sums, np.inf).min(axis=1) >= np.where(chosen, -np.inf, sums).max(axis=1)).all()
    assert check_compliance(w * mask, case.n, case.m, block=block).violating_groups == 0


def test_scores_override_magnitude() -> None:
    w = np.array([[4.0, 3.0, 2.0, 1.0, -1.0, 9.0, 0.5, 0.25]], dtype=np.float32)
    by_mag = nm_mask(w, 2, 4)
    by_score = nm_mask(w, 2, 4, scores=-np.abs(w))
    assert by_mag.tolist() == [[True, True, False, False, True, True, False, False]]
    assert by_score.tolist() == [[False, False, True, True, False, False, True, True]]
    # activation-aware: a large input norm rescues a small weight
    norms = np.array([1, 1, 1, 100, 1, 1, 1, 1], dtype=np.float64)
    aware = nm_mask(w, 2, 4, scores=np.abs(w) * norms)
    assert aware[0, :4].tolist() == [True, False, False, True]


def test_ties_go_to_lower_index() -> None:
    w = np.ones((1, 4), dtype=np.float32)
    assert nm_mask(w, 2, 4).tolist() == [[True, True, False, False]]


def test_compliance_counts_violations() -> None:
    w = np.zeros((2, 8), dtype=np.float32)
    w[0, :3] = 1.0  # 3 of 4: violates 2:4
    w[1, 4:6] = 1.0  # 2 of 4: fine
    w[1, 0] = 1.0
    report = check_compliance(w, 2, 4)
    assert (report.groups, report.violating_groups, report.max_nonzeros) == (4, 1, 3)
    assert report.violating_fraction == pytest.approx(0.25)
    assert not report.compliant
    assert report.pattern == "2:4"
    # per-row compliant, but the two rows disagree: violates 2:2:4 in the first group
    per_row = np.zeros((2, 4), dtype=np.float32)
    per_row[0, :2] = 1.0
    per_row[1, 2:] = 1.0
    assert check_compliance(per_row, 2, 4).compliant
    blocked = check_compliance(per_row, 2, 4, block=2)
    assert (blocked.groups, blocked.violating_groups, blocked.pattern) == (1, 1, "2:2:4")


@pytest.mark.parametrize(
    ("weight", "kwargs", "needle"),
    [
        (np.ones((4, 10), np.float32), {}, "K=10 is not divisible by M=4"),
        (np.ones((4, 8), np.float32), {"n": 4}, "N=4"),
        (np.ones(8, np.float32), {}, "2-D"),
        (np.ones((2, 2, 4), np.float32), {}, "3-D"),
        (np.ones((4, 8), np.int32), {}, "int32 is not a floating type"),
        (np.full((4, 8), np.nan, np.float32), {}, "NaN or inf"),
        (np.full((4, 8), np.inf, np.float64), {}, "NaN or inf"),
        (np.ones((4, 8), np.float32), {"scores": np.ones((4, 4))}, "scores: shape"),
        (np.ones((4, 8), np.float32), {"scores": np.full((4, 8), np.nan)}, "scores: NaN"),
    ],
)
def test_mask_bad_input(weight: np.ndarray, kwargs: dict, needle: str) -> None:
    args = {"n": 2, "m": 4, **kwargs}
    with pytest.raises(UserError, match=needle):
        nm_mask(weight, **args)


def test_vnm_bad_block() -> None:
    with pytest.raises(UserError, match="V=0"):
        vnm_mask(np.ones((4, 8), np.float32), 2, 4, 0)


@st.composite
def _group_scores(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    """Scores ``(lead, groups, M)`` with many ties: small integers, repeated floats, signed zeros."""
    m = draw(st.integers(2, 16))
    n = draw(st.integers(1, m - 1))
    shape = (draw(st.integers(1, 6)), draw(st.integers(1, 5)), m)
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["ints", "floats", "signed-zeros", "int64"]))
    rng = np.random.default_rng(seed)
    if kind == "ints":
        scores = rng.integers(-3, 4, size=shape).astype(np.float64)
    elif kind == "int64":
        scores = rng.integers(-5, 6, size=shape)
    elif kind == "signed-zeros":
        scores = rng.choice([-0.0, 0.0, 1.0, -1.0], size=shape)
    else:
        scores = rng.choice(rng.normal(size=5), size=shape).astype(draw(st.sampled_from([np.float32, np.float64])))
    return scores, n


@settings(max_examples=300, deadline=None)
@given(case=_group_scores())
def test_group_choice_matches_argsort_reference(case: tuple[np.ndarray, int]) -> None:
    """The comparisons (M <= 8; broadcast or pair by pair) and the sort (M > 8) choose what the stable
    argsort chose, ties included."""
    scores, n = case
    want = argsort_group_keep(scores, n)
    np.testing.assert_array_equal(group_choice(scores, n), argsort_group_choice(scores, n))
    np.testing.assert_array_equal(group_keep(scores, n), want)
    if scores.shape[-1] <= SMALL_GROUP:
        np.testing.assert_array_equal(_keep_by_broadcast(scores, n), want)
        np.testing.assert_array_equal(_keep_by_pairs(scores, n), want)


def test_group_keep_on_many_groups_matches_argsort() -> None:
    """Past FEW_GROUPS groups the pairwise path runs; with ties it still matches the reference."""
    scores = np.random.default_rng(5).integers(0, 3, size=(FEW_GROUPS // 8 + 1, 8, 4)).astype(np.float32)
    np.testing.assert_array_equal(group_keep(scores, 2), argsort_group_keep(scores, 2))


@given(case=cases(), block=st.integers(1, 48))
def test_masks_match_argsort_reference(case: Case, block: int) -> None:
    """nm_mask and vnm_mask (built from the keep-mask) equal the argsort choice expanded by choice_to_mask."""
    w = case.weight()
    rows, k = w.shape
    groups = np.abs(w).reshape(rows, k // case.m, case.m)
    expected = choice_to_mask(argsort_group_choice(groups, case.n), case.m, rows)
    np.testing.assert_array_equal(nm_mask(w, case.n, case.m), expected)
    sums = np.add.reduceat(np.abs(w).astype(np.float64), np.arange(0, rows, block), axis=0)
    blocked = argsort_group_choice(sums.reshape(len(sums), k // case.m, case.m), case.n)
    np.testing.assert_array_equal(vnm_mask(w, case.n, case.m, block), choice_to_mask(blocked, case.m, rows, block=block))
    np.testing.assert_array_equal(vnm_choice(w, case.n, case.m, block), blocked)
