"""`sparsedebug memo BUNDLE`: re-render from a bundle written by `playbook run` (synthetic run records)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.io import save_record
from tests.conftest import assert_clean_error, invoke
from tests.support.synth import dense_run, sparse_run


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    paths = {}
    for name, run in (("base", dense_run(5.0)), ("cand", sparse_run(6.5, fallback=True)), ("fixed", sparse_run(3.5))):
        paths[name] = tmp_path / f"{name}.json"
        save_record(run, paths[name])
    out = tmp_path / "bundle"
    result = invoke([
        "playbook", "run", "--baseline", str(paths["base"]), "--candidate", str(paths["cand"]),
        "--fixed", str(paths["fixed"]), "-o", str(out),
    ])
    assert result.exit_code == 0, result.stdout + result.stderr
    return out


def test_memo_prints_the_same_memo_as_the_walk(bundle: Path) -> None:
    result = invoke(["memo", str(bundle)])
    assert result.exit_code == 0
    assert result.stdout.strip() == (bundle / "memo.md").read_text().strip()
    assert "Decision: **ship**" in result.stdout
    assert "stage `lower`" in result.stdout


def test_memo_writes_files_and_json(bundle: Path, tmp_path: Path) -> None:
    memo, report = tmp_path / "m.md", tmp_path / "r.md"
    result = invoke(["memo", str(bundle), "-o", str(memo), "--report", str(report)])
    assert result.exit_code == 0
    assert memo.read_text().startswith("# ACCELERATOR REVIEW MEMO")
    assert report.read_text() == (bundle / "report.md").read_text()
    as_json = invoke(["memo", str(bundle), "--json"])
    data = json.loads(as_json.stdout)
    assert data["decision"]["decision"] == "ship"
    assert data["memo"].startswith("# ACCELERATOR REVIEW MEMO")


def test_memo_follows_edits_to_the_bundle(bundle: Path) -> None:
    fixed = json.loads((bundle / "fixed.run.json").read_text())
    fixed["outcome"]["quality"] = None
    (bundle / "fixed.run.json").write_text(json.dumps(fixed))
    result = invoke(["memo", str(bundle)])
    assert result.exit_code == 0
    assert "**ship**" not in result.stdout
    assert "no quality evidence" in result.stdout


def test_memo_broken_bundle(bundle: Path, tmp_path: Path) -> None:
    (bundle / "classification.json").unlink()
    assert_clean_error(invoke(["memo", str(bundle)]), 2, "files.classification: classification.json is listed but missing")
    (bundle / "bundle.json").write_text("{")
    assert_clean_error(invoke(["memo", str(bundle)]), 2, "bundle.json: malformed JSON")
    not_dir = tmp_path / "file.txt"
    not_dir.write_text("x")
    assert_clean_error(invoke(["memo", str(not_dir)]), 2, "not a directory")
    assert_clean_error(invoke(["memo", str(tmp_path / "none")]), 2, "bundle directory not found")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_clean_error(invoke(["memo", str(empty)]), 2, "not a bundle directory (no bundle.json)")


def test_memo_help() -> None:
    result = invoke(["memo", "--help"])
    assert result.exit_code == 0 and "--report" in result.stdout


def test_rerun_replaces_an_old_bundle_only_with_force(bundle: Path, tmp_path: Path) -> None:
    stale = bundle / "reproducer.yaml"
    stale.write_text("left over from an older walk\n")
    args = ["playbook", "run", "--baseline", str(tmp_path / "base.json"), "--candidate", str(tmp_path / "cand.json"), "-o", str(bundle)]
    before = {p.name: p.read_bytes() for p in bundle.iterdir()}
    refused = invoke(args)
    assert refused.exit_code == 2 and "holds a bundle already; pass --force" in refused.stderr
    assert {p.name: p.read_bytes() for p in bundle.iterdir()} == before
    result = invoke([*args, "--force"])
    assert result.exit_code == 0, result.stderr
    assert not stale.exists() and not (bundle / "fixed.run.json").exists()
    assert json.loads((bundle / "fix.json").read_text())["fixed_source"] == "none"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle")] == []
