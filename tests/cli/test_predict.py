"""`sparsedebug predict` through the CLI: the done criteria, JSON, tables, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.records.notes import Note
from sparsedebug.records.target import PredictReport
from sparsedebug.render.words.notes import say_all
from tests.conftest import FIXTURES, assert_clean_error, invoke

SHAPES = ["4096x4096", "11008x4096", "4096x11008", "8192x8192", "28672x8192"]


def _shape_args(shapes: list[str]) -> list[str]:
    return [arg for shape in shapes for arg in ("--shape", shape)]


def test_loses_at_16_and_wins_at_8192_on_the_large_shapes_with_provenance() -> None:
    result = invoke(["predict", *_shape_args(SHAPES), "--tokens", "16,8192", "--json"])
    assert result.exit_code == 0, result.stderr
    report = PredictReport.model_validate(json.loads(result.stdout))
    assert report.clock == "target" and report.backend == "h200-cusparselt" and report.launch == "eager"
    at16, at8192 = report.results
    assert at16.tokens == 16 and at8192.tokens == 8192
    for layer in at16.layers:
        assert layer.speedup is not None and layer.speedup < 1.0, layer.name
        assert layer.sparse is not None and layer.sparse.host.sources
    wins = {layer.name for layer in at8192.layers if layer.speedup is not None and layer.speedup > 1.0}
    assert wins >= {"11008x4096", "8192x8192", "28672x8192"}
    for layer in at8192.layers:
        assert layer.dense is not None and any("results.json gemm[" in s for s in layer.dense.gpu.sources)
    assert len(report.break_even) == 5
    assert {tuple(b.shape) for b in report.break_even if b.tokens_from is not None} >= {(11008, 4096), (28672, 8192)}


@pytest.mark.parametrize("tokens", ["16", "128"])
def test_cuda_graph_on_the_mlp_shapes_at_few_tokens_loses_or_is_uncertain(tokens: str) -> None:
    mlp = ["11008x4096", "4096x11008", "14336x4096", "4096x14336", "28672x8192"]
    result = invoke(["predict", *_shape_args(mlp), "--tokens", tokens, "--launch", "cuda_graph", "--json"])
    assert result.exit_code == 0, result.stderr
    report = PredictReport.model_validate(json.loads(result.stdout))
    for layer in report.results[0].layers:
        assert layer.verdict in ("sparse loses", "uncertain here"), (layer.name, layer.speedup_low, layer.speedup_high)
    for even in report.break_even:
        assert even.tokens_from is None or even.tokens_from > int(tokens)
    text = invoke(["predict", "--shape", "11008x4096", "--tokens", tokens, "--launch", "cuda_graph"]).stdout
    assert "uncertain here: 11008x4096: measure 11008x4096 at" in text and "pays off from 1 tokens" not in text


def test_cuda_graph_at_8192_tokens_wins_on_the_measured_large_shapes() -> None:
    result = invoke(["predict", "--shape", "11008x4096", "--shape", "28672x8192", "--tokens", "8192", "--launch", "cuda_graph", "--json"])
    report = PredictReport.model_validate(json.loads(result.stdout))
    assert [layer.verdict for layer in report.results[0].layers] == ["sparse wins", "sparse wins"]


def test_table_names_the_target_clock_and_the_basis() -> None:
    result = invoke(["predict", "--shape", "11008x4096", "--shape", "4096x4096:dense", "--tokens", "2048"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "target clock: h200-cusparselt (NVIDIA H200 SXM), eager, projected" in out
    assert "11008x4096" in out and "4096x4096:dense" in out and "2:4 pays off from" in out
    assert "whole forward (target clock, projected, eager)" in out
    assert "measured" in out or "interpolated" in out


def test_cuda_graph_drops_the_host_cost() -> None:
    eager = json.loads(invoke(["predict", "--shape", "11008x4096", "--tokens", "2048", "--json"]).stdout)
    graph = json.loads(invoke(["predict", "--shape", "11008x4096", "--tokens", "2048", "--launch", "cuda_graph", "--json"]).stdout)
    e, g = eager["results"][0]["layers"][0], graph["results"][0]["layers"][0]
    assert e["sparse"]["host_ms"] > 0.3 and g["sparse"]["host_ms"] == 0.0
    assert e["speedup"] < 1.0 < g["speedup"]
    assert e["verdict"] == "sparse loses" and g["verdict"] == "sparse wins" and g["speedup_low"] > 1.0


def test_workload_argument_lowers_on_its_backend_and_totals() -> None:
    path = FIXTURES / "targets" / "h200_llama_sparse_mlp.yaml"
    result = invoke(["predict", str(path), "--tokens", "2048", "--all", "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["workload"] == "h200_llama_sparse_mlp"
    layers = data["results"][0]["layers"]
    assert len(layers) == 56 and sum(1 for layer in layers if layer["path"] == "sparse") == 12
    assert {layer["basis"] for layer in layers if layer["op"] != "linear"} == {"estimate"}
    forward = data["results"][0]["forward"]
    assert forward["candidate"]["total_ms"] > forward["dense"]["total_ms"]  # eager: the host cost per sparse call
    graph = json.loads(invoke(["predict", str(path), "--tokens", "2048", "--launch", "cuda_graph", "--json"]).stdout)
    assert graph["results"][0]["forward"]["speedup"] > 1.0


def test_cutlass_has_no_sparse_path() -> None:
    result = invoke(["predict", "--shape", "11008x4096", "--tokens", "8192", "--backend", "h200-cutlass", "--json"])
    assert result.exit_code == 0, result.stderr
    layer = json.loads(result.stdout)["results"][0]["layers"][0]
    assert layer["sparse"] is None and layer["path"] == "dense"
    notes = [Note.model_validate(n) for n in layer["notes"]]
    assert "targets.sparse_raises" in [n.code for n in notes] and "compute capability 8.x" in say_all(notes)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--shape", "11008x4096"], "--tokens: required"),
        (["--tokens", "16"], "give a WORKLOAD or at least one --shape"),
        (["--shape", "11008x4096:half", "--tokens", "16"], "the suffix must be :dense or :sparse"),
        (["--shape", "11008", "--tokens", "16"], "expected OUTxIN"),
        (["--shape", "11008x4096", "--tokens", "16,x"], "is not a positive integer"),
        (["--shape", "11008x4096", "--tokens", "16", "--launch", "graph"], "--launch 'graph'"),
        (["--shape", "11008x4096", "--tokens", "16", "--backend", "cpu-numpy"], "has no target cost model"),
        (["--shape", "11008x4096", "--tokens", "16", "--backend", "a100"], "backend profile 'a100': unknown"),
        (["--shape", "11008x4096", "--tokens", "16", "--dtype", "fp7"], "dtype 'fp7'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    assert_clean_error(invoke(["predict", *args]), 2, needle)


def test_missing_workload_file(tmp_path: Path) -> None:
    assert_clean_error(invoke(["predict", str(tmp_path / "none.yaml"), "--tokens", "16"]), 2, "none.yaml")
