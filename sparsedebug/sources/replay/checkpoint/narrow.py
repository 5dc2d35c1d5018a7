"""Equal latency on real weights: the dense model with its least important FFN neurons removed.

"At this latency, is sparsity better than a smaller dense model?" Each block's
feed-forward network is a set of producers (BERT's ``intermediate.dense``;
Llama's ``ffn_gate`` and ``ffn_up``) whose outputs are the FFN's neurons and
one consumer (``output.dense``; ``ffn_down``) that reads them. Neuron ``i`` is
row ``i`` of every producer (and its bias) and column ``i`` of the consumer.
Its importance is Wanda's score at neuron granularity, from the same
calibration text the pruning used: the L2 norm of its activation (the
consumer's input feature ``i``) over the calibration tokens, with the model
dense, times the L2 norm of the consumer's column ``i``. Narrowing by a
fraction removes that fraction of the least important neurons of every block,
so every block keeps the same width.

On this machine's clock: when the candidate is faster than the dense model,
the fraction is searched (steps of 1/16, bisection on interleaved timings of
the narrowed model against the candidate) for the least narrowing that is as
fast as the candidate; when the dense model is already as fast, nothing is
narrowed and the comparison reports the quality the sparsity costs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.precision import Precision
from sparsedebug.kernels.pruning import InputStats
from sparsedebug.records.run import EqualLatencyQuality, QualityDelta
from sparsedebug.sources.models.base import Array, Batch, Transformer
from sparsedebug.sources.replay.checkpoint.kernels import ModelKernels, dense_kernels
from sparsedebug.sources.replay.checkpoint.quality import better
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS, equal_latency_step

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FfnBlock:
    """One block's FFN: the linears that produce its neurons and the one that consumes them."""

    producers: tuple[str, ...]
    consumer: str
    width: int


def ffn_blocks(model: Transformer) -> list[FfnBlock]:
    """Every block's FFN: its last mlp linear (in forward order) consumes what the earlier ones of matching width produce."""
    blocks = []
    for index in range(model.blocks):
        mlp = [layer for layer in model.block_linears(index) if layer.role == "mlp"]
        if len(mlp) < 2:
            continue
        consumer = mlp[-1]
        producers = tuple(layer.name for layer in mlp[:-1] if layer.out_features == consumer.in_features)
        if producers:
            blocks.append(FfnBlock(producers, consumer.name, consumer.in_features))
    return blocks


def narrowable(model: Transformer) -> bool:
    """Whether the model can be rebuilt narrower: uniform FFN blocks and a dataclass config with ``ffn``."""
    config = getattr(model, "config", None)
    blocks = ffn_blocks(model)
    return (
        len(blocks) == model.blocks
        and len({block.width for block in blocks}) == 1
        and dataclasses.is_dataclass(config)
        and hasattr(config, "ffn")
    )


def neuron_importance(model: Transformer, blocks: list[FfnBlock], calibration: Batch) -> dict[str, F64]:
    """Per FFN (by consumer name): activation norm over the calibration tokens x consumer column norm."""
    stats = {block.consumer: InputStats(block.width, gram=False) for block in blocks}

    def hook(name: str, x: Array, y: Array) -> None:
        if name in stats:
            stats[name].add(x)

    for chunk in calibration.split(4096):
        model.hidden(chunk, None, hook)
    return {
        name: stat.feature_norms() * np.linalg.norm(model.weight(name).astype(np.float64), axis=0)
        for name, stat in stats.items()
    }


def narrowed_model(model: Transformer, blocks: list[FfnBlock], importance: Mapping[str, F64], fraction: float) -> Transformer:
    """A new model of the same class with ``fraction`` of every block's least important neurons removed."""
    width = blocks[0].width
    keep = max(1, int(round(width * (1.0 - fraction))))
    if keep >= width:
        return model
    tensors = dict(model.tensors)
    for block in blocks:
        kept = np.sort(np.argsort(-importance[block.consumer], kind="stable")[:keep])
        for name in block.producers:
            tensors[f"{name}.weight"] = np.ascontiguousarray(tensors[f"{name}.weight"][kept, :])
            if f"{name}.bias" in tensors:
                tensors[f"{name}.bias"] = np.ascontiguousarray(tensors[f"{name}.bias"][kept])
        tensors[f"{block.consumer}.weight"] = np.ascontiguousarray(tensors[f"{block.consumer}.weight"][:, kept])
    # Both architectures are built from (tensors, config); ``narrowable`` checked the config is a dataclass with ffn.
    config: Any = dataclasses.replace(getattr(model, "config"), ffn=keep)  # noqa: B009
    build: Any = type(model)
    narrowed: Transformer = build(tensors, config)
    return narrowed


@dataclass
class EqualLatencyInputs:
    """What the search needs from the replay."""

    model: Transformer
    importance: Callable[[], Mapping[str, F64]]
    """Neuron importance, computed when first needed (never when nothing is narrowed)."""
    precisions: Mapping[str, Precision]
    timed: Batch
    candidate: Callable[[], object]
    """One forward of the candidate on the timed batch."""
    span: list[float]
    dense_samples: list[float]
    repeats: int
    candidate_quality: QualityDelta
    measure: Callable[[Transformer, ModelKernels], QualityDelta]
    """Quality of a narrowed model run on its dense kernels."""
    importance_text: str


def model_equal_latency(inputs: EqualLatencyInputs) -> EqualLatencyQuality | None:
    """Narrow the dense model to the candidate's latency on this machine and compare qualities (None: cannot narrow)."""
    model = inputs.model
    if not narrowable(model):
        return None
    blocks = ffn_blocks(model)
    rounds = max(5, inputs.repeats // 2)
    cache: dict[int, tuple[Transformer, ModelKernels, float, float, float]] = {}

    def build(step: int) -> tuple[Transformer, ModelKernels]:
        narrowed = model if step == 0 else narrowed_model(model, blocks, inputs.importance(), step / FRACTION_STEPS)
        weights = {name: narrowed.weight(name) for name in narrowed.linears}
        return narrowed, dense_kernels(weights, inputs.precisions)

    def ratio(step: int) -> float:
        if step not in cache:
            narrowed, kernels = build(step)
            timed = interleaved(
                {"candidate": inputs.candidate, "narrowed": lambda: narrowed.hidden(inputs.timed, kernels)},
                rounds=rounds, warmup=1,
            )  # fmt: skip
            narrowed_p50, candidate_p50 = median(timed["narrowed"]), median(timed["candidate"])
            cache[step] = (narrowed, kernels, narrowed_p50 / candidate_p50, narrowed_p50, candidate_p50)
        return cache[step][2]

    if median(inputs.dense_samples) <= median(inputs.span):
        step, reached = 0, True
        latency, candidate_latency = median(inputs.dense_samples), median(inputs.span)
        narrowed, kernels = build(0)
    else:
        step, reached = equal_latency_step(ratio, FRACTION_STEPS)
        narrowed, kernels, _, latency, candidate_latency = cache[step]
    narrowed_quality = inputs.measure(narrowed, kernels)
    return EqualLatencyQuality(
        narrowed_ffn_fraction=step / FRACTION_STEPS, narrowed_latency_ms=latency, candidate_latency_ms=candidate_latency,
        narrowed=narrowed_quality, candidate=inputs.candidate_quality, latency_matched=reached,
        sparsity_wins=(not reached) or better(inputs.candidate_quality, narrowed_quality), importance=inputs.importance_text,
    )  # fmt: skip
