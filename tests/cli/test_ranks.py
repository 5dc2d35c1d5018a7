"""Run sets through the CLI: `import trace DIR` and `playbook run --baseline DIR --candidate DIR`."""

from __future__ import annotations

import json
from pathlib import Path

from sparsedebug.sources.bundle import load_bundle
from tests.conftest import assert_clean_error, invoke
from tests.support.ranksets import write_rank_set


def test_import_trace_of_a_directory_summarises_every_rank_and_names_the_straggler(tmp_path: Path) -> None:
    write_rank_set(tmp_path / "job", 4, seed=5, straggler=2)
    result = invoke(["import", "trace", str(tmp_path / "job"), "--executor", "inprocess"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "4 ranks" in result.stdout and "straggler: rank 2" in result.stdout
    out = tmp_path / "set.json"
    as_json = invoke(["import", "trace", str(tmp_path / "job" / "rank*.json"), "--executor", "inprocess", "--json", "-o", str(out)])
    payload = json.loads(as_json.stdout)
    assert payload["kind"] == "rank_set" and [r["rank"] for r in payload["ranks"]] == [0, 1, 2, 3]
    assert all(r["rank_source"] == "distributedInfo" and r["communication_ms"] > 0 for r in payload["ranks"])
    assert json.loads(out.read_text())["ranks"] == payload["ranks"]


def test_playbook_on_two_run_sets_names_the_straggler_and_the_confined_rank(tmp_path: Path) -> None:
    write_rank_set(tmp_path / "a", 4, seed=6)
    write_rank_set(tmp_path / "b", 4, seed=56, straggler=3, fallback=3)
    out = tmp_path / "bundle"
    result = invoke([
        "playbook", "run", "--baseline", str(tmp_path / "a"), "--candidate", str(tmp_path / "b"), "-o", str(out), "--executor", "inprocess",
    ])
    assert result.exit_code == 0, result.stdout + result.stderr
    bundle = load_bundle(out)
    assert bundle.ranks is not None and bundle.ranks.walked_rank == 3 and bundle.ranks.confined_to == [3]
    assert bundle.ranks.candidate_straggler is not None and bundle.ranks.candidate_straggler.rank == 3
    memo = (out / "report.md").read_text()  # the memo's detail
    assert "candidate straggler: rank 3" in memo and "confined to rank 3" in memo
    assert "compare rank 3 with its baseline rank" in memo
    assert [i.label for i in bundle.manifest.inputs if i.role == "candidate"][0].endswith("rank3.json")


def test_a_run_set_on_one_side_only_is_refused(tmp_path: Path) -> None:
    paths = write_rank_set(tmp_path / "a", 2)
    result = invoke(["playbook", "run", "--baseline", str(tmp_path / "a"), "--candidate", str(paths[0]), "-o", str(tmp_path / "o")])
    assert_clean_error(result, 2, "give a run set")
    assert not (tmp_path / "o").exists()


def test_bisect_classify_gate_and_fallbacks_take_run_sets_rank_to_rank(tmp_path: Path) -> None:
    write_rank_set(tmp_path / "a", 3, seed=8)
    write_rank_set(tmp_path / "b", 3, seed=58, fallback=1)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for command, key in ((["bisect", a, b], "bisect"), (["classify", b, "--baseline", a], "classification"),
                         (["gate", a, b], "gate"), (["fallbacks", a, b], "fallbacks")):
        result = invoke([*command, "--executor", "inprocess", "--json"])
        assert result.exit_code in (0, 1), (command, result.stdout, result.stderr)
        payload = json.loads(result.stdout)
        assert payload["ranks"]["confined_to"] == [1] and payload["ranks"]["walked_rank"] == 1, command
        assert key in payload, command
    table = invoke(["fallbacks", a, b, "--executor", "inprocess"])
    assert "confined to rank 1" in table.stdout and "rank 1 against its baseline rank" in table.stdout
    assert "mlp" in json.loads(invoke(["fallbacks", a, b, "--executor", "inprocess", "--json"]).stdout)["fallbacks"]["changed"][0]["layer"]
