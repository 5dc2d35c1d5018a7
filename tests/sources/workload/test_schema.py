"""Workload format: fixtures load, save round-trips, and every bad graph names its layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sparsedebug.core.errors import UserError
from sparsedebug.sources.workload.graph import check_graph
from sparsedebug.sources.workload.load import load_workload, parse_workload, revalidate
from sparsedebug.sources.workload.schema import Workload, dump_workload, save_workload
from tests.conftest import FIXTURES
from tests.support.builders import llama_stack, mlp_chain

WORKLOADS = FIXTURES / "workloads"


@pytest.mark.parametrize("name", ["llama_dense", "llama_2of4", "llama_2of4_regressed"])
def test_fixtures_load_and_share_one_graph(name: str) -> None:
    workload = load_workload(WORKLOADS / f"{name}.yaml")
    dense = load_workload(WORKLOADS / "llama_dense.yaml")
    assert workload.name == name
    # Same graph (names, ops, shapes, wiring) as the dense baseline: only intent and knobs differ.
    assert [(l.name, l.op, l.shape, l.inputs) for l in workload.layers] == [
        (l.name, l.op, l.shape, l.inputs) for l in dense.layers
    ]
    shapes = check_graph(workload)
    assert shapes[-1].out_width == 512


def test_regressed_fixture_differs_from_candidate_by_two_things() -> None:
    good = load_workload(WORKLOADS / "llama_2of4.yaml")
    bad = load_workload(WORKLOADS / "llama_2of4_regressed.yaml")
    assert good.conversion == "once" and bad.conversion == "per_call"
    changed = [b.name for g, b in zip(good.layers, bad.layers, strict=True) if g != b]
    assert changed == ["layers.1.mlp.down_proj"]
    assert bad.layer("layers.1.mlp.down_proj").dtype == "fp32"


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    workload = llama_stack("rt", blocks=1, hidden=64, ffn=96, heads=4, sequence=8, sparsity="16:2:4", budget_ms=3.5)
    out = tmp_path / "w.yaml"
    save_workload(workload, out)
    assert load_workload(out) == workload
    assert "shape: [96, 64]" in out.read_text()


def test_weights_path_shorthand() -> None:
    base = {"name": "a", "tokens": {"sequence": 4}, "layers": [{"name": "fc", "op": "linear", "shape": [8, 8]}]}
    short = Workload.model_validate({**base, "weights": "w.npz"})
    assert short.weights is not None and (short.weights.path, short.weights.strict) == ("w.npz", True)
    assert short.weights == Workload.model_validate({**base, "weights": {"path": "w.npz"}}).weights


def test_dtype_aliases_and_pattern_normalised() -> None:
    workload = Workload.model_validate(
        {
            "name": "a",
            "tokens": {"sequence": 4},
            "precision": "bfloat16",
            "layers": [{"name": "fc", "op": "linear", "shape": [8, 8], "sparsity": " 2 : 4 ", "dtype": "float16"}],
        }
    )
    assert workload.precision == "bf16"
    assert workload.layers[0].dtype == "fp16"
    assert workload.layers[0].sparsity == "2:4"
    assert workload.dtype_of(workload.layers[0]) == "fp16"


def _data(layers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": "bad", "tokens": {"sequence": 4}, "layers": layers, **extra}


@pytest.mark.parametrize(
    ("layers", "needles"),
    [
        ([{"name": "fc", "op": "conv2d", "shape": [8, 8]}], ["layers.0 (fc)", "op"]),
        (
            [{"name": "fc0", "op": "linear", "shape": [16, 8]}, {"name": "fc1", "op": "linear", "shape": [8, 12]}],
            ["fc1", "expects 12 input features", "'fc0' gives 16"],
        ),
        ([{"name": "fc", "op": "linear", "shape": [8, 6], "sparsity": "2:4"}], ["fc", "K=6 is not divisible by M=4"]),
        ([{"name": "fc", "op": "linear", "shape": [8, 8], "sparsity": "4:4"}], ["layers.0 (fc)", "sparsity"]),
        ([{"name": "fc", "op": "linear", "shape": [8, 8], "flavour": 1}], ["layers.0 (fc)", "flavour", "unknown field"]),
        (
            [{"name": "fc", "op": "linear", "shape": [8, 8]}, {"name": "fc", "op": "linear", "shape": [8, 8]}],
            ["'fc'", "duplicate"],
        ),
        ([{"name": "fc", "op": "linear", "shape": [8, 8], "inputs": ["nowhere"]}], ["'fc'", "'nowhere'"]),
        (
            [{"name": "n", "op": "norm", "shape": [8], "sparsity": "2:4"}],
            ["'n'", "no weight matrix"],
        ),
        (
            [{"name": "fc", "op": "linear", "shape": [8, 8]}, {"name": "a", "op": "activation", "fn": "softmax"}],
            ["'a'", "softmax"],
        ),
        (
            [
                {"name": "q", "op": "linear", "shape": [8, 8]},
                {"name": "att", "op": "attention", "shape": [8], "heads": 3, "inputs": ["q", "q", "q"]},
            ],
            ["'att'", "not divisible by heads 3"],
        ),
        (
            [
                {"name": "fc0", "op": "linear", "shape": [16, 8]},
                {"name": "fc1", "op": "linear", "shape": [8, 8], "inputs": ["input"]},
                {"name": "sum", "op": "elementwise", "fn": "add", "inputs": ["fc0", "fc1"]},
            ],
            ["'sum'", "different widths", "fc0=16", "fc1=8"],
        ),
    ],
)
def test_bad_graphs_name_the_layer(layers: list[dict[str, Any]], needles: list[str]) -> None:
    with pytest.raises(UserError) as info:
        parse_workload(_data(layers), "w.yaml")
    message = str(info.value)
    assert message.startswith("w.yaml: ")
    for needle in needles:
        assert needle in message, (needle, message)


def test_unknown_backend_and_top_level_field() -> None:
    layers = [{"name": "fc", "op": "linear", "shape": [8, 8]}]
    with pytest.raises(UserError, match="backend: .*unknown backend profile 'tpu'"):
        parse_workload(_data(layers, backend="tpu"), "w.yaml")
    with pytest.raises(UserError, match="w.yaml: repeatz: unknown field"):
        parse_workload(_data(layers, repeatz=3), "w.yaml")


def test_load_workload_reports_malformed_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(UserError, match="malformed YAML"):
        load_workload(bad)


def test_revalidate_catches_model_copy_mistakes() -> None:
    workload = mlp_chain("m", [8, 16, 8])
    layers = list(workload.layers)
    layers[-1] = layers[-1].model_copy(update={"shape": [8, 12]})
    broken = workload.model_copy(update={"layers": layers})
    with pytest.raises(UserError, match="'fc1'.*expects 12 input features"):
        revalidate(broken)
    assert revalidate(workload) == workload


def test_dump_is_plain_yaml_with_knobs() -> None:
    workload = mlp_chain("m", [8, 16, 8], conversion="per_call", threads=1)
    data = yaml.safe_load(dump_workload(workload))
    assert data["conversion"] == "per_call"
    assert data["threads"] == 1
    assert workload.knobs()["conversion"] == "per_call"
    assert workload.knobs()["threads"] == "1"


def test_launch_knob_defaults_to_eager_and_is_checked() -> None:
    from sparsedebug.sources.workload.load import parse_workload

    data = {"name": "w", "tokens": {"sequence": 4}, "layers": [{"name": "fc", "op": "linear", "shape": [8, 8]}]}
    workload = parse_workload(data, "w.yaml")
    assert workload.launch == "eager" and workload.knobs()["launch"] == "eager"
    assert parse_workload({**data, "launch": "cuda_graph"}, "w.yaml").launch == "cuda_graph"
    with pytest.raises(UserError, match="launch"):
        parse_workload({**data, "launch": "graph"}, "w.yaml")
