"""Quality figures against the dense model: perplexity, embedding agreement, per-layer output error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError
from sparsedebug.sources.models.base import Array


def perplexity(nll: npt.NDArray[np.float64]) -> float:
    """``exp`` of the mean negative log-likelihood."""
    if nll.size == 0:
        raise UserError("perplexity: no predicted tokens (windows of one token?)")
    return float(np.exp(np.mean(nll)))


@dataclass(frozen=True)
class EmbeddingAgreement:
    """How well pruned sentence embeddings agree with the dense ones."""

    cosine_mean: float
    cosine_min: float
    neighbour_agreement: float


def nearest_neighbours(embeddings: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """For each row, the index of the most cosine-similar other row."""
    e = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    unit = e / np.maximum(norms, 1e-300)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    out: npt.NDArray[np.intp] = np.argmax(sims, axis=1)
    return out


def embedding_agreement(dense: npt.NDArray[Any], pruned: npt.NDArray[Any]) -> EmbeddingAgreement:
    """Per-sentence cosine of pruned to dense embeddings (mean, min) and nearest-neighbour agreement."""
    d = np.asarray(dense, dtype=np.float64)
    p = np.asarray(pruned, dtype=np.float64)
    if d.shape != p.shape or d.ndim != 2 or d.shape[0] < 3:
        raise UserError(f"embedding agreement: need two (sentences >= 3, width) arrays of one shape, got {d.shape} and {p.shape}")
    cos = np.sum(d * p, axis=1) / np.maximum(np.linalg.norm(d, axis=1) * np.linalg.norm(p, axis=1), 1e-300)
    agree = float(np.mean(nearest_neighbours(d) == nearest_neighbours(p)))
    return EmbeddingAgreement(float(np.mean(cos)), float(np.min(cos)), agree)


@dataclass
class LayerErrorMeter:
    """A forward hook accumulating each pruned layer's output error against its dense weight.

    For layer ``name`` with ``delta = W_pruned - W_dense`` and the output ``y``
    the pruned model computed, the dense output on the same input is
    ``y - x @ delta.T``; the meter sums both squared norms over every token
    (products in fp32, sums in fp64).
    """

    deltas: Mapping[str, Array]
    error_sq: dict[str, float] = field(default_factory=dict)
    reference_sq: dict[str, float] = field(default_factory=dict)

    def __call__(self, name: str, x: Array, y: Array) -> None:
        delta = self.deltas.get(name)
        if delta is None:
            return
        diff = x @ delta.T
        dense = y - diff
        self.error_sq[name] = self.error_sq.get(name, 0.0) + float(np.square(diff).sum(dtype=np.float64))
        self.reference_sq[name] = self.reference_sq.get(name, 0.0) + float(np.square(dense).sum(dtype=np.float64))

    def relative_errors(self) -> dict[str, float]:
        """``||error|| / ||dense output||`` per layer seen."""
        return {
            name: float(np.sqrt(err / self.reference_sq[name])) if self.reference_sq[name] > 0 else 0.0
            for name, err in self.error_sq.items()
        }
