"""`sparsedebug schema`: JSON Schemas that real files validate against."""

from __future__ import annotations

import json

import pytest
import yaml

from sparsedebug.cli.schema import schemas
from tests.conftest import FIXTURES, assert_clean_error, invoke


@pytest.mark.parametrize("kind", sorted(schemas()))
def test_schema_is_json_with_the_model_fields(kind: str) -> None:
    result = invoke(["schema", kind])
    assert result.exit_code == 0, result.stderr
    schema = json.loads(result.stdout)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == set(schemas()[kind].model_fields)
    assert schema.get("additionalProperties") is False


def test_workload_schema_covers_the_fixture_keys() -> None:
    schema = json.loads(invoke(["schema", "workload"]).stdout)
    data = yaml.safe_load((FIXTURES / "workloads" / "llama_2of4_regressed.yaml").read_text())
    assert set(data) <= set(schema["properties"])
    layer = schema["$defs"]["Layer"]
    for item in data["layers"]:
        assert set(item) <= set(layer["properties"])
    assert set(layer["properties"]["op"]["enum"]) == {"linear", "attention", "norm", "activation", "embedding", "elementwise"}
    assert schema["properties"]["conversion"]["enum"] == ["once", "per_call"]


def test_unknown_schema_kind_is_a_usage_error() -> None:
    assert_clean_error(invoke(["schema", "bundle-of-words"]), 2, "bundle-of-words")
