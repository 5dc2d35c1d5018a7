"""Step 4 on model workloads: the fix rewrites a layer's entry, reduce keeps the checkpoint whole and halves tokens."""

from __future__ import annotations

from typing import Any

import pytest

from sparsedebug.records.classification import Fix
from sparsedebug.reduce.apply_fix import apply_fix
from sparsedebug.reduce.reduce import reduce_workloads
from sparsedebug.render.words.core import reduce_verdict
from sparsedebug.render.words.notes import say
from sparsedebug.sources.replay.checkpoint.workload import open_model, resolve_layers
from sparsedebug.sources.workload.load import parse_workload
from sparsedebug.sources.workload.schema import Workload
from tests.sources.replay.model_workloads import candidate_fields, model_workload, tiny_models

FP32_ENTRY = {"name": "encoder.layer.1.output.dense", "dtype": "fp32", "sparsity": "2:4"}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workload, Workload]:
    """Dense fp16 baseline and a 2:4 candidate on the H200 profile with one fp32 layer and per-call conversion."""
    tiny = tiny_models(tmp_path_factory.mktemp("reduce"))
    common: dict[str, Any] = {"backend": "h200-cusparselt", "precision": "fp16"}
    good = parse_workload(model_workload(tiny["bert"], tiny["text"], name="dense", **common), "good.yaml")
    bad_fields = candidate_fields(name="regressed", layers=[FP32_ENTRY], conversion="per_call", **common)
    bad = parse_workload(model_workload(tiny["bert"], tiny["text"], **bad_fields), "bad.yaml")
    return good, bad


def intent(workload: Workload, name: str) -> tuple[str, str]:
    layers = resolve_layers(workload, open_model(workload.model).model.linears)  # type: ignore[arg-type]
    layer = next(layer for layer in layers if layer.name == name)
    return layer.sparsity, layer.dtype


def fix(**fields: Any) -> Fix:
    return Fix(metric="latency_p50_ms", direction="down", rule="r", **fields)


def test_layer_fixes_rewrite_the_entry_and_keep_the_rest_of_its_intent(pair: tuple[Workload, Workload]) -> None:
    _, bad = pair
    cast, how = apply_fix(bad, fix(kind="layer", layer="encoder.layer.1.output.dense", action="cast", value="fp16"))
    assert cast is not None and say(how) == "encoder.layer.1.output.dense: dtype fp32 -> fp16"
    assert intent(cast, "encoder.layer.1.output.dense") == ("2:4", "fp16")
    excluded, how = apply_fix(bad, fix(kind="layer", layer="encoder.layer.0.intermediate.dense.weight", action="exclude"))
    assert excluded is not None and "sparsity 2:4 -> dense (excluded)" in say(how)
    assert intent(excluded, "encoder.layer.0.intermediate.dense") == ("dense", "fp16")
    assert intent(excluded, "encoder.layer.1.output.dense") == ("2:4", "fp32")
    assert intent(excluded, "encoder.layer.1.intermediate.dense") == ("2:4", "fp16")
    padded, how = apply_fix(bad, fix(kind="layer", layer="encoder.layer.1.output.dense", action="pad"))
    assert padded is None and "a checkpoint's shapes are fixed" in say(how)
    blocked, how = apply_fix(bad, fix(kind="block", value=64))
    assert blocked is None and "set pruning.pattern instead" in say(how)
    once, how = apply_fix(bad, fix(kind="knob", knob="conversion", value="once"))
    assert once is not None and once.conversion == "once" and say(how) == "conversion per_call -> once"


def test_reduce_keeps_the_checkpoint_whole_and_finds_the_fp32_entry(pair: tuple[Workload, Workload]) -> None:
    good, bad = pair
    reduction = reduce_workloads(good, bad, probe_repeats=3)
    result = reduction.record
    assert result.reproduced and result.target_stage == "lower" and result.target_finding == "fallback:dtype_unsupported"
    assert [change.key for change in result.kept] == ["layer:encoder.layer.1.output.dense"]
    assert result.layers_before == 12 and result.layers_after == 12
    assert result.tokens_after is not None and result.tokens_after < result.tokens_before
    assert result.graph_source is not None and result.graph_source.startswith("model ")
    assert "kept whole" in reduce_verdict(result)
    assert reduction.repro is not None and reduction.repro.model is not None and result.confirmation is not None
    assert result.confirmation.first_stage == "lower"
    assert {c.finding for c in result.other_causes} == {"per_call_conversion"}


@pytest.mark.parametrize("members", [
    ["encoder.layer.1.intermediate.dense", "encoder.layer.1.output.dense"],  # one block's FFN
    ["encoder.layer.0.intermediate.dense", "encoder.layer.1.intermediate.dense"],  # a projection of every block
])
def test_a_fix_on_a_checkpoint_set_rewrites_every_entry_or_none(tmp_path_factory: pytest.TempPathFactory, members: list[str]) -> None:
    """Layers left fp32 in one or every block (the rest 2:4 in fp16): the fix casts all of them, each one's entry rewritten."""
    from sparsedebug.classify.score import classify_run
    from tests.reduce.test_fix_set import _static

    tiny = tiny_models(tmp_path_factory.mktemp("set"))
    common: dict[str, Any] = {"backend": "h200-cusparselt", "precision": "fp16"}
    entries = [{"name": name, "dtype": "fp32", "sparsity": "2:4"} for name in members]
    good = parse_workload(model_workload(tiny["bert"], tiny["text"], **candidate_fields(name="good", **common)), "good.yaml")
    bad = parse_workload(model_workload(tiny["bert"], tiny["text"], **candidate_fields(name="bad", layers=entries, **common)), "bad.yaml")
    proposed = classify_run(_static(bad), baseline=_static(good)).fix
    assert proposed is not None and proposed.action == "cast" and [t.layers for t in proposed.targets] == [members]
    cast, how = apply_fix(bad, proposed)
    assert cast is not None and how.code == "targets.fix_set" and how.values["layers"] == members
    assert [intent(cast, name) for name in members] == [("2:4", "fp16")] * len(members)
    lower = {lo.name: lo for lo in _static(cast).lower.layers}
    assert [lower[name].path.value for name in members] == ["sparse"] * len(members)
    padded, why = apply_fix(bad, proposed.model_copy(update={"action": "pad", "value": None}))
    assert padded is None and why.code == "targets.fix_set_refused" and why.values["why_code"] == "targets.fix_pad_checkpoint"
