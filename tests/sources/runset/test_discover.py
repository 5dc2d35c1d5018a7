"""Which files form a run set and which rank each is: distributedInfo, else the file name, else order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.runset.discover import discover, is_run_set
from tests.support.ranksets import write_rank_set


def test_ranks_come_from_distributed_info_even_against_the_file_name(tmp_path: Path) -> None:
    paths = write_rank_set(tmp_path / "job", 3)
    # rename so the file names disagree with the trace's own rank
    for path in paths:
        path.rename(path.with_name(f"worker_{9 - int(path.stem[-1])}.json"))
    members = discover([str(tmp_path / "job")])
    assert [(m.rank, m.source, m.world_size) for m in members] == [(0, "distributedInfo", 3), (1, "distributedInfo", 3), (2, "distributedInfo", 3)]
    assert members[0].path.name == "worker_9.json"


def test_without_distributed_info_the_file_name_then_the_order(tmp_path: Path) -> None:
    write_rank_set(tmp_path / "named", 3, distributed=False)
    members = discover([str(tmp_path / "named")])
    assert [(m.rank, m.source) for m in members] == [(0, "file name"), (1, "file name"), (2, "file name")]
    unnamed = tmp_path / "unnamed"
    unnamed.mkdir()
    for index, path in enumerate(sorted((tmp_path / "named").iterdir())):
        path.rename(unnamed / f"{'abc'[index]}.json")
    assert [(m.rank, m.source) for m in discover([str(unnamed)])] == [(0, "order"), (1, "order"), (2, "order")]


def test_globs_and_lists_and_bad_sets(tmp_path: Path) -> None:
    write_rank_set(tmp_path / "job", 2)
    assert is_run_set(str(tmp_path / "job")) and is_run_set(str(tmp_path / "job" / "rank*.json"))
    assert not is_run_set(str(tmp_path / "job" / "rank0.json"))
    assert [m.rank for m in discover([str(tmp_path / "job" / "rank*.json")])] == [0, 1]
    assert [m.rank for m in discover([str(tmp_path / "job" / "rank1.json"), str(tmp_path / "job" / "rank0.json")])] == [0, 1]
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no traces"):
        discover([str(tmp_path / "empty")])
    with pytest.raises(UserError, match="matches no file"):
        discover([str(tmp_path / "job" / "nope*.json")])
    doc = json.loads((tmp_path / "job" / "rank1.json").read_text())
    doc["distributedInfo"]["rank"] = 0
    (tmp_path / "job" / "rank1.json").write_text(json.dumps(doc))
    with pytest.raises(UserError, match="rank 0 .* is also"):
        discover([str(tmp_path / "job")])
