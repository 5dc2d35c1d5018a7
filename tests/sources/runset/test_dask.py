"""The same run-set analysis on a real Dask LocalCluster (two worker processes) as on local processes.

Dask distributed is the optional `dask` extra; `.ci/run` installs it, and with CI=true a missing
Dask fails this test instead of skipping it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparsedebug.locate.ranks import compare_rank_sets
from sparsedebug.sources.runset.discover import discover
from sparsedebug.sources.runset.parse import parse_run_set
from tests.support.ranksets import write_rank_set


def _distributed() -> object:
    try:
        import distributed
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true: Dask distributed must be installed (pip install -e '.[dask]')")
        pytest.skip("Dask distributed not installed (the optional dask extra)")
    return distributed


def test_dask_local_cluster_gives_the_local_executor_s_results(tmp_path: Path) -> None:
    distributed = _distributed()
    write_rank_set(tmp_path / "base", 4, seed=7)
    write_rank_set(tmp_path / "cand", 4, seed=57, fallback=3, straggler=1)
    members = {side: discover([str(tmp_path / side)]) for side in ("base", "cand")}
    local = {side: parse_run_set(m, side, executor="local") for side, m in members.items()}
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)  # type: ignore[attr-defined]
    try:
        address = f"dask://{cluster.scheduler_address.removeprefix('tcp://')}"
        remote = {side: parse_run_set(m, side, executor=address) for side, m in members.items()}
    finally:
        cluster.close()
    for side in members:
        assert remote[side].ranks == local[side].ranks
        assert remote[side].executor.startswith("Dask distributed")
    assert compare_rank_sets(remote["base"], remote["cand"]) == compare_rank_sets(local["base"], local["cand"])
