"""Model workloads on tiny real-format checkpoints: layers, lowering, kernels in the forward, the five stages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sparsedebug.core.dtypes import unit_roundoff
from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import check_compliance, parse_pattern
from sparsedebug.kernels.pruning import magnitude_prune
from sparsedebug.records.run import FallbackReason, KernelPath
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.text import python_version
from sparsedebug.sources.replay.checkpoint.kernels import candidate_kernels, dense_kernels
from sparsedebug.sources.replay.checkpoint.workload import open_model, resolve_layers
from sparsedebug.sources.replay.replay import plan, replay
from sparsedebug.sources.workload.load import parse_workload
from sparsedebug.sources.workload.schema import Workload
from tests.sources.replay.model_workloads import candidate_fields, model_workload, tiny_models


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tiny_models(tmp_path_factory.mktemp("models"))


def workload(tiny: dict[str, Path], kind: str = "bert", **fields: Any) -> Workload:
    return parse_workload(model_workload(tiny[kind], tiny["text"], **fields), "w.yaml")


def test_layers_are_the_checkpoints_linears_with_the_pruning_block_then_entries(tiny: dict[str, Path]) -> None:
    wl = workload(tiny, **candidate_fields(layers=[
        {"name": "encoder.layer.1.output.dense", "dtype": "fp16"},  # an entry is the whole declaration: dense here
        {"name": "encoder.layer.0.attention.self.query.weight", "sparsity": "2:4"},
    ]))  # fmt: skip
    loaded = open_model(wl.model)  # type: ignore[arg-type]
    layers = {layer.name: layer for layer in resolve_layers(wl, loaded.model.linears)}
    assert list(layers) == list(loaded.model.linears) and len(layers) == 12
    assert layers["encoder.layer.0.intermediate.dense"].sparsity == "2:4"
    assert layers["encoder.layer.0.attention.self.key"].sparsity == "dense"
    assert layers["encoder.layer.0.attention.self.query"].sparsity == "2:4"
    assert (layers["encoder.layer.1.output.dense"].sparsity, layers["encoder.layer.1.output.dense"].dtype) == ("dense", "fp16")
    bad = workload(tiny, layers=[{"name": "encoder.layer.9.output.dense"}])
    with pytest.raises(UserError, match="layer 'encoder.layer.9.output.dense': model .* has no linear of that name"):
        resolve_layers(bad, loaded.model.linears)
    glob = workload(tiny, pruning={"method": "magnitude", "pattern": "2:4", "layers": "blk.*"})
    with pytest.raises(UserError, match="pruning.layers: .*'blk.\\*' matches no linear layer"):
        resolve_layers(glob, loaded.model.linears)


def test_lowering_sees_the_checkpoints_names_dtypes_and_compliance(tiny: dict[str, Path]) -> None:
    entry = {"name": "encoder.layer.1.output.dense", "dtype": "fp32", "sparsity": "2:4"}
    wl = workload(tiny, backend="h200-cusparselt", precision="fp16", **candidate_fields(layers=[entry]))
    graph, lower = plan(wl)
    by_name = {layer.name: layer for layer in lower.layers}
    assert [g.name for g in graph.layers] == list(by_name)
    assert by_name["encoder.layer.1.output.dense"].reason is FallbackReason.DTYPE_UNSUPPORTED
    assert by_name["encoder.layer.0.output.dense"].path is KernelPath.SPARSE
    assert by_name["encoder.layer.0.attention.self.query"].reason is FallbackReason.INTENDED_DENSE
    graph_row = next(g for g in graph.layers if g.name == "encoder.layer.0.intermediate.dense")
    assert graph_row.weight_shape == [64, 32] and graph_row.flops == 2.0 * 64 * 32 * 32 and graph_row.intended == "2:4"
    # Weights taken as they are (method none): the dense checkpoint does not comply with the declared pattern.
    unpruned = workload(tiny, pruning={"method": "none", "pattern": "2:4", "layers": "mlp"})
    _, lower = plan(unpruned)
    assert {lo.reason for lo in lower.layers if lo.name.endswith("intermediate.dense")} == {FallbackReason.PATTERN_NOT_COMPLIANT}


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_sparse_kernels_in_the_forward_compute_what_the_pruned_dense_model_does(tiny: dict[str, Path], precision: str) -> None:
    """Every linear on the N:M kernel gives the hidden states of plain products of the same rounded pruned weights.

    Only the order of fp32 accumulation differs; at fp16/bf16 that can move a later layer's input across a
    rounding boundary, so the whole forward agrees to a few units of the input format's roundoff.
    """
    roundoff = unit_roundoff(precision)
    assert roundoff is not None
    rtol = 1e-5 if precision == "fp32" else 8 * roundoff
    loaded = open_model(workload(tiny).model)  # type: ignore[arg-type]
    model = loaded.model
    pattern = parse_pattern("2:4")
    pruned = {name: magnitude_prune(model.weight(name), pattern) for name in model.linears}
    precisions: dict[str, Any] = dict.fromkeys(pruned, precision)
    batch = Batch.of([list(range(5, 20)), list(range(30, 41))])
    sparse = model.hidden(batch, candidate_kernels(pruned, precisions, dict.fromkeys(pruned, pattern), per_call=True))
    dense = model.hidden(batch, dense_kernels(pruned, precisions))
    np.testing.assert_allclose(sparse, dense, rtol=rtol, atol=rtol * float(np.abs(dense).max()))
    if precision == "fp32":
        np.testing.assert_allclose(dense, model.hidden(batch, pruned), rtol=1e-5, atol=1e-5)


def test_replay_of_a_pruned_encoder_records_five_stages_from_the_real_forward(tiny: dict[str, Path]) -> None:
    wl = workload(tiny, conversion="per_call", **candidate_fields())
    run = replay(wl)
    names = [g.name for g in run.graph.layers]
    assert names[0] == "encoder.layer.0.attention.self.query" and len(names) == 12
    assert [k.name for k in run.kernel.layers] == names == [lo.name for lo in run.lower.layers]
    sparse = [lo for lo in run.lower.layers if lo.path is KernelPath.SPARSE]
    assert {lo.name.split(".", 3)[-1] for lo in sparse} == {"intermediate.dense", "output.dense"}
    assert all(lo.conversions_per_call == 1 and lo.conversion_ms is not None and lo.metadata_bytes for lo in sparse)
    for k in run.kernel.layers:
        assert len(k.samples_ms) == 3 and k.dense_samples_ms is not None and k.rel_err is not None and k.rel_err < 1e-5
    assert len(run.schedule.span_samples_ms) == 3 and set(run.schedule.layer_idle_samples_ms) == set(names)
    assert run.schedule.launches_per_iteration == 12 + len(sparse)
    assert all(b <= s for b, s in zip(run.schedule.busy_samples_ms, run.schedule.span_samples_ms, strict=True))
    q = run.outcome.quality
    assert q is not None and q.evidence is not None and 0.0 < q.cosine < 1.0
    assert q.cosine_min is not None and q.cosine_min <= q.cosine and q.neighbour_agreement is not None
    ev = q.evidence
    assert (ev.text, ev.python_version, ev.unit) == (str(tiny["text"]), python_version(), "sentence")
    assert ev.tokens >= 32 and ev.units >= 3
    knobs = run.workload.knobs if run.workload else {}
    assert knobs["pruning.method"] == "wanda" and knobs["pruning.calibration"] == str(tiny["text"])
    assert knobs["pruning.calibration_units"].endswith(" sentences") and knobs["pruning.calibration_python"] == python_version()
    assert run.outcome.equal_latency is not None
    # Same workload, same numbers: pruning and quality are a pure function of it.
    again = replay(wl)
    assert again.outcome.quality == q
    assert [k.rel_err for k in again.kernel.layers] == [k.rel_err for k in run.kernel.layers]


def test_pruned_weights_comply_and_a_dense_workload_matches_the_dense_model(tiny: dict[str, Path]) -> None:
    dense = replay(workload(tiny))
    q = dense.outcome.quality
    assert q is not None and q.cosine == pytest.approx(1.0, abs=1e-6) and q.neighbour_agreement == 1.0
    assert all(lo.path is KernelPath.DENSE for lo in dense.lower.layers)
    wl = workload(tiny, **candidate_fields(pruning={"method": "sparsegpt", "pattern": "2:4", "layers": "all"}))
    from sparsedebug.sources.replay.checkpoint.data import model_data
    from sparsedebug.sources.replay.checkpoint.prune import ModelCache, pruned_weights

    loaded = open_model(wl.model)  # type: ignore[arg-type]
    layers = resolve_layers(wl, loaded.model.linears)
    weights = pruned_weights(ModelCache(), wl, loaded, "k", layers, model_data(wl, loaded, "k"))
    assert all(check_compliance(weights[name], 2, 4).compliant for name in loaded.model.linears)


def test_decoder_replay_scores_perplexity(tiny: dict[str, Path]) -> None:
    run = replay(workload(tiny, "llama", **candidate_fields()))
    q = run.outcome.quality
    assert q is not None and q.perplexity is not None and q.dense_perplexity is not None
    assert q.evidence is not None and q.evidence.unit == "window" and q.evidence.tokens == 512
    assert {g.name for g in run.graph.layers} >= {"blk.0.ffn_down", "blk.1.attn_q"}
    assert run.outcome.equal_latency is not None


def test_bad_sizes_and_models_are_one_line_errors(tiny: dict[str, Path]) -> None:
    with pytest.raises(UserError, match="tokens.sequence: 200 exceeds the 128 positions"):
        replay(workload(tiny, tokens={"batch": 1, "sequence": 200}))
    with pytest.raises(UserError, match="timed tokens, but the evaluation part"):
        replay(workload(tiny, tokens={"batch": 60, "sequence": 100}))
    with pytest.raises(UserError, match="not a known model"):
        plan(parse_workload({**model_workload(tiny["bert"], tiny["text"]), "model": "no-such-model"}, "w.yaml"))
