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

The search is the one both graph sources share
(:mod:`sparsedebug.sources.replay.equal_latency`): steps of 1/16, on the
target clock for a GPU backend profile (the narrowed model's linears and ops
projected) with this machine's interleaved timings as the cross-check, else on
this machine's clock; when the dense model is already as fast as the
candidate, nothing is narrowed and the comparison reports the quality the
sparsity costs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.kernels.precision import Precision
from sparsedebug.kernels.pruning import InputStats
from sparsedebug.records.notes import Note
from sparsedebug.records.run import EqualLatencyQuality, QualityDelta
from sparsedebug.records.target import Launch, TargetClock
from sparsedebug.sources.models.base import Array, Batch, Transformer
from sparsedebug.sources.replay.checkpoint.kernels import ModelKernels, dense_kernels
from sparsedebug.sources.replay.checkpoint.quality import better
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS, FfnGroup, equal_latency

F64 = npt.NDArray[np.float64]


def ffn_blocks(model: Transformer) -> list[FfnGroup]:
    """Every block's FFN: its last mlp linear (in forward order) consumes what the earlier ones of matching width produce."""
    blocks = []
    for index in range(model.blocks):
        mlp = [layer for layer in model.block_linears(index) if layer.role == "mlp"]
        if len(mlp) < 2:
            continue
        consumer = mlp[-1]
        producers = tuple(layer.name for layer in mlp[:-1] if layer.out_features == consumer.in_features)
        if producers:
            blocks.append(FfnGroup(producers, consumer.name, consumer.in_features))
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


def neuron_importance(model: Transformer, blocks: list[FfnGroup], calibration: Batch) -> dict[str, F64]:
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


def narrowed_model(model: Transformer, blocks: list[FfnGroup], importance: Mapping[str, F64], fraction: float) -> Transformer:
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
    # Neuron importance, computed when first needed (never when nothing is narrowed).
    importance: Callable[[], Mapping[str, F64]]
    precisions: Mapping[str, Precision]
    timed: Batch
    # One forward of the candidate on the timed batch.
    candidate: Callable[[], object]
    span: list[float]
    dense_samples: list[float]
    repeats: int
    candidate_quality: QualityDelta
    # Quality of a narrowed model run on its dense kernels.
    measure: Callable[[Transformer, ModelKernels], QualityDelta]
    importance_text: Note
    # The target clock of the candidate (the search runs there when it has whole-forward figures).
    target: TargetClock | None = None
    # The dense model narrowed by ``step / FRACTION_STEPS``, projected onto the target.
    target_ms: Callable[[int, Launch], float | None] | None = None


class ModelNarrowing:
    """A checkpoint's dense model narrowed by calibration importance: the :class:`~sparsedebug.sources.replay.protocol.Narrowing` of a model workload."""

    def __init__(
        self, model: Transformer, importance: Callable[[], Mapping[str, F64]], precisions: Mapping[str, Precision],
        timed: Batch, measure: Callable[[Transformer, ModelKernels], QualityDelta], importance_text: Note,
        target_ms: Callable[[int, Launch], float | None] | None = None,
        cached: Callable[[int, Callable[[], QualityDelta]], QualityDelta] | None = None,
    ) -> None:
        self.model, self.scores, self.precisions, self.timed, self.measure = model, importance, precisions, timed, measure
        self.importance: Note | None = importance_text
        self.target_ms = target_ms
        # ``cached(step, measure)``: the quality of a step, measured (``measure()``) only when not known already.
        self.cached = cached
        self.blocks = ffn_blocks(model)
        self._built: dict[int, tuple[Transformer, ModelKernels]] = {}

    def build(self, step: int) -> tuple[Transformer, ModelKernels]:
        """The narrowed model and its dense kernels (the last few kept)."""
        if step not in self._built:
            model = self.model
            narrowed = model if step == 0 else narrowed_model(model, self.blocks, self.scores(), step / FRACTION_STEPS)
            weights = {name: narrowed.weight(name) for name in narrowed.linears}
            while len(self._built) >= 2:
                self._built.pop(next(iter(self._built)))
            self._built[step] = (narrowed, dense_kernels(weights, self.precisions))
        return self._built[step]

    def forward(self, step: int) -> Callable[[], object]:
        """One forward of the narrowed model on the timed batch."""
        narrowed, kernels = self.build(step)
        return lambda: narrowed.hidden(self.timed, kernels)

    def quality(self, step: int) -> QualityDelta:
        """Real-text quality of the narrowed model against the dense one (through ``cached`` when given)."""
        if self.cached is not None:
            return self.cached(step, lambda: self.measure(*self.build(step)))
        return self.measure(*self.build(step))

    def target_dense_ms(self, step: int, launch: Launch) -> float | None:
        """The narrowed model's whole forward on the target clock."""
        return self.target_ms(step, launch) if self.target_ms is not None else None

    def better(self, candidate: QualityDelta, narrowed: QualityDelta) -> bool:
        """The candidate's real-text quality beats the narrowed model's."""
        return better(candidate, narrowed)


def model_equal_latency(inputs: EqualLatencyInputs) -> EqualLatencyQuality | None:
    """Narrow the dense model to the candidate's latency and compare qualities (None: cannot narrow).

    The shared search (:func:`sparsedebug.sources.replay.equal_latency.equal_latency`): on the
    target clock when ``inputs.target`` has whole-forward figures, this machine's kept as the cross-check.
    """
    if not narrowable(inputs.model):
        return None
    narrowing = ModelNarrowing(
        inputs.model, inputs.importance, inputs.precisions, inputs.timed, inputs.measure, inputs.importance_text, inputs.target_ms
    )
    return equal_latency(
        narrowing, inputs.candidate, inputs.span, inputs.dense_samples, inputs.repeats,
        inputs.candidate_quality, inputs.target,
    )
