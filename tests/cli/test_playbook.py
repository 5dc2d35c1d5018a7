"""`sparsedebug playbook show` (and, below, `playbook run`) through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sparsedebug.playbook import default_playbook_path
from tests.conftest import assert_clean_error, invoke


def test_show_renders_every_section() -> None:
    result = invoke(["playbook", "show"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for needle in (
        "Structured Sparsity",
        "SPARSE TENSOR EXECUTION",
        "model graph [graph] -> compiler lower [lower]",
        "Locate first",
        "fallback kernel rate",
        "Audit sparse-format",
        "p95 and",
        "serving performance owner",
        "bounded rollout",
        "fallback_evidence",
    ):
        assert needle in out, needle


def test_show_json_is_only_json() -> None:
    result = invoke(["playbook", "show", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["kind"] == "playbook"
    assert [s["number"] for s in data["steps"]] == [1, 2, 3, 4, 5]


def test_show_other_playbook_and_bad_one(tmp_path: Path) -> None:
    data = yaml.safe_load(default_playbook_path().read_text())
    data["title"] = "My team's sparsity playbook"
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(data))
    result = invoke(["playbook", "show", "--playbook", str(good)])
    assert result.exit_code == 0 and "My team's sparsity playbook" in result.stdout
    data["owners"] = data["owners"][:1]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["playbook", "show", "--playbook", str(bad)]), 2, "bad.yaml", "is not one of the owners")
    assert_clean_error(invoke(["playbook", "show", "--playbook", str(tmp_path / "x.yaml")]), 2, "x.yaml: file not found")


def test_help() -> None:
    result = invoke(["playbook", "--help"])
    assert result.exit_code == 0
    assert "show" in result.stdout
