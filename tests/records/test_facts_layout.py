"""Result records whose sentences became facts (layout 2): a file of layout 1 is refused with a message to write it
again, never half-read; user-written inputs (workloads, policies, targets) keep reading every layout they did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from sparsedebug.cli.schema import schemas
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_record
from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.gate import GatePolicy

RESULTS = {kind: model for kind, model in schemas().items() if getattr(model, "oldest_readable", 1) == FACTS_SCHEMA_VERSION}


def test_the_step_outputs_are_on_the_facts_layout() -> None:
    assert {"bisect", "gate", "decision", "reduce"} <= set(RESULTS)


@pytest.mark.parametrize("kind", sorted(RESULTS))
def test_a_layout_1_result_is_refused_with_an_upgrade_message(kind: str, tmp_path: Path) -> None:
    model: type[BaseModel] = RESULTS[kind]
    old = tmp_path / f"{kind}.json"
    old.write_text(json.dumps({"schema_version": 1, "kind": model.model_fields["kind"].default if "kind" in model.model_fields else kind}))
    with pytest.raises(UserError, match=rf"{kind}\.json: schema_version: 1 was written by an older sparsedebug; .*write the file again"):
        load_record(old, model)


def test_user_inputs_still_read_layout_1(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"schema_version": 1, "kind": "gate_policy"}))
    assert load_record(policy, GatePolicy) == GatePolicy()
    assert Record.oldest_readable == 1 and GatePolicy.oldest_readable == 1
