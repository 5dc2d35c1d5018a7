"""The ``model:`` block of a workload: what the schema and the graph check accept and refuse, without a checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sparsedebug.core.errors import UserError
from sparsedebug.sources.workload.load import parse_workload
from sparsedebug.sources.workload.schema import absolute_paths, dump_workload

BASE: dict[str, Any] = {"kind": "workload", "name": "m", "tokens": {"sequence": 16}}


def parse(**fields: Any) -> Any:
    return parse_workload({**BASE, **fields}, "w.yaml")


def test_model_shorthand_and_layer_entries_default_to_linear() -> None:
    wl = parse(model="minilm-l6", layers=[{"name": "encoder.layer.3.output.dense", "dtype": "float32", "sparsity": "2:4"}])
    assert wl.model is not None and wl.model.name == "minilm-l6" and wl.model.text is None
    entry = wl.layers[0]
    assert entry.op == "linear" and entry.dtype == "fp32" and entry.sparsity == "2:4"
    again = parse_workload(yaml.safe_load(dump_workload(wl)), "again.yaml")
    assert again == wl


def test_model_knobs_name_the_model_and_the_pruning_block() -> None:
    wl = parse(model="minilm-l6", pruning={"method": "sparsegpt", "pattern": " 2:4 ", "layers": "mlp", "calibration_tokens": 512})
    knobs = wl.knobs()
    assert knobs["model"] == "minilm-l6" and knobs["pruning.method"] == "sparsegpt"
    assert (knobs["pruning.pattern"], knobs["pruning.layers"], knobs["pruning.calibration_tokens"]) == ("2:4", "mlp", "512")
    graph = parse(layers=[{"name": "fc", "op": "linear", "shape": [8, 8]}])
    assert "model" not in graph.knobs() and "pruning.pattern" not in graph.knobs()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "m", "weights": "w.npz"}, "weights: a model workload takes it from its checkpoint"),
        ({"model": "m", "input_features": 8}, "input_features: a model workload takes it"),
        ({"model": "m", "layers": [{"name": "a", "op": "norm"}]}, "layer 'a': a model workload overrides linear layers only"),
        ({"model": "m", "layers": [{"name": "a", "shape": [4, 4]}]}, "layer 'a': shape and inputs come from the checkpoint"),
        ({"model": "m", "layers": [{"name": "a"}, {"name": "a"}]}, "layer 'a': duplicate layer entry"),
        ({"model": "m", "pruning": {"pattern": "3:2"}}, "pruning.pattern"),
        ({"layers": []}, "layers: a workload without a model needs at least one layer"),
        ({"layers": [{"name": "fc", "op": "linear", "shape": [8, 8]}], "pruning": {"method": "sparsegpt"}}, "sparsegpt needs a model workload"),
        ({"layers": [{"name": "fc", "op": "linear", "shape": [8, 8]}], "pruning": {"pattern": "2:4"}}, "pruning.pattern: applies to model workloads only"),
        ({"layers": [{"name": "fc", "op": "linear", "shape": [8, 8]}], "pruning": {"layers": "mlp"}}, "pruning.layers: applies to model workloads only"),
    ],
)
def test_refused_with_the_field_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        parse(**fields)


def test_absolute_paths_resolve_model_and_text_but_not_registered_names(tmp_path: Path) -> None:
    wl = parse(model={"name": "ckpt/model.gguf", "text": "notes.txt"})
    fixed = absolute_paths(wl, tmp_path)
    assert fixed.model is not None
    assert fixed.model.name == str((tmp_path / "ckpt" / "model.gguf").resolve())
    assert fixed.model.text == str((tmp_path / "notes.txt").resolve())
    registered = absolute_paths(parse(model="minilm-l6"), tmp_path)
    assert registered.model is not None and registered.model.name == "minilm-l6"
