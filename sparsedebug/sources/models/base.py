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
from sparsedebug.core.heap import retain_freed_memory

Array = npt.NDArray[np.float32]
# Called with a linear layer's name, its input ``(N, in)`` and its output ``(N, out)``. Both are the forward's own
# arrays (the output may be a column slice of a group's product) and the forward goes on to change some of them in
# place (residual, norm, activation): copy what you keep.
Hook = Callable[[str, Array, Array], None]


class LinearKernels(Mapping[str, Array], abc.ABC):
    """Replacement weights that also run their layers' products (the replay's own kernels per layer).

    Passed where a forward takes ``overrides``: as a mapping it gives each
    replaced layer's (pruned) weight; :meth:`run` computes ``x @ W.T`` (without
    the bias) for a layer on its kernel, or returns None for the plain product.
    """

    @abc.abstractmethod
    def run(self, name: str, x: Array) -> Array | None:
        """``x @ W.T`` of linear ``name`` on its own kernel, or None."""

    def run_group(self, names: tuple[str, ...], x: Array) -> list[Array] | None:
        """``x @ W.T`` of every linear in ``names`` (which all read ``x``) in one product, or None where the
        kernels cannot share one (then each layer goes through :meth:`run`)."""
        return None


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
class PreparedLinears:
    """Linear layers that read one input, prepared once: weights transposed side by side, biases concatenated.

    ``weight_t`` is ``(in, sum of outs)``, C-contiguous: OpenBLAS multiplies ``x @ weight_t`` 10-20%
    faster than ``x @ W.T`` on the checkpoint's ``(out, in)`` weight (no transposed packing). Each
    layer's product runs on its column slice of it, into its own C-contiguous output: one product
    of the joint width leaves every output a column slice with the joint row stride, on which
    numpy's elementwise passes (bias, SiLU, rotary, the attention's head-major copies) run 2-3x
    slower: the whole forward ran 1.4% (MiniLM) and 3.6% (SmolLM2) faster this way, with bitwise
    the same outputs. Made once per model (a copy of those weights).
    """

    names: tuple[str, ...]
    # The checkpoint weights it was made from (it is made again when one is replaced).
    sources: tuple[Array, ...]
    weight_t: Array
    # Concatenated biases (zeros for a layer without one), or None when no layer has a bias.
    bias: Array | None
    # End column of each layer's columns in ``weight_t``.
    stops: tuple[int, ...]

    @classmethod
    def of(cls, tensors: Mapping[str, Array], names: tuple[str, ...]) -> PreparedLinears:
        """Prepare ``names`` from a model's tensors."""
        sources = tuple(tensors[f"{name}.weight"] for name in names)
        weight_t = np.empty((sources[0].shape[1], sum(w.shape[0] for w in sources)), dtype=np.float32)
        biases = [tensors.get(f"{name}.bias") for name in names]
        bias = None if all(b is None for b in biases) else np.zeros(weight_t.shape[1], dtype=np.float32)
        stops: list[int] = []
        start = 0
        for weight, b in zip(sources, biases, strict=True):
            stop = start + weight.shape[0]
            weight_t[:, start:stop] = weight.T
            if bias is not None and b is not None:
                bias[start:stop] = b
            stops.append(stop)
            start = stop
        return cls(names=names, sources=sources, weight_t=weight_t, bias=bias, stops=tuple(stops))

    def made_from(self, tensors: Mapping[str, Array]) -> bool:
        """Whether the model's weights are still the ones this was made from."""
        return all(tensors.get(f"{name}.weight") is w for name, w in zip(self.names, self.sources, strict=True))

    def run(self, x: Array) -> list[Array]:
        """Each layer's ``x @ W.T + b``, a C-contiguous array of its own (one product per layer)."""
        outputs: list[Array] = []
        for start, stop in zip((0, *self.stops[:-1]), self.stops, strict=True):
            y: Array = x @ (self.weight_t if len(self.stops) == 1 else self.weight_t[:, start:stop])
            if self.bias is not None:
                y += self.bias[start:stop]
            outputs.append(y)
        return outputs


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
        self._prepared: dict[tuple[str, ...], PreparedLinears] = {}
        retain_freed_memory()
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

    def prepared(self, names: tuple[str, ...]) -> PreparedLinears:
        """The checkpoint weights of ``names`` as one product (:class:`PreparedLinears`), made on first use
        and again whenever one of their tensors was replaced."""
        group = self._prepared.get(names)
        if group is None or not group.made_from(self.tensors):
            group = PreparedLinears.of(self.tensors, names)
            self._prepared[names] = group
        return group

    def linear_group(self, names: tuple[str, ...], x: Array, overrides: Mapping[str, Array] | None, hook: Hook | None) -> list[Array]:
        """:meth:`linear` of every layer in ``names``, which all read ``x``: on the prepared weights
        (:class:`PreparedLinears`) when none of them is overridden, one on the kernels' joint weight where they can share one
        (:meth:`LinearKernels.run_group`), else one product per layer (the checkpoint's own weight, as it is,
        for a layer that is not overridden). Each output is reported to ``hook``."""
        if overrides is not None and any(name in overrides for name in names):
            joint = overrides.run_group(names, x) if len(names) > 1 and isinstance(overrides, LinearKernels) else None
            if joint is None:
                return [self._one_linear(name, x, overrides, hook) for name in names]
            outputs = joint
            for name, y in zip(names, outputs, strict=True):
                if self.linears[name].bias:
                    y += self.tensors[f"{name}.bias"]
        else:
            outputs = self.prepared(names).run(x)
        if hook is not None:
            for name, y in zip(names, outputs, strict=True):
                hook(name, x, y)
        return outputs

    def linear(self, name: str, x: Array, overrides: Mapping[str, Array] | None, hook: Hook | None) -> Array:
        """``x @ W.T (+ bias)`` for linear ``name`` (on its kernel when ``overrides`` are kernels), reported to ``hook``."""
        return self.linear_group((name,), x, overrides, hook)[0]

    def _one_linear(self, name: str, x: Array, overrides: Mapping[str, Array], hook: Hook | None) -> Array:
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


# Least row sum of ``exp(scores - max of all scores)`` accepted: below it a row's largest term may have lost precision
# to underflow (fp32 subnormals start at 1.2e-38), and the rows are shifted by their own maxima.
SOFTMAX_SHIFT_FLOOR = 1e-20


def exp_shifted(scores: Array, *, per_row: bool) -> Array:
    """``exp(scores - shift)`` in place, returning the row sums (the softmax is their ratio).

    ``per_row``: the shift is each row's maximum (the textbook stable softmax); else the largest
    score of the whole array, a single contiguous reduction, about 5x cheaper than a maximum per
    row, and as stable for every row whose sum stays above :data:`SOFTMAX_SHIFT_FLOOR` (check it).
    No term overflows; ``-inf`` entries (masked) become exact zeros; every row needs a finite entry.
    """
    scores -= scores.max(axis=-1, keepdims=True) if per_row else np.max(scores)
    np.exp(scores, out=scores)
    sums: Array = np.einsum("...j->...", scores)
    return sums


_CAUSAL: dict[int, Array] = {}


def causal_mask(length: int) -> Array:
    """``(T, T)`` additive mask: 0 on and below the diagonal, ``-inf`` above."""
    mask = _CAUSAL.get(length)
    if mask is None:
        mask = np.triu(np.full((length, length), -np.inf, dtype=np.float32), 1)
        if len(_CAUSAL) < 8:
            _CAUSAL[length] = mask
    return mask


def _scores(qs: Array, ks: Array, causal: bool) -> Array:
    """Scaled scores ``(KV, H / KV * T, T)`` of head-major queries (scale applied) and transposed keys."""
    scores: Array = np.matmul(qs, ks)
    if causal:
        n = scores.shape[-1]
        scores.reshape(scores.shape[0], -1, n, n)[...] += causal_mask(n)
    return scores


def attention(q: Array, k: Array, v: Array, batch: Batch, *, causal: bool) -> Array:
    """Scaled dot-product attention per sequence; ``q (N, H, hd)``, ``k, v (N, KV, hd)`` with ``H % KV == 0``.

    Grouped-query attention shares each key/value head among ``H / KV``
    consecutive query heads: those heads' queries are stacked into one product
    with their shared keys (no repeated copies of keys and values). The softmax
    is normalised after the product with the values (on ``hd`` columns instead
    of ``T``), in the division that writes the context out token-major.
    Returns ``(N, H * hd)``.
    """
    tokens, heads, dim = q.shape
    groups = k.shape[1]
    out = np.empty((tokens, heads * dim), dtype=np.float32)
    scale = np.float32(1.0 / np.sqrt(dim))
    for start, stop in batch.spans():
        n = stop - start
        # Head-major contiguous queries and keys (BLAS runs 2-3x faster than on the strided views); the scale
        # rides along with the queries.
        qs = np.multiply(q[start:stop].transpose(1, 0, 2), scale, order="C").reshape(groups, heads // groups * n, dim)
        ks = np.ascontiguousarray(k[start:stop].transpose(1, 2, 0))
        vs = v[start:stop].transpose(1, 0, 2)  # a view: BLAS reads it as fast as a head-major copy
        scores = _scores(qs, ks, causal)
        sums = exp_shifted(scores, per_row=False)
        if np.min(sums) < SOFTMAX_SHIFT_FLOOR:  # rows far below the largest score: shift each by its own
            scores = _scores(qs, ks, causal)
            sums = exp_shifted(scores, per_row=True)
        context = np.matmul(scores, vs).reshape(heads, n, dim)
        np.divide(context, sums.reshape(heads, n, 1), out=out[start:stop].reshape(n, heads, dim).transpose(1, 0, 2))
    return out
