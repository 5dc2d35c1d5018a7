"""The comparability check (issue 25): decided from layer shapes and device properties, never from names."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.locate.comparable import NotComparableError, check_pair, device_of, require_comparable
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.run import RunRecord
from sparsedebug.render.words.locate_text import refusal_text, verdict_text
from sparsedebug.render.words.notes import say
from sparsedebug.sources.importers.trace.importer import import_trace
from tests.support.tracegen import TraceSpec, generate, read_doc, strip, write_doc

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "h200"


def _trace(tmp_path: Path, name: str, doc: dict[str, Any] | list[Any]) -> RunRecord:
    path = tmp_path / f"{name}.json"
    write_doc(path, doc)
    return import_trace(path)


def _gen(tmp_path: Path, name: str, **fields: Any) -> RunRecord:
    doc, _ = generate(TraceSpec(**fields))
    return _trace(tmp_path, name, doc)


@pytest.fixture(scope="module")
def dense() -> RunRecord:
    return import_trace(H200 / "trace_dense_T2048.json.gz")


@pytest.fixture(scope="module")
def dense_doc() -> dict[str, Any]:
    return read_doc(H200 / "trace_dense_T2048.json.gz")


@pytest.mark.parametrize("source", ["trace_dense_T2048", "trace_sparse_mlp_T2048"])
def test_annotated_trace_and_its_stripped_copy_compare_as_equal(tmp_path: Path, source: str) -> None:
    annotated = import_trace(H200 / f"{source}.json.gz")
    stripped = _trace(tmp_path, "stripped", strip(read_doc(H200 / f"{source}.json.gz"), "no_annotations"))
    assert len(stripped.graph.layers) > len(annotated.graph.layers)  # 112 op layers against 44 annotated ones
    for base, cand in ((annotated, stripped), (stripped, annotated)):
        pair = require_comparable(base, cand)
        match = pair.check.layers
        assert match.matched == match.base_layers == match.cand_layers == len(annotated.graph.layers)
        assert match.merged is not None and "op for op" in say(match.merged)
        assert [g.name for g in pair.base.graph.layers] == [g.name for g in pair.cand.graph.layers]
        result = bisect_runs(pair.base, pair.cand)
        assert result.stage("graph").status == "same" and result.stage("lower").status == "same"
        # 3 iterations a side: too few for the one rule (core.judgement) to judge the forward, however alike
        assert result.state == "undecided" and result.stage("outcome").status == "undecided", verdict_text(result)
        assert "6 a side needed" in verdict_text(result) and "timings unstable" not in verdict_text(result)


def test_stripped_candidate_keeps_the_verdict_of_the_annotated_one(tmp_path: Path, dense: RunRecord) -> None:
    sparse = import_trace(H200 / "trace_sparse_mlp_T2048.json.gz")
    stripped = _trace(tmp_path, "sparse_stripped", strip(read_doc(H200 / "trace_sparse_mlp_T2048.json.gz"), "no_annotations"))
    annotated = bisect_runs(*(lambda p: (p.base, p.cand))(require_comparable(dense, sparse)))
    pair = require_comparable(dense, stripped)
    merged = bisect_runs(pair.base, pair.cand)
    assert (merged.state, merged.first_stage) == (annotated.state, annotated.first_stage) == ("divergence", "schedule")


def test_renamed_copy_is_compared_and_same_names_other_shapes_refused(dense: RunRecord) -> None:
    renamed = dense.model_copy(deep=True)
    names = {g.name: f"blk{i}.op" for i, g in enumerate(renamed.graph.layers)}
    for stage in (renamed.graph.layers, renamed.lower.layers, renamed.kernel.layers):
        for layer in stage:
            layer.name = names[layer.name]
    pair = require_comparable(dense, renamed)
    assert pair.check.layers.share == 1.0 and pair.check.layers.renamed == len(names)
    copy = bisect_runs(pair.base, pair.cand)
    assert copy.state == "undecided" and [s.stage for s in copy.stages if s.status == "undecided"] == ["outcome"]
    reshaped = dense.model_copy(deep=True)  # the same names, every linear of another width
    for g in reshaped.graph.layers:
        if g.weight_shape:
            g.weight_shape = [d // 2 for d in g.weight_shape]
        if g.input_shape:
            g.input_shape = [*g.input_shape[:-1], g.input_shape[-1] // 2]
    check = check_pair(dense, reshaped).check
    assert not check.comparable and [d.dimension for d in check.differences] == ["model"]
    with pytest.raises(NotComparableError, match=r"not comparable: model: 44 layers vs 44 layers \(\d+ of 44 layers match .*--allow-different model") as refused:
        require_comparable(dense, reshaped)
    assert isinstance(refused.value, UserError) and refused.value.check == check
    assert re.search(r"not comparable: model: \d+ of 44 layers match by op and shape .*--allow-different model", refusal_text(check))
    assert require_comparable(dense, reshaped, ["model"]).check.allowed == ["model"]


def test_a_few_changed_layers_are_a_finding_not_a_refusal(dense: RunRecord) -> None:
    changed = dense.model_copy(deep=True)
    changed.graph.layers[7].weight_shape = [11264, 4096]  # one layer padded
    check = require_comparable(dense, changed).check
    assert check.comparable and any(say(note).startswith("layers changed: 43 of 44") for note in check.notes)
    assert "layers.0.mlp.gate_proj" in " ".join(say(n) for n in check.notes)


def test_device_from_properties(tmp_path: Path, dense: RunRecord, dense_doc: dict[str, Any]) -> None:
    assert device_of(dense).label() == "cuda:NVIDIA H200 (sm 9.0, 132 SMs, 140 GiB)"
    a100 = copy.deepcopy(dense_doc)
    a100["deviceProperties"] = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "numSms": 108, "totalGlobalMem": 85_899_345_920}]
    other = _trace(tmp_path, "a100", a100)
    check = check_pair(dense, other).check
    assert [d.dimension for d in check.differences] == ["device"]
    assert "compute capability 9.0 vs 8.0" in say(check.differences[0].facts) and "132 vs 108 multiprocessors" in say(check.differences[0].facts)
    renamed_gpu = copy.deepcopy(dense_doc)  # the same properties under another name: the same device
    renamed_gpu["deviceProperties"][0]["name"] = "H200 (lab box 3)"
    assert check_pair(dense, _trace(tmp_path, "renamed_gpu", renamed_gpu)).check.comparable


def test_rocm_trace_is_named_rocm_and_differs_from_cuda(tmp_path: Path, dense: RunRecord, dense_doc: dict[str, Any]) -> None:
    rocm = copy.deepcopy(dense_doc)
    rocm["deviceProperties"] = [{"id": 0, "name": "AMD Radeon Graphics", "computeMajor": 9, "computeMinor": 0, "numSms": 104, "warpSize": 64, "totalGlobalMem": 68_702_699_520}]
    for event in rocm["traceEvents"]:
        if event.get("cat") == "cuda_runtime" and str(event.get("name", "")).startswith("cuda"):
            event["name"] = "hip" + event["name"][4:]
    run = _trace(tmp_path, "rocm", rocm)
    assert run.lower.backend == "rocm:AMD Radeon Graphics" and run.device is not None and run.device.vendor == "AMD"
    check = check_pair(dense, run).check
    assert [d.dimension for d in check.differences] == ["device"] and "cuda:NVIDIA H200" in say(check.differences[0].facts)
    assert "rocm:AMD Radeon Graphics" in say(check.differences[0].facts)


def test_h200_trace_against_a_cpu_replay_is_a_device_difference(dense: RunRecord) -> None:
    replayed = dense.model_copy(update={"device": None, "source": dense.source.model_copy(update={"kind": "replay"})})
    check = check_pair(dense, replayed).check
    assert [d.dimension for d in check.differences] == ["device"] and "CPU replay" in say(check.differences[0].facts)


def test_phase_tokens_and_dtype(tmp_path: Path) -> None:
    train = _gen(tmp_path, "train")
    infer = _gen(tmp_path, "infer", backward=False, optimizer=False, nccl=False)
    check = check_pair(train, infer).check
    assert [d.dimension for d in check.differences] == ["phase"]
    assert say(check.differences[0].facts) == "training step vs inference"
    longer = _gen(tmp_path, "longer", tokens=8192)
    tokens = check_pair(train, longer).check
    assert [d.dimension for d in tokens.differences] == ["tokens"] and "4096 vs 8192 tokens per call (x2)" in say(tokens.differences[0].facts)
    fp32 = train.model_copy(deep=True)
    for g in fp32.graph.layers:
        g.dtype = "fp32"
    whole = check_pair(train, fp32).check
    assert [d.dimension for d in whole.differences] == ["dtype"] and "fp16 vs fp32" in say(whole.differences[0].facts)
    one = train.model_copy(deep=True)
    next(g for g in one.graph.layers if g.weight_shape).dtype = "fp32"
    assert check_pair(train, one).check.comparable  # one layer left in fp32 is the regression, reported as a note
    assert any(say(n).startswith("dtype changed on 1 layer(s)") for n in check_pair(train, one).check.notes)


def test_peer_traces_of_one_job_give_a_verdict(tmp_path: Path) -> None:
    rank0 = _gen(tmp_path, "rank0", seed=0)
    rank1 = _gen(tmp_path, "rank1", seed=1)  # another rank (or steps) of the same job: its own jitter
    pair = require_comparable(rank0, rank1)
    assert pair.check.comparable and pair.check.layers.share == 1.0
    assert bisect_runs(pair.base, pair.cand).state in ("no_regression", "divergence", "undecided")
    unrelated = import_trace(H200 / "trace_dense_T2048.json.gz")
    check = check_pair(unrelated, rank0).check
    assert {d.dimension for d in check.differences} == {"model", "phase", "tokens"}
    assert refusal_text(check).count("\n") == 0
