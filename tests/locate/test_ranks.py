"""Run sets compared rank to rank: a planted straggler and a planted rank-confined fallback are found,
over several seeds with the planted rank drawn at random; nothing planted names nothing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.locate.ranks import compare_rank_sets, straggler
from sparsedebug.records.ranks import RankSet
from sparsedebug.render.words.notes import say
from sparsedebug.sources.runset.discover import discover
from sparsedebug.sources.runset.parse import parse_run_set
from tests.support.ranksets import write_rank_set


def _set(folder: Path, ranks: int, **planted: object) -> RankSet:
    write_rank_set(folder, ranks, **planted)  # type: ignore[arg-type]
    return parse_run_set(discover([str(folder)]), folder.name, executor="inprocess")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_planted_straggler_is_named_and_nothing_planted_names_nobody(tmp_path: Path, seed: int) -> None:
    ranks = random.Random(seed).choice([2, 4, 6])
    late = random.Random(seed + 100).randrange(ranks)
    found = straggler(_set(tmp_path / "late", ranks, seed=seed, straggler=late))
    assert found is not None and found.rank == late and found.last_share >= 2 / 3
    assert straggler(_set(tmp_path / "calm", ranks, seed=seed)) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_fallback_on_one_rank_is_confined_to_it(tmp_path: Path, seed: int) -> None:
    ranks = random.Random(seed).choice([2, 4, 8])
    fell = random.Random(seed + 200).randrange(ranks)
    base = _set(tmp_path / "base", ranks, seed=seed)
    cand = _set(tmp_path / "cand", ranks, seed=seed + 50, fallback=fell)
    comparison = compare_rank_sets(base, cand)
    assert comparison.confined_to == [fell] and comparison.walked_rank == fell and not comparison.uniform
    changed = next(c for c in comparison.changes if c.rank == fell)
    assert changed.path_changes and all("mlp" in name for name in changed.path_changes)
    assert any(f"confined to rank {fell}" in say(finding) for finding in comparison.findings)


def test_a_change_on_every_rank_is_uniform_and_the_walk_takes_the_lowest_rank(tmp_path: Path) -> None:
    base = _set(tmp_path / "base", 4, seed=3, sparse=frozenset())
    cand = _set(tmp_path / "cand", 4, seed=53)  # every rank moved to sparse kernels alike
    comparison = compare_rank_sets(base, cand)
    assert comparison.confined_to == [] and comparison.walked_rank == 0
    assert all(c.path_changes for c in comparison.changes)


def test_sets_of_different_ranks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="different ranks"):
        compare_rank_sets(_set(tmp_path / "two", 2), _set(tmp_path / "three", 3))


def test_sixteen_ranks_in_worker_processes_match_in_process(tmp_path: Path) -> None:
    write_rank_set(tmp_path / "job", 16, seed=4, straggler=11, iterations=2)
    members = discover([str(tmp_path / "job")])
    local = parse_run_set(members, "job", executor="local")
    inproc = parse_run_set(members, "job", executor="inprocess")
    assert local.ranks == inproc.ranks and local.executor.startswith("local processes")
    found = straggler(local)
    assert found is not None and found.rank == 11
