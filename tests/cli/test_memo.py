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


def test_memo_format_json_is_the_memo_model_of_the_schema(bundle: Path) -> None:
    from sparsedebug.records.memo import Memo

    result = invoke(["memo", str(bundle), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    memo = Memo.model_validate_json(result.stdout)
    assert memo == Memo.model_validate_json((bundle / "memo.json").read_text())
    schema = json.loads(invoke(["schema", "memo"]).stdout)
    assert schema["title"] == "Memo" and set(schema["required"]) <= set(json.loads(result.stdout))
    figure = memo.figures()[0]
    assert figure.source.record and figure.source.field


def test_memo_format_github_and_the_gate_summary_share_one_renderer(bundle: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from sparsedebug.render.memo.github import GithubMemo

    calls: list[str] = []
    original = GithubMemo.format

    def spy(self: GithubMemo, memo: object) -> str:
        calls.append(memo.title)  # type: ignore[attr-defined]
        return original(self, memo)  # type: ignore[arg-type]

    monkeypatch.setattr(GithubMemo, "format", spy)
    shown = invoke(["memo", str(bundle), "--format", "github"])
    assert shown.exit_code == 0 and shown.stdout.startswith("## ")
    summary = tmp_path / "summary.md"
    invoke(["gate", str(tmp_path / "base.json"), str(tmp_path / "cand.json"), "--summary", str(summary)])
    assert summary.read_text().startswith("## sparsedebug gate")
    assert len(calls) == 2 and calls[1] == "sparsedebug gate"


def test_memo_unknown_format_and_a_bundle_from_before_the_memo_model(bundle: Path) -> None:
    assert_clean_error(invoke(["memo", str(bundle), "--format", "pdf"]), 2, "--format", "markdown")
    manifest = json.loads((bundle / "bundle.json").read_text())
    del manifest["files"]["memo_model"]
    (bundle / "memo.json").unlink()
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    assert_clean_error(invoke(["memo", str(bundle)]), 2, "older sparsedebug", "playbook run")


def test_memo_format_terminal_is_the_walks_summary(bundle: Path) -> None:
    result = invoke(["memo", str(bundle), "--format", "terminal"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1 freeze") and any(line.startswith("Decision: ") for line in lines)
