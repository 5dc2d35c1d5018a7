"""What the numpy transformers share: packed batches, linear layers with hooks, attention.

A batch is packed: the tokens of every sequence one after another, ``(N,)`` ids
with the sequence lengths beside them, so there is never a padding token to
mask (attention runs per sequence). Hidden states are ``(N, d)`` fp32. Every
linear layer goes through :meth:`Transformer.linear`, which applies the
caller's replacement weights (pruned ones) and reports ``(name, input,
output)`` to a hook: calibration statistics and per-layer errors are gathered
there.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import InternalError, UserError

Array = npt.NDArray[np.float32]
Hook = Callable[[str, Array, Array], None]
"""Called with a linear layer's name, its input ``(N, in)`` and its output ``(N, out)``."""



class LinearKernels(Mapping[str, Array], abc.ABC):
    """Replacement weights that also run their layers' products (the replay's own kernels per layer).

    Passed where a forward takes ``overrides``: as a mapping it gives each
    replaced layer's (pruned) weight; :meth:`run` computes ``x @ W.T`` (without
    the bias) for a layer on its kernel, or returns None for the plain product.
    """

    @abc.abstractmethod
    def run(self, name: str, x: Array) -> Array | None:
        """``x @ W.T`` of linear ``name`` on its own kernel, or None."""


Role = Literal["attention", "mlp"]
Kind = Literal["encoder", "decoder"]


@dataclass(frozen=True)
class Linear:
    """One linear layer, under the checkpoint's own tensor name (without ``.weight``).

    ``group`` names the first layer of the set that reads the same input
    (query/key/value, gate/up): calibration statistics are gathered once per group.
    """

    name: str
    block: int
    role: Role
    group: str
    out_features: int
    in_features: int
    bias: bool


@dataclass(frozen=True)
class Batch:
    """Packed token ids and the length of each sequence."""

    ids: npt.NDArray[np.int64]
    lengths: tuple[int, ...]

    def __post_init__(self) -> None:
        if sum(self.lengths) != len(self.ids) or any(length < 1 for length in self.lengths):
            raise InternalError(f"batch: lengths {self.lengths} do not pack {len(self.ids)} ids")

    @classmethod
    def of(cls, sequences: Sequence[Sequence[int]]) -> Batch:
        """Pack a list of id sequences."""
        if not sequences:
            raise InternalError("batch: no sequences")
        ids = np.concatenate([np.asarray(seq, dtype=np.int64) for seq in sequences])
        return cls(ids=ids, lengths=tuple(len(seq) for seq in sequences))

    @cached_property
    def offsets(self) -> npt.NDArray[np.int64]:
        """Start of each sequence, plus the total at the end."""
        return np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)

    @cached_property
    def positions(self) -> npt.NDArray[np.int64]:
        """Position of every token within its own sequence."""
        return np.concatenate([np.arange(length) for length in self.lengths]).astype(np.int64)

    def spans(self) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` of each sequence in the packed arrays."""
        offsets = self.offsets
        for index in range(len(self.lengths)):
            yield int(offsets[index]), int(offsets[index + 1])

    def split(self, most_tokens: int) -> list[Batch]:
        """Consecutive sub-batches of whole sequences with at most ``most_tokens`` each (at least one sequence)."""
        parts: list[Batch] = []
        start_seq, tokens = 0, 0
        for index, length in enumerate(self.lengths):
            if tokens and tokens + length > most_tokens:
                parts.append(self._sub(start_seq, index))
                start_seq, tokens = index, 0
            tokens += length
        parts.append(self._sub(start_seq, len(self.lengths)))
        return parts

    def _sub(self, first: int, stop: int) -> Batch:
        a, b = int(self.offsets[first]), int(self.offsets[stop])
        return Batch(ids=self.ids[a:b], lengths=self.lengths[first:stop])


class Transformer(abc.ABC):
    """A stack of blocks over named fp32 tensors; subclasses define embedding, block and head."""

    kind: Kind
    architecture: str

    def __init__(self, tensors: dict[str, Array], linears: Sequence[Linear], blocks: int) -> None:
        self.tensors = tensors
        self.linears: dict[str, Linear] = {layer.name: layer for layer in linears}
        self.blocks = blocks
        for layer in linears:
            shape = self.tensor(f"{layer.name}.weight").shape
            if shape != (layer.out_features, layer.in_features):
                raise UserError(f"{layer.name}.weight: shape {shape}, expected {(layer.out_features, layer.in_features)}")

    def tensor(self, name: str) -> Array:
        """A checkpoint tensor by name; a missing one is a ``UserError``."""
        value = self.tensors.get(name)
        if value is None:
            raise UserError(f"checkpoint has no tensor {name!r}")
        return value

    @property
    def parameters(self) -> int:
        """Number of parameters in the checkpoint's tensors."""
        return int(sum(value.size for value in self.tensors.values()))

    def weight(self, name: str, overrides: Mapping[str, Array] | None = None) -> Array:
        """The weight of linear ``name``: the override when given, else the checkpoint's."""
        if overrides is not None and name in overrides:
            return overrides[name]
        return self.tensors[f"{name}.weight"]

    def block_linears(self, index: int) -> list[Linear]:
        """The linear layers of block ``index``, in forward order."""
        return [layer for layer in self.linears.values() if layer.block == index]

    def linear(self, name: str, x: Array, overrides: Mapping[str, Array] | None, hook: Hook | None) -> Array:
        """``x @ W.T (+ bias)`` for linear ``name`` (on its kernel when ``overrides`` are kernels), reported to ``hook``."""
        y = overrides.run(name, x) if isinstance(overrides, LinearKernels) else None
        if y is None:
            y = x @ self.weight(name, overrides).T
        if self.linears[name].bias:
            y += self.tensors[f"{name}.bias"]
        if hook is not None:
            hook(name, x, y)
        return y

    @abc.abstractmethod
    def embed(self, batch: Batch) -> Array:
        """Hidden states ``(N, d)`` entering block 0."""

    @abc.abstractmethod
    def block(self, index: int, h: Array, batch: Batch, overrides: Mapping[str, Array] | None, hook: Hook | None) -> Array:
        """Hidden states after block ``index``."""

    def hidden(self, batch: Batch, overrides: Mapping[str, Array] | None = None, hook: Hook | None = None) -> Array:
        """Hidden states after the last block."""
        h = self.embed(batch)
        for index in range(self.blocks):
            h = self.block(index, h, batch, overrides, hook)
        return h

    def describe(self) -> dict[str, Any]:
        """Shape facts for records: blocks, hidden width, linear layers."""
        return {"blocks": self.blocks, "linear_layers": len(self.linears)}


def softmax_rows(scores: Array) -> Array:
    """Softmax over the last axis, in place (``-inf`` entries become exact zeros)."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


_CAUSAL: dict[int, Array] = {}


def causal_mask(length: int) -> Array:
    """``(T, T)`` additive mask: 0 on and below the diagonal, ``-inf`` above."""
    mask = _CAUSAL.get(length)
    if mask is None:
        mask = np.triu(np.full((length, length), -np.inf, dtype=np.float32), 1)
        if len(_CAUSAL) < 8:
            _CAUSAL[length] = mask
    return mask


def attention(q: Array, k: Array, v: Array, batch: Batch, *, causal: bool) -> Array:
    """Scaled dot-product attention per sequence; ``q (N, H, hd)``, ``k, v (N, KV, hd)`` with ``H % KV == 0``.

    Grouped-query attention shares each key/value head among ``H / KV``
    consecutive query heads. Returns ``(N, H * hd)``.
    """
    tokens, heads, dim = q.shape
    repeat = heads // k.shape[1]
    out = np.empty((tokens, heads * dim), dtype=np.float32)
    scale = np.float32(1.0 / np.sqrt(dim))
    for start, stop in batch.spans():
        # Head-major contiguous copies: BLAS runs 2-3x faster than on the strided views.
        qs = np.ascontiguousarray(q[start:stop].transpose(1, 0, 2))
        ks = np.ascontiguousarray(k[start:stop].transpose(1, 2, 0))
        vs = np.ascontiguousarray(v[start:stop].transpose(1, 0, 2))
        if repeat > 1:
            ks = np.repeat(ks, repeat, axis=0)
            vs = np.repeat(vs, repeat, axis=0)
        scores = np.matmul(qs, ks)
        scores *= scale
        if causal:
            scores += causal_mask(stop - start)
        probs = softmax_rows(scores)
        out[start:stop] = np.matmul(probs, vs).transpose(1, 0, 2).reshape(stop - start, heads * dim)
    return out
