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


def calibration_knobs(workload: Workload, data: ModelData) -> dict[str, str]:
    """What the pruning was calibrated on, as the run record's ``pruning.calibration*`` knobs: the text, how many
    units and tokens of it, its digest, the Python that shipped it and the split rule that keeps it apart from the
    evaluation part; ``none`` for a method that needs no calibration."""
    if workload.pruning.method not in ("wanda", "sparsegpt"):
        return {"pruning.calibration": "none"}
    split = data.study.split
    return {
        "pruning.calibration": data.corpus.source,
        "pruning.calibration_units": f"{split.calibration_units} {split.unit}s",
        "pruning.calibration_tokens": str(split.calibration_tokens),
        "pruning.calibration_sha256": data.corpus.sha256[:12],
        "pruning.calibration_python": python_version(),
        "pruning.calibration_split": split.rule,
    }


def _pruning_groups(
    workload: Workload, key: str, layers: list[ModelLayer], data: ModelData
) -> list[tuple[str, list[Linear], tuple[Hashable, ...]]]:
    """The workload's pruning passes: each pattern, the linears pruned to it in one pass, and that pass's cache key
    (none with ``pruning.method: none``)."""
    method = workload.pruning.method
    if method == "none":
        return []
    groups: dict[str, list[Linear]] = {}
    for layer in layers:
        if layer.pattern is not None:
            groups.setdefault(layer.sparsity, []).append(layer.linear)
    calibrated = method != "magnitude"
    return [
        (pattern, group, ("pruned", key, method, pattern, tuple(layer.name for layer in group),
                          data.corpus.sha256 if calibrated else "", len(data.calibration.ids)))
        for pattern, group in groups.items()
    ]  # fmt: skip


def pruned_weights(
    cache: ModelCache, workload: Workload, loaded: LoadedModel, key: str, layers: list[ModelLayer], data: ModelData
) -> dict[str, Array]:
    """Every linear's weight: pruned to its intended pattern by the workload's method, else the checkpoint's."""
    weights = checkpoint_weights(loaded)
    method = workload.pruning.method
    if method == "none":
        return weights
    calibrated = method != "magnitude"
    for pattern, group, cache_key in _pruning_groups(workload, key, layers, data):

        def make(group: list[Linear] = group, pattern: str = pattern) -> dict[str, Array]:
            return prune_model(loaded.model, group, parse_pattern(pattern), method, data.calibration if calibrated else None)

        weights.update(cache.get(cache_key, make))
    return weights


def weight_keys(workload: Workload, key: str, layers: list[ModelLayer], data: ModelData) -> dict[str, Hashable]:
    """What each linear's weight in :func:`pruned_weights` is a pure function of: its pruning pass's cache key, or
    ``("checkpoint", key)`` for the checkpoint's own weight. Two variants whose keys match hold the same weights."""
    keys: dict[str, Hashable] = {layer.name: ("checkpoint", key) for layer in layers}
    for _, group, cache_key in _pruning_groups(workload, key, layers, data):
        keys.update({linear.name: cache_key for linear in group})
    return keys
