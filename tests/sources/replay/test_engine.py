"""One replay engine, two graph sources: a model workload's record has the fields a declared graph's has.

Both sources go through the same driver (noise-aware timing, percentiles, the SLA verdict, both clocks, the
shared equal-latency search); callers reach a workload's graph only through the GraphSource Protocol.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sparsedebug.records.classification import Fix
from sparsedebug.records.run import KernelPath, RunRecord
from sparsedebug.records.target import PredictReport
from sparsedebug.reduce.apply_fix import apply_fix
from sparsedebug.render.words.notes import say
from sparsedebug.sources.replay.checkpoint.source import CheckpointSource
from sparsedebug.sources.replay.protocol import GraphSource
from sparsedebug.sources.replay.replay import replay
from sparsedebug.sources.replay.sources import graph_source
from sparsedebug.sources.replay.synthetic.source import SyntheticSource
from sparsedebug.sources.target.model import LinearCall, OpCall
from sparsedebug.sources.workload.load import parse_workload
from sparsedebug.sources.workload.schema import Workload
from tests.conftest import invoke
from tests.sources.replay.model_workloads import candidate_fields, model_workload, tiny_models, write_workload
from tests.support.builders import llama_stack

PACKAGE = Path(__file__).resolve().parents[3] / "sparsedebug"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tiny_models(tmp_path_factory.mktemp("engine_models"))


def _model(tiny: dict[str, Path], kind: str = "bert", **fields: Any) -> Workload:
    data = model_workload(tiny[kind], tiny["text"], **candidate_fields(**fields))
    return parse_workload(data, "w.yaml")


def _declared(**fields: Any) -> Workload:
    base: dict[str, Any] = {
        "blocks": 1, "hidden": 64, "ffn": 96, "heads": 4, "sequence": 16, "repeats": 3, "warmup": 1,
        "backend": "h200-cusparselt", "precision": "fp16", "sparsity": "2:4",
    }
    base.update(fields)
    return llama_stack("tiny", **base)


def _set_fields(record: RunRecord) -> set[str]:
    """The dotted paths of every field the record sets (non-None), down to the stages' and outcome's own fields."""
    data = record.model_dump(mode="json")
    paths = {key for key, value in data.items() if value is not None}
    for stage in ("outcome", "schedule", "target"):
        if isinstance(data.get(stage), dict):
            paths |= {f"{stage}.{key}" for key, value in data[stage].items() if value is not None}
    eq = data["outcome"].get("equal_latency") or {}
    paths |= {f"outcome.equal_latency.{key}" for key, value in eq.items() if value is not None}
    return paths


def test_both_sources_are_graph_sources_picked_by_the_workload(tiny: dict[str, Path]) -> None:
    model, declared = graph_source(_model(tiny)), graph_source(_declared())
    assert isinstance(model, CheckpointSource) and isinstance(declared, SyntheticSource)
    sources: list[GraphSource] = [model, declared]
    assert [s.shrinkable for s in sources] == [False, True]
    assert model.label == f"model {tiny['bert']}" and declared.label == f"graph of {len(declared.workload.layers)} layers"
    assert model.layer_count() == 12 and model.model_file() is not None and declared.model_file() is None


@pytest.mark.parametrize("backend", ["h200-cusparselt", "cpu-numpy"])
def test_a_model_workload_record_has_the_fields_of_a_declared_one(tiny: dict[str, Path], backend: str) -> None:
    precision = "fp16" if backend == "h200-cusparselt" else "fp32"
    model = replay(_model(tiny, backend=backend, precision=precision))
    declared = replay(_declared(backend=backend, precision=precision))
    assert _set_fields(model) == _set_fields(declared)
    for run in (model, declared):
        out = run.outcome
        assert out.latency is not None and out.latency.n == 3 and out.latency.p50 <= out.latency.p95 <= out.latency.p99
        assert out.timing is not None and out.timing.rounds == 3 and [v.name for v in out.timing.variants] == ["candidate", "dense"]
        assert (out.effective_speedup is not None) == out.timing.stable
        assert len(run.schedule.busy_samples_ms) == 3 and set(run.schedule.layer_idle_samples_ms) <= {g.name for g in run.graph.layers}
        eq = out.equal_latency
        assert eq is not None
        if backend == "cpu-numpy":
            assert run.target is None and eq.clock == "this_machine" and eq.cross_check is None
        else:
            assert run.target is not None and eq.clock == "target"
            assert eq.cross_check is not None and eq.cross_check.clock == "this_machine"
    assert model.outcome.equal_latency is not None and model.outcome.equal_latency.importance is not None
    assert "calibration tokens" in say(model.outcome.equal_latency.importance)
    assert declared.outcome.equal_latency is not None and declared.outcome.equal_latency.importance is not None
    assert "weight magnitude" in say(declared.outcome.equal_latency.importance)


def test_the_target_clock_of_a_model_workload_per_layer_and_per_forward(tiny: dict[str, Path]) -> None:
    run = replay(_model(tiny, backend="h200-cusparselt", precision="fp16"))
    target = run.target
    assert target is not None and target.backend == "h200-cusparselt" and target.tokens == 32
    projected = {layer.name: layer for layer in target.layers}
    linears = [layer.name for layer in run.graph.layers]
    assert set(linears) <= set(projected)  # every linear, plus the ops between them
    shapes = {(tuple(layer.weight_shape or ()), layer.dtype) for layer in run.graph.layers}
    assert len(target.break_even) == len(shapes) and all(len(b.shape) == 2 for b in target.break_even)  # per linear shape
    ops = [layer for layer in target.layers if layer.name not in set(linears)]
    assert {layer.op for layer in ops} == {"attention", "elementwise", "norm", "activation"} and all(o.basis == "estimate" for o in ops)
    lowered = {layer.name: layer.path for layer in run.lower.layers}
    assert all(projected[name].path == lowered[name].value for name in linears)
    assert any(lowered[name] is KernelPath.SPARSE for name in linears)
    fwd = target.forward
    assert fwd.dense is not None and fwd.candidate is not None and fwd.speedup == pytest.approx(fwd.dense.total_ms / fwd.candidate.total_ms)
    eq = run.outcome.equal_latency
    assert eq is not None and eq.candidate_latency_ms == pytest.approx(fwd.candidate.total_ms)
    # tiny shapes, eager: every sparse linear pays the per-call host cost on the target and is flagged
    flagged = {lo.name for lo in run.lower.layers if lo.slower_on_target is not None}
    assert flagged == {name for name in linears if lowered[name] is KernelPath.SPARSE}


def test_the_narrowed_model_is_projected_narrower_on_the_target(tiny: dict[str, Path]) -> None:
    source = graph_source(_model(tiny, backend="h200-cusparselt", precision="fp16", tokens={"batch": 4, "sequence": 64}))
    full = {c.name: c for c in source.target_calls(paths={})}
    assert all(c.path == "dense" for c in full.values() if isinstance(c, LinearCall))
    mlp = [c for c in full.values() if isinstance(c, LinearCall) and "intermediate" in c.name]
    assert mlp and all(c.tokens == 256 for c in mlp)
    at = {c.name: c for c in source.target_calls(tokens=4096)}
    assert {c.tokens for c in at.values()} == {4096}
    attention = [c for c in at.values() if isinstance(c, OpCall) and c.op == "attention"]
    assert attention and all(c.flops > full[c.name].flops for c in attention)  # longer sequences


def test_predict_on_a_model_workload(tiny: dict[str, Path], tmp_path: Path) -> None:
    data = model_workload(tiny["bert"], tiny["text"], **candidate_fields(backend="h200-cusparselt", precision="fp16"))
    path = write_workload(tmp_path / "tiny.yaml", data)
    result = invoke(["predict", str(path), "--tokens", "16,4096", "--all", "--json"])
    assert result.exit_code == 0, result.stderr
    report = PredictReport.model_validate(json.loads(result.stdout))
    assert report.workload == "tiny_2of4" and [r.tokens for r in report.results] == [16, 4096]
    names = {layer.name for layer in report.results[0].layers}
    assert "encoder.layer.0.intermediate.dense" in names and "block.0.attention" in names
    sparse = {layer.name for layer in report.results[0].layers if layer.path == "sparse"}
    assert sparse == {f"encoder.layer.{b}.{n}.dense" for b in (0, 1) for n in ("intermediate", "output")}
    assert all(r.forward.dense is not None for r in report.results) and report.break_even
    table = invoke(["predict", str(path), "--tokens", "2048"])
    assert table.exit_code == 0 and "encoder.layer.1" in table.stdout and "whole forward (target clock, projected" in table.stdout


def test_a_layer_fix_goes_through_the_graph_source(tiny: dict[str, Path]) -> None:
    fix = Fix(kind="layer", layer="encoder.layer.1.output.dense", action="exclude", code="exclude_layer", metric="latency_p50_ms", direction="down", rule="r")
    new, how = apply_fix(_model(tiny), fix)
    assert new is not None and say(how).startswith("encoder.layer.1.output.dense: sparsity 2:4 -> dense")
    block = fix.model_copy(update={"kind": "block", "value": 64})
    assert apply_fix(_model(tiny), block)[0] is None
    declared, text = apply_fix(_declared(), fix.model_copy(update={"layer": "layers.0.mlp.down_proj"}))
    assert declared is not None and "layers.0.mlp.down_proj: sparsity 2:4 -> dense" in say(text)


def test_nothing_outside_the_graph_sources_asks_what_kind_of_workload_it_holds() -> None:
    """The checkpoint source answers the question (``holds``); the loader tells the kinds apart on reading."""
    allowed = (PACKAGE / "sources" / "replay" / "checkpoint", PACKAGE / "sources" / "workload" / "load.py")
    asking = re.compile(r"\.model is (not )?None|\bis_model\b|isinstance\([^)]*ModelRef")
    hits = []
    for path in PACKAGE.rglob("*.py"):
        if any(path == a or a in path.parents for a in allowed):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if asking.search(line):
                hits.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert hits == []
