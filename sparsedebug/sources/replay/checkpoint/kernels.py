"""The replay's kernels inside a real model's forward: one kernel per linear, timed where it runs.

A :class:`ModelKernels` is passed to the model's forward in place of
replacement weights (:class:`~sparsedebug.sources.models.base.LinearKernels`):
every linear then runs on its own kernel at its own precision, the dense BLAS
product or the built-in per-row N:M / blocked V:N:M kernel, with the weights
converted once at load or on every call. Operands are rounded to the layer's
input format (fp16 and bf16 emulated, fp32 accumulation), as the declared
graphs' replay does.

With a :class:`ForwardTrace` attached, each forward records, per linear call,
the host work before the layer's compute (per-call conversion) and the
compute time of the sparse kernels. The schedule stage reads busy time as the
forward's span minus that host work: attention, norms and activations count
as compute, run on the dense path.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsedebug.kernels.masks import Pattern
from sparsedebug.kernels.nm import NMWeight
from sparsedebug.kernels.precision import Precision, round_input
from sparsedebug.kernels.vnm import VNMWeight, compress
from sparsedebug.sources.models.base import Array, LinearKernels


@dataclass
class LayerKernel:
    """One linear's kernel: its weight rounded to its input format, dense or compressed."""

    name: str
    # The (pruned) fp32 weight, as the layer's replacement weight.
    weight: Array
    precision: Precision
    # Set when the layer runs on a sparse kernel.
    pattern: Pattern | None = None
    per_call: bool = False
    rounded: Array = field(init=False)
    # The dense path's rounded weight transposed, ``(in, out)`` with unit column stride, where rounding made a copy
    # (fp16, bf16): OpenBLAS multiplies ``x @ rounded_t`` 10-20% faster than ``x @ rounded.T``.
    rounded_t: Array | None = field(init=False, default=None)
    handle: NMWeight | VNMWeight | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.rounded = np.ascontiguousarray(round_input(self.weight, self.precision), dtype=np.float32)
        if self.pattern is not None:
            if not self.per_call:
                self.handle = self.convert()
        elif not np.shares_memory(self.rounded, self.weight):
            # The rounding made a copy: keep it transposed instead (``rounded`` is its (out, in) view). An fp32
            # layer runs on the weight itself, as it is, rather than on a second copy.
            self.rounded_t = np.ascontiguousarray(self.rounded.T)
            self.rounded = self.rounded_t.T

    @property
    def sparse(self) -> bool:
        """Whether the layer runs on a sparse kernel."""
        return self.pattern is not None

    def convert(self) -> NMWeight | VNMWeight:
        """Compress the rounded weight into the pattern's layout (host work)."""
        assert self.pattern is not None
        return compress(self.rounded, self.pattern)

    def prepared(self) -> NMWeight | VNMWeight | None:
        """The handle for one call: converted now when conversion is per call."""
        if self.pattern is not None and self.per_call:
            return self.convert()
        return self.handle

    def compute(self, x: Array, handle: NMWeight | VNMWeight | None, rounded: Array | None = None) -> Array:
        """``x @ W.T`` for activations ``x (tokens, in)``, operands rounded per the layer's precision
        (``rounded``: ``x`` already rounded to it)."""
        xr = round_input(x, self.precision) if rounded is None else rounded
        if handle is None:
            dense: Array = xr @ (self.rounded.T if self.rounded_t is None else self.rounded_t)
            return dense
        out: Array = np.ascontiguousarray(handle.matmul(xr.T, "fp32").T)
        return out

    def __call__(self, x: Array) -> Array:
        """One call as the forward makes it: conversion (when per call), then compute."""
        return self.compute(x, self.prepared())


@dataclass
class ForwardTrace:
    """Per forward: host time before layer compute, sparse-kernel time; per layer and call: the host time."""

    host_ms: list[float] = field(default_factory=list)
    sparse_ms: list[float] = field(default_factory=list)
    layer_host_ms: dict[str, list[float]] = field(default_factory=dict)
    _host: float = 0.0
    _sparse: float = 0.0

    def begin(self) -> None:
        """A forward starts."""
        self._host = self._sparse = 0.0

    def add(self, name: str, host_s: float, compute_s: float, sparse: bool) -> None:
        """One linear call: host seconds before its compute, and its compute seconds."""
        self._host += host_s
        if sparse:
            self._sparse += compute_s
        self.layer_host_ms.setdefault(name, []).append(host_s * 1000.0)

    def end(self) -> None:
        """The forward ended."""
        self.host_ms.append(self._host * 1000.0)
        self.sparse_ms.append(self._sparse * 1000.0)


class ModelKernels(LinearKernels):
    """Kernels for every linear of one model variant (candidate, dense baseline, narrowed dense)."""

    def __init__(self, kernels: Mapping[str, LayerKernel]) -> None:
        self.kernels = dict(kernels)
        self.trace: ForwardTrace | None = None
        self._last_input: tuple[Array, Precision, Array] | None = None

    def rounded_input(self, x: Array, precision: Precision) -> Array:
        """``x`` rounded to ``precision``'s input format, once for consecutive layers that read the same
        activations (q, k and v; gate and up).

        The last input is kept (so its identity stays its own) and made read-only, so a forward
        that changed it in place afterwards would fail loudly instead of reading a stale rounding.
        """
        last = self._last_input
        if last is not None and last[0] is x and last[1] == precision:
            return last[2]
        rounded = round_input(x, precision)
        if precision in ("fp16", "bf16"):
            x.flags.writeable = False
            self._last_input = (x, precision, rounded)
        return rounded

    def run_group(self, names: tuple[str, ...], x: Array) -> list[Array] | None:
        """The products of layers that are all dense at one precision, on one rounding of ``x``: one
        product per layer on its own rounded weight, into its own C-contiguous output (a joint product's
        column slices slow the forward's elementwise passes 2-3x, as models.base.PreparedLinears says).
        None for a group with a sparse layer or mixed precisions."""
        kernels = [self.kernels.get(name) for name in names]
        dense = [k for k in kernels if k is not None and k.rounded_t is not None]
        if len(dense) != len(names) or len({k.precision for k in dense}) != 1:
            return None
        clock = time.perf_counter
        start = clock()
        rounded = self.rounded_input(x, dense[0].precision)
        outputs = [rounded @ k.rounded_t for k in dense if k.rounded_t is not None]
        if self.trace is not None:
            share = (clock() - start) / len(names)
            for name in names:
                self.trace.add(name, 0.0, share, False)
        return outputs

    def __getitem__(self, name: str) -> Array:
        return self.kernels[name].weight

    def __iter__(self) -> Iterator[str]:
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def run(self, name: str, x: Array) -> Array | None:
        """Run linear ``name`` on its kernel, timing host work and compute when a trace is attached."""
        kernel = self.kernels.get(name)
        if kernel is None:
            return None
        if self.trace is None:
            return kernel.compute(x, kernel.prepared(), self.rounded_input(x, kernel.precision))
        clock = time.perf_counter
        start = clock()
        handle = kernel.prepared()
        ready = clock()
        out = kernel.compute(x, handle, self.rounded_input(x, kernel.precision))
        self.trace.add(name, ready - start, clock() - ready, kernel.sparse)
        return out


def dense_kernels(weights: Mapping[str, Array], precisions: Mapping[str, Precision]) -> ModelKernels:
    """Every layer on the dense path at its precision."""
    return ModelKernels({name: LayerKernel(name, weights[name], precisions[name]) for name in weights})


def candidate_kernels(
    weights: Mapping[str, Array], precisions: Mapping[str, Precision], sparse: Mapping[str, Pattern], per_call: bool
) -> ModelKernels:
    """The candidate: the layers in ``sparse`` on their pattern's kernel (converted per call or once), the rest dense."""
    return ModelKernels(
        {
            name: LayerKernel(name, weights[name], precisions[name], sparse.get(name), per_call and name in sparse)
            for name in weights
        }
    )


def timed_forward(kernels: ModelKernels, run: Any) -> Any:
    """Run ``run()`` as one traced forward of ``kernels`` (begin/end around it)."""
    trace = kernels.trace
    if trace is not None:
        trace.begin()
    try:
        return run()
    finally:
        if trace is not None:
            trace.end()
