"""Prune a model's selected linear layers by one method, calibrating block by block.

Wanda and SparseGPT run sequentially over the blocks, as their reference
implementations do: the calibration tokens enter block 0; for each block the
inputs of its selected layers are gathered with the block still dense (but
fed by the already-pruned blocks before it), those layers are pruned, and the
block is run again with its pruned weights to produce the next block's input.
Layers that read the same input (query/key/value, gate/up) share one set of
statistics; SparseGPT prunes them as one stacked matrix, which is the same
computation row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sparsedebug.core.errors import InternalError
from sparsedebug.kernels.masks import Pattern
from sparsedebug.kernels.pruning import (
    DEFAULT_BLOCK,
    DEFAULT_DAMPING,
    InputStats,
    Method,
    magnitude_prune,
    sparsegpt_prune,
    wanda_prune,
)
from sparsedebug.sources.models.base import Array, Batch, Linear, Transformer

# Called with (blocks done, blocks total).
BlockProgress = Callable[[int, int], None]


def prune_model(
    model: Transformer,
    layers: Sequence[Linear],
    pattern: Pattern,
    method: Method,
    calibration: Batch | None,
    *,
    damping: float = DEFAULT_DAMPING,
    block_size: int = DEFAULT_BLOCK,
    progress: BlockProgress | None = None,
) -> dict[str, Array]:
    """Pruned weights (fp32) of ``layers`` by ``method``; the calibration batch is needed by Wanda and SparseGPT."""
    if method == "magnitude":
        return {layer.name: magnitude_prune(model.weight(layer.name), pattern) for layer in layers}
    if calibration is None:
        raise InternalError(f"{method}: calibration batch missing")
    selected = {layer.name for layer in layers}
    pruned: dict[str, Array] = {}
    h = model.embed(calibration)
    for index in range(model.blocks):
        block_layers = [layer for layer in model.block_linears(index) if layer.name in selected]
        if block_layers:
            stats = _gather(model, index, h, calibration, pruned, block_layers, gram=method == "sparsegpt")
            for group in _groups(block_layers):
                inputs = stats[group[0].group]
                if method == "wanda":
                    norms = inputs.feature_norms()
                    for layer in group:
                        pruned[layer.name] = wanda_prune(model.weight(layer.name), pattern, norms)
                else:
                    pruned.update(_sparsegpt_group(model, group, pattern, inputs, damping, block_size))
        h = model.block(index, h, calibration, pruned, None)
        if progress is not None:
            progress(index + 1, model.blocks)
    return pruned


def _gather(
    model: Transformer,
    index: int,
    h: Array,
    batch: Batch,
    pruned: dict[str, Array],
    layers: Sequence[Linear],
    *,
    gram: bool,
) -> dict[str, InputStats]:
    """Input statistics of each selected group of block ``index``, with the block itself still dense."""
    stats = {layer.group: InputStats(layer.in_features, gram=gram) for layer in layers}

    def hook(name: str, x: Array, y: Array) -> None:
        if name in stats:
            stats[name].add(x)

    model.block(index, h, batch, pruned, hook)
    return stats


def _groups(layers: Sequence[Linear]) -> list[list[Linear]]:
    """Selected layers grouped by shared input, in model order."""
    groups: dict[str, list[Linear]] = {}
    for layer in layers:
        groups.setdefault(layer.group, []).append(layer)
    return list(groups.values())


def _sparsegpt_group(
    model: Transformer, group: Sequence[Linear], pattern: Pattern, inputs: InputStats, damping: float, block_size: int
) -> dict[str, Array]:
    """SparseGPT on the group's weights stacked row-wise (one Hessian), split back per layer.

    A blocked pattern keeps the layers apart so that row blocks never straddle two layers.
    """
    assert inputs.gram is not None
    weights = [model.weight(layer.name) for layer in group]
    if pattern.block is not None or len(group) == 1:
        return {
            layer.name: sparsegpt_prune(w, pattern, inputs.gram, damping=damping, block_size=block_size)
            for layer, w in zip(group, weights, strict=True)
        }
    stacked = sparsegpt_prune(np.vstack(weights), pattern, inputs.gram, damping=damping, block_size=block_size)
    bounds = np.cumsum([0] + [w.shape[0] for w in weights])
    return {layer.name: stacked[bounds[i] : bounds[i + 1]] for i, layer in enumerate(group)}
