"""The playbook as data: the embedded YAML loads, and inconsistent playbooks are refused by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sparsedebug.errors import UserError
from sparsedebug.playbook import DECISIONS, MECHANISMS, default_playbook_path, load_playbook
from sparsedebug.records import STAGES


def _raw() -> dict[str, Any]:
    data = yaml.safe_load(default_playbook_path().read_text())
    assert isinstance(data, dict)
    return data


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "pb.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_embedded_playbook_has_the_seed_documents_content() -> None:
    book = load_playbook()
    assert [s.id for s in book.steps] == ["freeze", "locate", "classify", "reproduce", "rerun"]
    assert [s.number for s in book.steps] == [1, 2, 3, 4, 5]
    assert tuple(s.stage for s in book.concept.stages) == STAGES
    assert tuple(m.id for m in book.mechanisms) == MECHANISMS
    assert tuple(d.id for d in book.decisions) == DECISIONS
    assert {m.id for m in book.metrics} == {
        "tensor_core_occupancy",
        "fallback_kernel_rate",
        "sparse_metadata_overhead",
        "quality_guardrail_drift",
    }
    assert {b.id for b in book.branches} == {"dense_fallback_counters", "conversion_audit", "precision_policy"}
    assert {o.title for o in book.owners} == {
        "model optimization lead",
        "accelerator architecture owner",
        "compiler sparsity pass owner",
        "serving performance owner",
    }
    assert set(book.memo.required_owners) == {o.id for o in book.owners}
    assert {"fallback_evidence", "quality_evidence"} <= set(book.decision("ship").requires)
    assert "equal latency budget" in book.primary_metric.name
    assert any("p99" in p.text for p in book.pitfalls)


def test_missing_file_is_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="nope.yaml: file not found"):
        load_playbook(tmp_path / "nope.yaml")


def test_unknown_field_is_named(tmp_path: Path) -> None:
    data = _raw()
    data["steps"][2]["colour"] = "red"
    with pytest.raises(UserError, match=r"pb.yaml: steps.2.colour: unknown field"):
        load_playbook(_write(tmp_path, data))


def test_unknown_owner_in_branch(tmp_path: Path) -> None:
    data = _raw()
    data["branches"][0]["owner"] = "nobody"
    with pytest.raises(UserError, match="branch dense_fallback_counters: owner 'nobody'"):
        load_playbook(_write(tmp_path, data))


def test_steps_out_of_order(tmp_path: Path) -> None:
    data = _raw()
    data["steps"][0], data["steps"][1] = data["steps"][1], data["steps"][0]
    with pytest.raises(UserError, match="numbered 1..5 in order"):
        load_playbook(_write(tmp_path, data))


def test_missing_decision(tmp_path: Path) -> None:
    data = _raw()
    data["decisions"] = [d for d in data["decisions"] if d["id"] != "escalate"]
    with pytest.raises(UserError, match="decisions must be ship, bounded_rollout, rollback, escalate"):
        load_playbook(_write(tmp_path, data))


def test_ship_must_require_fallback_and_quality_evidence(tmp_path: Path) -> None:
    data = _raw()
    data["decisions"][0]["requires"] = ["speedup"]
    with pytest.raises(UserError, match="ship must require fallback_evidence, quality_evidence"):
        load_playbook(_write(tmp_path, data))


def test_unknown_evidence_kind(tmp_path: Path) -> None:
    data = _raw()
    data["decisions"][0]["requires"].append("vibes")
    with pytest.raises(UserError, match=r"decisions.0.requires.4"):
        load_playbook(_write(tmp_path, data))


def test_concept_stages_must_match_the_record(tmp_path: Path) -> None:
    data = _raw()
    data["concept"]["stages"].pop()
    with pytest.raises(UserError, match="concept: .*stages must be graph, lower, kernel, schedule, outcome"):
        load_playbook(_write(tmp_path, data))


def test_duplicate_owner_id(tmp_path: Path) -> None:
    data = _raw()
    data["owners"].append(dict(data["owners"][0]))
    with pytest.raises(UserError, match="owners: duplicate id model_optimization_lead"):
        load_playbook(_write(tmp_path, data))
