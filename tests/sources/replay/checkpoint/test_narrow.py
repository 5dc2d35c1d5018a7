"""Narrowing a real-format model's FFNs by calibration importance, and the equal-latency search on it."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sparsedebug.records.notes import note
from sparsedebug.records.run import QualityDelta
from sparsedebug.sources.models.base import Batch, Transformer
from sparsedebug.sources.models.load import load_model
from sparsedebug.sources.replay.checkpoint.kernels import ModelKernels
from sparsedebug.sources.replay.checkpoint.narrow import (
    EqualLatencyInputs,
    ffn_blocks,
    model_equal_latency,
    narrowable,
    narrowed_model,
    neuron_importance,
)
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS
from tests.sources.replay.model_workloads import tiny_models

BATCH = Batch.of([list(range(3, 19)), list(range(40, 52))])

IMPORTANCE = note("targets.importance_calibration", tokens=8, text="test")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Transformer]:
    paths = tiny_models(tmp_path_factory.mktemp("narrow"))
    return {kind: load_model(str(paths[kind]), lambda message: None).model for kind in ("bert", "llama")}


def test_ffn_blocks_are_producers_and_the_consumer_of_each_block(models: dict[str, Transformer]) -> None:
    bert, llama = ffn_blocks(models["bert"]), ffn_blocks(models["llama"])
    assert [(b.producers, b.consumer, b.width) for b in bert] == [
        ((f"encoder.layer.{i}.intermediate.dense",), f"encoder.layer.{i}.output.dense", 64) for i in range(2)
    ]
    assert [(b.producers, b.consumer) for b in llama] == [((f"blk.{i}.ffn_gate", f"blk.{i}.ffn_up"), f"blk.{i}.ffn_down") for i in range(2)]
    assert narrowable(models["bert"]) and narrowable(models["llama"])


@pytest.mark.parametrize("kind", ["bert", "llama"])
def test_removing_neurons_that_feed_nothing_changes_nothing(models: dict[str, Transformer], kind: str) -> None:
    """Neurons whose output-projection column is zero have importance 0 and are removed first, exactly."""
    model = models[kind]
    blocks = ffn_blocks(model)
    rng = np.random.default_rng(11)
    tensors = dict(model.tensors)
    dead = 16  # of 64: a quarter, 4 of the 16 narrowing steps
    for block in blocks:
        weight = tensors[f"{block.consumer}.weight"].copy()
        weight[:, rng.choice(block.width, dead, replace=False)] = 0.0
        tensors[f"{block.consumer}.weight"] = weight
    zeroed = type(model)(tensors, model.config)  # type: ignore[call-arg,attr-defined]
    importance = neuron_importance(zeroed, blocks, BATCH)
    assert all(int(np.sum(score == 0)) == dead and np.all(score >= 0) for score in importance.values())
    narrowed = narrowed_model(zeroed, blocks, importance, dead / 64)
    assert narrowed.config.ffn == 48  # type: ignore[attr-defined]
    for block in blocks:
        assert narrowed.weight(block.consumer).shape[1] == 48
        assert all(narrowed.weight(name).shape[0] == 48 for name in block.producers)
    np.testing.assert_allclose(narrowed.hidden(BATCH), zeroed.hidden(BATCH), rtol=1e-5, atol=1e-5)
    removed_more = narrowed_model(zeroed, blocks, importance, 0.5)
    assert not np.allclose(removed_more.hidden(BATCH), zeroed.hidden(BATCH), atol=1e-3)
    assert narrowed_model(zeroed, blocks, importance, 0.0) is zeroed


def quality(cosine: float) -> QualityDelta:
    return QualityDelta(cosine=cosine, rel_err=1.0 - cosine)


def inputs(model: Transformer, candidate: object, span: list[float], dense: list[float], importance: object) -> EqualLatencyInputs:
    return EqualLatencyInputs(
        model=model, importance=importance, precisions=dict.fromkeys(model.linears, "fp32"), timed=BATCH,  # type: ignore[arg-type]
        candidate=candidate, span=span, dense_samples=dense, repeats=6, candidate_quality=quality(0.9),  # type: ignore[arg-type]
        measure=lambda m, k: quality(1.0 - 0.1 * (64 - m.config.ffn) / 64), importance_text=IMPORTANCE,  # type: ignore[attr-defined]
    )


def test_when_dense_is_already_faster_nothing_is_narrowed(models: dict[str, Transformer]) -> None:
    def never() -> dict[str, np.ndarray]:
        raise AssertionError("importance is not needed when nothing is narrowed")

    eq = model_equal_latency(inputs(models["bert"], lambda: None, [20.0] * 3, [10.0] * 3, never))
    assert eq is not None and eq.narrowed_ffn_fraction == 0.0 and eq.latency_matched
    assert eq.narrowed_latency_ms == 10.0 and eq.candidate_latency_ms == 20.0
    assert eq.narrowed.cosine == 1.0 and not eq.sparsity_wins and eq.importance == IMPORTANCE


def test_a_faster_candidate_gets_the_least_narrowing_that_matches_it(models: dict[str, Transformer]) -> None:
    """A candidate far slower than any narrowing (a sleep) is matched by the first step: 1/16 of the neurons."""
    model = models["bert"]
    importance = neuron_importance(model, ffn_blocks(model), BATCH)
    seen: list[ModelKernels] = []

    def measure(narrowed: Transformer, kernels: ModelKernels) -> QualityDelta:
        seen.append(kernels)
        return quality(0.95)

    spec = inputs(model, lambda: time.sleep(0.02), [20.0] * 3, [1000.0] * 3, lambda: importance)
    spec.measure = measure
    eq = model_equal_latency(spec)
    assert eq is not None and eq.narrowed_ffn_fraction == 1 / FRACTION_STEPS and eq.latency_matched
    assert eq.candidate_latency_ms is not None and eq.narrowed_latency_ms < eq.candidate_latency_ms
    assert eq.narrowed.cosine == 0.95 and not eq.sparsity_wins
    assert seen and all(kernel.weight.shape[0] in (32, 60) for kernel in seen[0].kernels.values())


def test_the_importance_comes_from_the_calibration_text(models: dict[str, Transformer]) -> None:
    model = models["bert"]
    blocks = ffn_blocks(model)
    one = neuron_importance(model, blocks, BATCH)
    other = neuron_importance(model, blocks, Batch.of([list(range(60, 90))]))
    assert not all(np.allclose(one[k], other[k]) for k in one)
