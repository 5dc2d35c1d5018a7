"""Blocked V:N:M layout: blocks of V rows share one N-of-M choice per group.

Because every row of a block uses the same kept columns, the block's product is
a plain dense GEMM on the reduced inner dimension ``K*N/M``: gather the chosen
activation rows once per block, then one BLAS call. On a CPU this approaches the
physical limit of skipping the pruned work, the time of a dense GEMM with inner
dimension ``K*N/M``. The block size trades speed (bigger blocks, fewer gathers)
against quality (smaller blocks prune closer to per-row N:M).

Cost model: besides the half-K GEMM work, every block copies its ``K*N/M x T``
slice of the activations twice, once in the gather and once when BLAS packs
that operand for the call; a single half-K GEMM packs it once. The extra copy
traffic per block is about ``2*K*N/M*T`` elements against ``2*V*K*N/M*T`` flops,
so the overhead shrinks as ``1/V``: when ``T`` is small the product is bound by
reading the weights and the blocked kernel runs near the limit, when ``T`` is
large (compute-bound) small blocks pay a visible share (see
``benchmarks/kernel_block_sweep.py``).

Storage: ``values (rows, K*N/M)`` (each block's rows are contiguous), packed
per-block positions (``blocks x K*N/M`` indices at the same bit width as the
per-row layout), and the absolute gather indices derived from them once at
construction (counted separately as runtime index bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern, check_nm, check_weight, vnm_choice
from sparsedebug.kernels.nm import Footprint, NMWeight, _values_dtype, check_x, index_bits, pack_indices, unpack_indices
from sparsedebug.kernels.precision import Precision, check_precision, compute_dtype, round_input


class VNMWeight:
    """A weight in blocked ``V:N:M`` form: per-block kept columns, values stored compressed."""

    def __init__(
        self, values: npt.NDArray[Any], metadata: npt.NDArray[np.uint8], k: int, n: int, m: int, block: int
    ) -> None:
        """Wrap already compressed arrays; prefer :meth:`compress`."""
        check_nm(n, m)
        if block < 1:
            raise UserError(f"block V={block} must be at least 1")
        rows, kept = values.shape
        if k % m != 0 or kept != k // m * n:
            raise UserError(f"values: shape {values.shape} does not fit K={k} with pattern {n}:{m}")
        blocks = -(-rows // block)
        if metadata.shape[0] != blocks:
            raise UserError(f"metadata: {metadata.shape[0]} blocks, expected {blocks} for {rows} rows and V={block}")
        self.values = values
        self.metadata = metadata
        self.n = n
        self.m = m
        self.block = block
        self._shape = (rows, k)
        positions = unpack_indices(metadata, index_bits(m), kept).astype(np.intp)
        group_base = np.repeat(np.arange(k // m, dtype=np.intp) * m, n)
        # Absolute input indices each block reads, ``(blocks, K*N/M)`` (derived from metadata).
        self.gather = np.ascontiguousarray(positions + group_base[None, :])

    @classmethod
    def compress(cls, weight: Any, n: int, m: int, block: int, scores: Any = None) -> VNMWeight:
        """Prune ``weight`` to ``block:n:m`` by summed magnitude (or ``scores``) and compress it.

        ``block`` may be anything from 1 to the row count (or more: one block);
        the last block is shorter when ``block`` does not divide the rows.
        """
        arr = check_weight(weight, m)
        rows, k = arr.shape
        block = min(block, rows) if block >= 1 else block
        choice = vnm_choice(arr, n, m, block, scores)  # (blocks, groups, n)
        blocks, groups, _ = choice.shape
        metadata = pack_indices(choice.reshape(blocks, groups * n), index_bits(m))
        gather = choice.astype(np.intp) + (np.arange(groups, dtype=np.intp) * m)[None, :, None]
        gather = gather.reshape(blocks, groups * n)
        row_gather = np.repeat(gather, block, axis=0)[:rows]
        values = np.take_along_axis(arr, row_gather, axis=1)
        values = np.ascontiguousarray(values, dtype=_values_dtype(arr.dtype))
        return cls(values, metadata, k, n, m, block)

    @property
    def shape(self) -> tuple[int, int]:
        """Dense shape ``(out, in)``."""
        return self._shape

    @property
    def pattern(self) -> Pattern:
        """The ``V:N:M`` pattern."""
        return Pattern(n=self.n, m=self.m, block=self.block)

    @property
    def blocks(self) -> int:
        """Number of row blocks."""
        return int(self.gather.shape[0])

    def decompress(self) -> npt.NDArray[Any]:
        """The dense masked weight, exactly."""
        rows, k = self._shape
        out = np.zeros(self._shape, dtype=self.values.dtype)
        row_gather = np.repeat(self.gather, self.block, axis=0)[:rows]
        np.put_along_axis(out, row_gather, self.values, axis=1)
        return out

    def matmul(self, x: Any, precision: Precision = "fp32") -> npt.NDArray[Any]:
        """``W @ x`` for ``x`` of shape ``(K, T)``: one gather and one BLAS call per block."""
        check_precision(precision)
        rows, k = self._shape
        xr = np.ascontiguousarray(round_input(check_x(x, k), precision))
        dtype = compute_dtype(precision)
        values = self.values if self.values.dtype == dtype and precision in ("fp32", "fp64") else round_input(self.values, precision)
        tokens = xr.shape[1]
        out = np.empty((rows, tokens), dtype=dtype)
        gathered = np.empty((self.gather.shape[1], tokens), dtype=dtype)
        # Rows of X as single opaque items: the gather copies whole rows (one memcpy each).
        row_items = np.dtype((np.void, tokens * xr.itemsize))
        x_rows = xr.view(row_items).reshape(k)
        gathered_rows = gathered.view(row_items).reshape(-1)
        for b in range(self.blocks):
            start = b * self.block
            stop = min(rows, start + self.block)
            # mode="clip" skips numpy's bounds-checked buffered path; indices are valid by construction
            np.take(x_rows, self.gather[b], out=gathered_rows, mode="clip")
            np.matmul(values[start:stop], gathered, out=out[start:stop])
        return out

    def footprint(self) -> Footprint:
        """Bytes of values, of packed per-block metadata, and of the dense equivalent."""
        return Footprint.of(self.values, self.metadata, self._shape)

    def runtime_index_bytes(self) -> int:
        """Bytes of the derived absolute gather indices held in memory for speed."""
        return int(self.gather.nbytes)


def compress(weight: Any, pattern: Pattern) -> NMWeight | VNMWeight:
    """Compress an (already pruned) ``(out, in)`` weight into the layout of ``pattern``: per-row N:M or blocked V:N:M."""
    if pattern.block is None:
        return NMWeight.compress(weight, pattern.n, pattern.m)
    return VNMWeight.compress(weight, pattern.n, pattern.m, pattern.block)
