"""The replay's executor: a workload's layers as numpy ops, the forward pass, and its output quality.

``build_ops`` turns each layer into an :class:`Op` (dense BLAS, per-row N:M or blocked
V:N:M linear, attention, norms, activations, elementwise) at the workload's precision;
``forward`` runs them in order, optionally timing each op; ``quality`` compares an
output with the dense reference (cosine, relative error, task accuracy).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.nm import NMWeight
from sparsedebug.kernels.precision import Precision, compute_dtype, round_input
from sparsedebug.kernels.vnm import VNMWeight, compress
from sparsedebug.records.run import (
    KernelPath,
    QualityDelta,
)
from sparsedebug.sources.workload.graph import LayerShape
from sparsedebug.sources.workload.lowering import Decision
from sparsedebug.sources.workload.schema import Layer, Workload

Array = npt.NDArray[Any]


def _rmsnorm(x: Array, gain: Array, eps: float = 1e-5) -> Array:
    scale = 1.0 / np.sqrt(np.mean(x * x, axis=0, keepdims=True) + eps)
    out: Array = x * scale * gain[:, None]
    return out


def _layernorm(x: Array, gain: Array, eps: float = 1e-5) -> Array:
    centred = x - x.mean(axis=0, keepdims=True)
    scale = 1.0 / np.sqrt(np.mean(centred * centred, axis=0, keepdims=True) + eps)
    out: Array = centred * scale * gain[:, None]
    return out


def _activation(fn: str, x: Array) -> Array:
    if fn == "silu":
        # sigmoid(x) = (1 + tanh(x / 2)) / 2: no overflow for large |x|
        out: Array = 0.5 * x * (1.0 + np.tanh(0.5 * x))
        return out
    if fn == "relu":
        return np.maximum(x, 0)
    # gelu, tanh approximation
    c = x.dtype.type(np.sqrt(2.0 / np.pi))
    inner = c * (x + x.dtype.type(0.044715) * x * x * x)
    gelu: Array = (0.5 * x * (1.0 + np.tanh(inner))).astype(x.dtype, copy=False)
    return gelu


def attention(q: Array, k: Array, v: Array, heads: int, kv_heads: int, batch: int, seq: int, causal: bool) -> Array:
    """Scaled dot-product attention on ``(features, tokens)`` activations (tokens = batch x sequence)."""
    dim = q.shape[0]
    hd = dim // heads
    q4 = q.reshape(heads, hd, batch, seq).transpose(2, 0, 3, 1)
    k4 = k.reshape(kv_heads, hd, batch, seq).transpose(2, 0, 3, 1)
    v4 = v.reshape(kv_heads, hd, batch, seq).transpose(2, 0, 3, 1)
    if kv_heads != heads:
        k4 = np.repeat(k4, heads // kv_heads, axis=1)
        v4 = np.repeat(v4, heads // kv_heads, axis=1)
    scores = (q4 @ k4.transpose(0, 1, 3, 2)) * q.dtype.type(1.0 / np.sqrt(hd))
    if causal:
        scores = np.where(np.triu(np.ones((seq, seq), dtype=bool), 1), -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = weights @ v4
    result: Array = np.ascontiguousarray(out.transpose(1, 3, 0, 2).reshape(dim, batch * seq))
    return result


@dataclass
class Op:
    """One executable layer: compute on its inputs; optional per-call conversion before it."""

    layer: Layer
    # Indices of earlier ops; -1 is the model input.
    inputs: list[int]
    compute: Callable[[list[Array], Any], Array]
    # Run before every call when conversion is per call (host work, outside busy time).
    convert: Callable[[], Any] | None = None
    dense_path: bool = True
    handle: Any = None


def _dense_linear(weight: Array, precision: Precision) -> Callable[[list[Array], Any], Array]:
    wr = np.ascontiguousarray(round_input(weight, precision))

    def compute(args: list[Array], _: Any) -> Array:
        out: Array = wr @ round_input(args[0], precision)
        return out

    return compute


def _compress(weight32: Array, decision_layer: Layer) -> NMWeight | VNMWeight:
    pattern = decision_layer.pattern
    assert pattern is not None
    return compress(weight32, pattern)


def _nonlinear(layer: Layer, weight: Array | None, dtype: type[np.floating[Any]], workload: Workload) -> Callable[[list[Array], Any], Array]:
    fn = layer.function
    gain = None if weight is None else weight.astype(dtype)
    if layer.op == "norm":
        assert gain is not None
        norm = _rmsnorm if fn == "rmsnorm" else _layernorm
        return lambda args, _: norm(args[0], gain)
    if layer.op == "embedding":
        assert gain is not None
        table = np.ascontiguousarray(gain.T)
        return lambda args, _: np.ascontiguousarray(table[:, args[0]])
    if layer.op == "activation":
        assert fn is not None
        return lambda args, _: _activation(fn, args[0])
    if layer.op == "elementwise":
        if fn == "mul":
            def mul(args: list[Array], _: Any) -> Array:
                out = args[0] * args[1]
                for extra in args[2:]:
                    out = out * extra
                return out

            return mul

        def add(args: list[Array], _: Any) -> Array:
            out = args[0] + args[1]
            for extra in args[2:]:
                out = out + extra
            return out

        return add
    if layer.op == "attention":
        heads = layer.heads or 1
        kv_heads = layer.kv_heads or heads
        batch, seq = workload.tokens.batch, workload.tokens.sequence
        return lambda args, _: attention(args[0], args[1], args[2], heads, kv_heads, batch, seq, layer.causal)
    raise UserError(f"layer {layer.name!r}: op {layer.op!r} cannot be executed")


def build_ops(
    workload: Workload,
    shapes: Sequence[LayerShape],
    tensors: dict[str, Array],
    *,
    mode: str,
    decisions: dict[str, Decision] | None = None,
) -> list[Op]:
    """Executable ops for one model variant.

    ``mode``: ``reference`` (fp64, dense), ``dense`` (dense at each layer's
    precision) or ``candidate`` (sparse layers per ``decisions``, converted
    once or per call as the workload says).
    """
    index = {s.name: i for i, s in enumerate(shapes)}
    ops: list[Op] = []
    for layer, shape in zip(workload.layers, shapes, strict=True):
        inputs = [-1 if name == "input" else index[name] for name in shape.inputs]
        precision: Precision = "fp64" if mode == "reference" else workload.dtype_of(layer)
        dtype = compute_dtype(precision)
        weight = tensors.get(layer.name)
        if layer.op != "linear":
            ops.append(Op(layer, inputs, _nonlinear(layer, weight, dtype, workload)))
            continue
        assert weight is not None
        sparse = mode == "candidate" and decisions is not None and decisions[layer.name].path is KernelPath.SPARSE
        if not sparse:
            ops.append(Op(layer, inputs, _dense_linear(weight, precision)))
            continue
        # Round the weight to the input format once, before compressing, and round the activations
        # here: the kernel then multiplies in fp32 exactly as matmul(x, precision) would (rounding is
        # idempotent) without re-rounding the stored values on every call.
        weight32 = np.ascontiguousarray(round_input(weight, precision), dtype=np.float32)

        def compute(args: list[Array], handle: Any, _p: Precision = precision) -> Array:
            out: Array = handle.matmul(round_input(args[0], _p), "fp32")
            return out

        def convert(_w: Array = weight32, _l: Layer = layer) -> Any:
            return _compress(_w, _l)

        op = Op(layer, inputs, compute, dense_path=False)
        if workload.conversion == "per_call":
            op.convert = convert
        else:
            op.handle = convert()
        ops.append(op)
    return ops


@dataclass
class ForwardTrace:
    """Per-call timing inside forwards: busy time and per-layer compute time (ms)."""

    busy_ms: list[float] = field(default_factory=list)
    dense_ms: list[float] = field(default_factory=list)
    # Per op, per call: time from the previous op's end (or the forward's start) to this op's compute.
    gaps_ms: list[list[float]] = field(default_factory=list)


def forward(ops: Sequence[Op], x: Array, trace: ForwardTrace | None = None, keep: bool = False) -> tuple[Array, list[Array]]:
    """Run the ops on the model input; returns the output and (with ``keep``) every layer output."""
    values: list[Array] = []
    clock = time.perf_counter
    busy = 0.0
    dense = 0.0
    gaps: list[float] = []
    end = clock()
    for op in ops:
        args = [x if i < 0 else values[i] for i in op.inputs]
        handle = op.convert() if op.convert is not None else op.handle
        start = clock()
        out = op.compute(args, handle)
        gaps.append(start - end)
        end = clock()
        spent = end - start
        busy += spent
        if op.dense_path:
            dense += spent
        values.append(out)
    if trace is not None:
        trace.busy_ms.append(busy * 1000.0)
        trace.dense_ms.append(dense * 1000.0)
        if not trace.gaps_ms:
            trace.gaps_ms = [[] for _ in ops]
        for samples, gap in zip(trace.gaps_ms, gaps, strict=True):
            samples.append(gap * 1000.0)
    return values[-1], (values if keep else [])


def _input_for(x: Array, precision: Precision) -> Array:
    if np.issubdtype(x.dtype, np.integer):
        return x
    return np.ascontiguousarray(x, dtype=compute_dtype(precision))


def quality(output: Array, reference: Array, labels: npt.NDArray[np.int64] | None = None, reference_accuracy: float | None = None) -> QualityDelta:
    """Cosine and relative error of ``output`` versus ``reference`` (and accuracy with labels)."""
    a = np.asarray(output, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    cosine = float(a @ b / denom) if denom > 0 else 0.0
    ref_norm = float(np.linalg.norm(b))
    rel = float(np.linalg.norm(a - b) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(a - b))
    accuracy = None if labels is None else accuracy_of(output, labels)
    return QualityDelta(cosine=cosine, rel_err=rel, accuracy=accuracy, dense_accuracy=reference_accuracy)


def accuracy_of(output: Array, labels: npt.NDArray[np.int64]) -> float:
    """Fraction of tokens whose argmax over output features equals the label."""
    return float(np.mean(np.argmax(output, axis=0) == labels))
