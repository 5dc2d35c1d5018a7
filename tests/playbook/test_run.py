"""The playbook as data: the embedded YAML loads, and inconsistent playbooks are refused by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sparsedebug.core.errors import UserError
from sparsedebug.records.playbook import DECISIONS, MECHANISMS
from sparsedebug.records.run import STAGES
from sparsedebug.sources.playbook import default_playbook_path, load_playbook


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


# --------------------------------------------------------------------------- apply_fix (step 4 closing the loop)

from sparsedebug.records.bundle import FixOutcome  # noqa: E402
from sparsedebug.records.classification import Fix  # noqa: E402
from sparsedebug.reduce.apply_fix import apply_fix  # noqa: E402
from sparsedebug.render.words.notes import say  # noqa: E402
from sparsedebug.render.words.targets import fix_how_words  # noqa: E402
from sparsedebug.sources.workload.graph import check_graph  # noqa: E402
from sparsedebug.sources.workload.load import parse_workload  # noqa: E402
from sparsedebug.sources.workload.schema import Workload  # noqa: E402


def _mlp(k_mid: int = 512, sparsity: str = "32:2:4") -> Workload:
    return parse_workload(
        {
            "name": "mlp", "seed": 1, "tokens": {"batch": 1, "sequence": 8}, "backend": "cpu-numpy",
            "conversion": "per_call", "precision": "fp32",
            "layers": [
                {"name": "fc0", "op": "linear", "shape": [k_mid, 128], "sparsity": sparsity},
                {"name": "act0", "op": "activation", "fn": "relu"},
                {"name": "fc1", "op": "linear", "shape": [128, k_mid], "sparsity": sparsity},
            ],
        },
        "test",
    )


def _fix(**kw: object) -> Fix:
    base: dict[str, object] = {"metric": "m", "direction": "down", "rule": "r"}
    base.update(kw)
    return Fix.model_validate(base)


def test_knob_fixes_change_only_the_knob() -> None:
    wl = _mlp()
    new, how = apply_fix(wl, _fix(kind="knob", knob="conversion", value="once"))
    assert new is not None and new.conversion == "once" and say(how) == "conversion per_call -> once"
    assert new.layers == wl.layers
    new, how = apply_fix(wl, _fix(kind="knob", knob="threads", value=2))
    assert new is not None and new.threads == 2
    new, how = apply_fix(wl, _fix(kind="knob", knob="precision", value="fp16"))
    assert new is not None and new.precision == "fp16"


def test_layer_exclude_and_block_size() -> None:
    wl = _mlp()
    new, how = apply_fix(wl, _fix(kind="layer", layer="fc1", action="exclude"))
    assert new is not None and [l.sparsity for l in new.layers] == ["32:2:4", "dense", "dense"]
    assert "fc1: sparsity 32:2:4 -> dense" in say(how)
    new, how = apply_fix(wl, _fix(kind="block", value=128))
    assert new is not None and [l.sparsity for l in new.layers if l.op == "linear"] == ["128:2:4", "128:2:4"]
    new, _ = apply_fix(wl, _fix(kind="block", value=128, layer="fc0"))
    assert new is not None and [l.sparsity for l in new.layers if l.op == "linear"] == ["128:2:4", "32:2:4"]
    missing, why = apply_fix(wl, _fix(kind="layer", layer="nope", action="exclude"))
    assert missing is None and "nope is not in workload" in say(why)


def test_layer_cast_changes_only_that_layers_dtype() -> None:
    wl = _h200_mlp(1376)
    wl = wl.model_copy(update={"layers": [l.model_copy(update={"dtype": "fp32"}) if l.name == "down" else l for l in wl.layers]})
    new, how = apply_fix(wl, _fix(kind="layer", layer="down", action="cast", value="fp16"))
    assert new is not None and say(how) == "down: dtype fp32 -> fp16"
    assert {l.name: new.dtype_of(l) for l in new.layers if l.op == "linear"} == {"gate": "fp16", "up": "fp16", "down": "fp16"}


def _h200_mlp(ffn: int) -> Workload:
    return parse_workload(
        {
            "name": "mlp", "seed": 1, "tokens": {"batch": 1, "sequence": 8}, "backend": "h200-cusparselt",
            "precision": "fp16",
            "layers": [
                {"name": "gate", "op": "linear", "shape": [ffn, 64], "sparsity": "2:4"},
                {"name": "act", "op": "activation", "fn": "silu"},
                {"name": "up", "op": "linear", "shape": [ffn, 64], "sparsity": "2:4", "inputs": ["input"]},
                {"name": "mul", "op": "elementwise", "fn": "mul", "inputs": ["act", "up"]},
                {"name": "down", "op": "linear", "shape": [64, ffn], "sparsity": "2:4"},
            ],
        },
        "test",
    )


def test_pad_k_widens_every_producer_of_the_width() -> None:
    # 1368 is a multiple of M=4 but not of cuSPARSELt's 16: all three projections fall back.
    new, how = apply_fix(_h200_mlp(1368), _fix(kind="layer", layer="down", action="pad"))
    assert new is not None, how
    assert {l.name: l.shape for l in new.layers if l.op == "linear"} == {
        "gate": [1376, 64], "up": [1376, 64], "down": [64, 1376],
    }
    check_graph(new)
    assert "padded K 1368 -> 1376" in say(how)


def test_pad_out_goes_through_the_single_consumer() -> None:
    new, how = apply_fix(_h200_mlp(1368), _fix(kind="layer", layer="gate", action="pad"))
    assert new is not None, how
    assert [l.shape for l in new.layers if l.op == "linear"] == [[1376, 64], [1376, 64], [64, 1376]]
    assert "padded out 1368 -> 1376" in say(how)


def test_pad_refusals() -> None:
    aligned, why = apply_fix(_h200_mlp(1376), _fix(kind="layer", layer="down", action="pad"))
    assert aligned is None and "already lowers sparse" in say(why)
    wl = _h200_mlp(1368)
    wl = wl.model_copy(update={"layers": [*wl.layers, wl.layers[1].model_copy(update={"name": "tap", "inputs": ["mul"]})]})
    tapped, why = apply_fix(wl, _fix(kind="layer", layer="down", action="pad"))
    assert tapped is None and "also feeds tap" in say(why)


def test_advice_is_not_a_workload_change() -> None:
    new, why = apply_fix(_mlp(), _fix(kind="advice", code="cuda_graph"))
    assert new is None and why.code == "targets.fix_is_advice" and why.values["rule"] == "r"
    outcome = FixOutcome(proposed=_fix(kind="advice", code="cuda_graph"), applied=False, how=why, fixed_source="none")
    assert fix_how_words(outcome) == "advice, not a workload change: capture the forward in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace"
