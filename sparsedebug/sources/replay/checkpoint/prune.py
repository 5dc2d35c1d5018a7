"""Pruning a model workload's intended layers with its method, on its calibration text.

Every layer whose intended sparsity is a pattern is pruned to it by the
workload's method (:mod:`sparsedebug.sources.models.prune`: magnitude, or Wanda and
SparseGPT calibrated block by block); layers of one pattern are pruned in one
pass, a second pattern in a pass of its own. With ``pruning.method: none`` the
checkpoint's weights are taken as they are (lowering checks their compliance).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from sparsedebug.kernels.masks import parse_pattern
from sparsedebug.sources.models.base import Array, Linear
from sparsedebug.sources.models.load import LoadedModel
from sparsedebug.sources.models.prune import prune_model
from sparsedebug.sources.models.text import python_version
from sparsedebug.sources.replay.checkpoint.data import ModelData
from sparsedebug.sources.replay.checkpoint.workload import ModelLayer, checkpoint_weights
from sparsedebug.sources.workload.schema import Workload

T = TypeVar("T")


class ModelCache:
    """Values that are pure functions of their key, kept for the rest of the process (the oldest dropped first)."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The value under ``key``, made by ``make()`` the first time."""
        if key in self._values:
            value: T = self._values[key]
            return value
        value = make()
        while len(self._values) >= self.keep:
            self._values.pop(next(iter(self._values)))
        self._values[key] = value
        return value


def calibration_text(workload: Workload, data: ModelData) -> str:
    """What the pruning was calibrated on, as the run record's ``pruning.calibration`` knob says it."""
    method = workload.pruning.method
    if method == "none":
        return "none (weights taken as the checkpoint has them)"
    if method == "magnitude":
        return "none (magnitude needs no calibration)"
    split = data.study.split
    return (
        f"{split.calibration_units} {split.unit}s ({split.calibration_tokens} tokens) of {data.corpus.source} "
        f"(sha256 {data.corpus.sha256[:12]}, Python {python_version()}), disjoint from the evaluation part"
    )


def pruned_weights(
    cache: ModelCache, workload: Workload, loaded: LoadedModel, key: str, layers: list[ModelLayer], data: ModelData
) -> dict[str, Array]:
    """Every linear's weight: pruned to its intended pattern by the workload's method, else the checkpoint's."""
    weights = checkpoint_weights(loaded)
    method = workload.pruning.method
    if method == "none":
        return weights
    groups: dict[str, list[Linear]] = {}
    for layer in layers:
        if layer.pattern is not None:
            groups.setdefault(layer.sparsity, []).append(layer.linear)
    calibrated = method != "magnitude"
    for pattern, group in groups.items():
        names = tuple(layer.name for layer in group)
        cache_key = ("pruned", key, method, pattern, names, data.corpus.sha256 if calibrated else "", len(data.calibration.ids))

        def make(group: list[Linear] = group, pattern: str = pattern) -> dict[str, Array]:
            return prune_model(loaded.model, group, parse_pattern(pattern), method, data.calibration if calibrated else None)

        weights.update(cache.get(cache_key, make))
    return weights
