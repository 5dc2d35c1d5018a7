"""The search-state objects on synthetic oracles: BisectMarker and ddmin."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.reduce.search import BisectMarker, DDMin, Outcome


def _run_marker(count: int, first_bad: int | None) -> BisectMarker:
    marker = BisectMarker(count)
    while not marker.done:
        index = marker.current
        marker.step(first_bad is None or index < first_bad)
    return marker


@given(st.integers(min_value=0, max_value=200), st.data())
def test_marker_finds_first_bad_in_log_steps(count: int, data: st.DataObject) -> None:
    first_bad = data.draw(st.one_of(st.none(), st.integers(min_value=0, max_value=max(count - 1, 0))))
    if count == 0:
        first_bad = None
    marker = _run_marker(count, first_bad)
    assert marker.first_bad == first_bad
    assert marker.steps <= max(count, 1).bit_length()
    assert marker.remaining() == 0


def test_marker_with_known_bad_end_and_misuse() -> None:
    marker = BisectMarker(4, last_known_bad=True)
    while not marker.done:
        marker.step(True)
    assert marker.first_bad == 4
    with pytest.raises(ValueError):
        _ = marker.current
    with pytest.raises(ValueError):
        _ = BisectMarker(3).first_bad
    with pytest.raises(ValueError):
        BisectMarker(-1)


def _minimise(changes: list[str], fails: set[frozenset[str]] | None = None, oracle=None) -> DDMin[str]:  # type: ignore[no-untyped-def]
    search: DDMin[str] = DDMin(changes)
    seen: set[frozenset[str]] = set()
    while not search.done:
        subset = frozenset(search.pending)
        assert subset not in seen, "a subset was probed twice"
        seen.add(subset)
        search.report(oracle(subset))
    return search


def test_ddmin_single_culprit_in_few_probes() -> None:
    changes = [f"c{i}" for i in range(16)]
    search = _minimise(changes, oracle=lambda s: "c11" in s)
    assert search.result == ("c11",)
    assert search.probes <= 2 * 4 + 2  # about 2 log2(n)


def test_ddmin_keeps_both_changes_of_an_interaction() -> None:
    # Neither change alone reproduces; together they do (e.g. a fallback that only hurts with per-call conversion).
    changes = ["threads", "conversion", "precision", "layers.1.mlp", "block_size", "backend", "layers.3.attn"]
    search = _minimise(changes, oracle=lambda s: {"conversion", "layers.1.mlp"} <= s)
    assert set(search.result) == {"conversion", "layers.1.mlp"}
    assert search.result == ("conversion", "layers.1.mlp"), "result keeps the original order"


def test_ddmin_result_is_one_minimal_for_every_pair_oracle() -> None:
    changes = list("abcdefgh")
    for a, b in itertools.combinations(changes, 2):
        search = _minimise(changes, oracle=lambda s, a=a, b=b: {a, b} <= s)
        assert search.result == (a, b)


def test_ddmin_disjunction_returns_one_of_them() -> None:
    search = _minimise(list("abcdef"), oracle=lambda s: "b" in s or "e" in s)
    assert search.result in (("b",), ("e",))


def test_ddmin_unresolved_probes_are_not_kept() -> None:
    # Subsets containing "x" without "y" are invalid variants; the culprit is "z".
    def oracle(s: frozenset[str]) -> Outcome:
        if "x" in s and "y" not in s:
            return Outcome.UNRESOLVED
        return Outcome.FAIL if "z" in s else Outcome.PASS

    search = _minimise(["x", "z", "y", "w"], oracle=oracle)
    assert search.result == ("z",)
    assert any(outcome == Outcome.UNRESOLVED for _, outcome in search.history)


def test_ddmin_misuse_is_refused() -> None:
    with pytest.raises(ValueError):
        DDMin(["a", "a"])
    search: DDMin[str] = DDMin(["only"])
    assert search.done and search.result == ("only",)
    with pytest.raises(ValueError):
        search.report(True)
