"""Layer sets written once, and the owner of each blocking check from the playbook."""

from __future__ import annotations

import pytest

from sparsedebug.records.playbook import Playbook
from sparsedebug.signoff.memo_results import layer_set, owner_terms
from sparsedebug.sources.playbook import load_playbook


def test_layers_differing_only_in_their_block_number_are_one_pattern() -> None:
    names = ["encoder.layer.3.output.dense", "encoder.layer.0.intermediate.dense", "encoder.layer.0.output.dense",
             "encoder.layer.1.output.dense", "encoder.layer.2.output.dense", "encoder.layer.5.output.dense"]
    assert layer_set(names) == ["encoder.layer.[0-3,5].output.dense", "encoder.layer.0.intermediate.dense"]


def test_call_ordinals_group_and_names_without_a_number_stay_as_given() -> None:
    names = [f"scaled_dot_product_attention#{i} [1x32x2048x128]" for i in range(4)] + ["lm_head"]
    assert layer_set(names) == ["scaled_dot_product_attention#[0-3] [1x32x2048x128]", "lm_head"]
    assert layer_set(["layers.7.self_attn.q_proj"]) == ["layers.7.self_attn.q_proj"]


def test_each_gate_check_has_the_owner_the_playbook_makes_accountable() -> None:
    book = load_playbook()
    assert owner_terms(book, ["effective_speedup", "p99_latency", "quality_delta", "fallback_rate", "precision_drift"]) == {
        "owner.effective_speedup": "serving performance owner", "owner.p99_latency": "serving performance owner",
        "owner.quality_delta": "model optimization lead", "owner.fallback_rate": "compiler sparsity pass owner",
        "owner.precision_drift": "accelerator architecture owner"}


def test_a_check_with_two_owners_is_refused() -> None:
    data = load_playbook().model_dump()
    data["owners"][0]["checks"] = ["fallback_rate"]
    with pytest.raises(ValueError, match="check fallback_rate has more than one owner"):
        Playbook.model_validate(data)
