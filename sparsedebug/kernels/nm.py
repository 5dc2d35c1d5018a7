"""Per-row N:M layout: compressed values plus compact index metadata.

This is what sparse tensor cores execute: every row keeps ``N`` values out of
each group of ``M`` consecutive inputs, stored densely as ``values`` of shape
``(rows, K*N/M)``, plus, for each kept value, its position inside its group.
Positions are bit-packed like the hardware stores them: 2 bits for M <= 4 (so
2:4 costs 2 bits per kept value), 1 bit for M = 2, 4 bits for M <= 16; never
more than one uint8 per kept value.

The product ``W @ X`` (``X`` of shape ``(K, T)``) walks the rows in tiles:
each tile's metadata is unpacked, its values are scattered into a scratch
buffer and one BLAS call multiplies it. The scratch buffer lives only for the
call; no dense copy of the weights is kept between calls. On a CPU this does the
dense amount of arithmetic (the per-row index choice defeats BLAS otherwise), so
it is the correctness and precision reference, not the fast path: see
``sparsedebug.kernels.vnm`` for the layout that skips the pruned work.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ConfigDict

from sparsedebug.core.errors import InternalError, UserError
from sparsedebug.kernels.masks import Pattern, check_nm, check_weight, nm_choice
from sparsedebug.kernels.precision import Precision, check_precision, compute_dtype, round_input
from sparsedebug.records.base import Record

# Dense elements per scratch tile of the per-row product (16 MiB in fp32). Large on purpose: few BLAS calls, so the
# tile loop costs little even when other processes compete for the cores (every threaded BLAS call pays a
# synchronisation).
TILE_ELEMENTS = 1 << 22


class Footprint(Record):
    """Bytes a layout stores: values, index metadata, and the dense equivalent."""

    model_config = ConfigDict(frozen=True)

    value_bytes: int
    metadata_bytes: int
    dense_bytes: int

    @classmethod
    def of(cls, values: npt.NDArray[Any], metadata: npt.NDArray[Any], shape: tuple[int, int]) -> Footprint:
        """Footprint of compressed ``values`` and ``metadata`` standing for a dense ``shape`` of the same dtype."""
        return cls(
            value_bytes=int(values.nbytes),
            metadata_bytes=int(metadata.nbytes),
            dense_bytes=int(shape[0] * shape[1] * values.dtype.itemsize),
        )

    @property
    def total_bytes(self) -> int:
        """Values plus metadata."""
        return self.value_bytes + self.metadata_bytes

    @property
    def ratio(self) -> float:
        """Stored bytes over dense bytes (below 1 means smaller)."""
        return self.total_bytes / self.dense_bytes


def index_bits(m: int) -> int:
    """Bits per stored in-group position: 1 for M=2, 2 for M<=4, 4 for M<=16."""
    if m <= 2:
        return 1
    if m <= 4:
        return 2
    if m <= 16:
        return 4
    return 8


def pack_indices(indices: npt.NDArray[np.uint8], bits: int) -> npt.NDArray[np.uint8]:
    """Bit-pack the last axis of ``indices`` (values < 2**bits), little end first, per leading row."""
    per_byte = 8 // bits
    lead, count = indices.shape
    padded_count = -(-count // per_byte) * per_byte
    padded = np.zeros((lead, padded_count), dtype=np.uint8)
    padded[:, :count] = indices
    lanes = padded.reshape(lead, padded_count // per_byte, per_byte)
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    packed: npt.NDArray[np.uint8] = np.bitwise_or.reduce(lanes << shifts, axis=2).astype(np.uint8)
    return packed


def unpack_indices(packed: npt.NDArray[np.uint8], bits: int, count: int) -> npt.NDArray[np.uint8]:
    """Inverse of :func:`pack_indices`: ``(lead, count)`` uint8 positions."""
    per_byte = 8 // bits
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    mask = np.uint8((1 << bits) - 1)
    lanes = (packed[:, :, None] >> shifts) & mask
    flat: npt.NDArray[np.uint8] = lanes.reshape(packed.shape[0], -1)[:, :count]
    return flat


@functools.lru_cache(maxsize=None)
def _byte_offsets(n: int, m: int) -> npt.NDArray[np.intp]:
    """For each metadata byte value: the column offsets (within the byte's span) it encodes."""
    bits = index_bits(m)
    per_byte = 8 // bits
    byte = np.arange(256, dtype=np.intp)
    slot = np.arange(per_byte, dtype=np.intp)
    positions = (byte[:, None] >> (slot * bits)[None, :]) & ((1 << bits) - 1)
    table: npt.NDArray[np.intp] = positions + (slot // n * m)[None, :]
    return table


def check_x(x: Any, k: int, what: str = "x") -> npt.NDArray[Any]:
    """Validate activations: 2-D ``(K, T)`` floating, finite, ``K`` matching the weight."""
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise UserError(f"{what}: expected a 2-D (K, tokens) matrix, got {arr.ndim}-D shape {tuple(arr.shape)}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise UserError(f"{what}: dtype {arr.dtype} is not a floating type")
    if arr.shape[0] != k:
        raise UserError(f"{what}: has {arr.shape[0]} rows but the weight has K={k} inputs")
    if arr.shape[1] == 0:
        raise UserError(f"{what}: no tokens (shape {tuple(arr.shape)})")
    # A sum is NaN/inf whenever an element is; only an overflowing sum needs the full check.
    with np.errstate(over="ignore", invalid="ignore"):
        total = arr.sum()
    if not np.isfinite(total) and not np.isfinite(arr).all():
        raise UserError(f"{what}: NaN or inf value(s) in the activations")
    return arr


def _values_dtype(dtype: np.dtype[Any]) -> type[np.floating[Any]]:
    return np.float64 if dtype == np.float64 else np.float32


class NMWeight:
    """A weight in per-row ``N:M`` form: ``values (rows, K*N/M)`` + packed positions."""

    def __init__(self, values: npt.NDArray[Any], metadata: npt.NDArray[np.uint8], k: int, n: int, m: int) -> None:
        """Wrap already compressed arrays; prefer :meth:`compress`."""
        check_nm(n, m)
        rows, kept = values.shape
        if k % m != 0 or kept != k // m * n:
            raise UserError(f"values: shape {values.shape} does not fit K={k} with pattern {n}:{m}")
        self.values = values
        self.metadata = metadata
        self.n = n
        self.m = m
        self._shape = (rows, k)

    @classmethod
    def compress(cls, weight: Any, n: int, m: int, scores: Any = None) -> NMWeight:
        """Prune ``weight`` (out, in) to ``n:m`` by magnitude (or ``scores``) and compress it.

        An already compliant weight round-trips exactly: :meth:`decompress` gives it back.
        """
        arr = check_weight(weight, m)
        choice = nm_choice(arr, n, m, scores)
        rows, k = arr.shape
        groups = k // m
        values = np.take_along_axis(arr.reshape(rows, groups, m), choice.astype(np.intp), axis=2)
        values = np.ascontiguousarray(values.reshape(rows, groups * n), dtype=_values_dtype(arr.dtype))
        metadata = pack_indices(choice.reshape(rows, groups * n), index_bits(m))
        return cls(values, metadata, k, n, m)

    @property
    def shape(self) -> tuple[int, int]:
        """Dense shape ``(out, in)``."""
        return self._shape

    @property
    def pattern(self) -> Pattern:
        """The ``N:M`` pattern."""
        return Pattern(n=self.n, m=self.m)

    def positions(self, start: int = 0, stop: int | None = None) -> npt.NDArray[np.uint8]:
        """Unpacked in-group positions of rows ``start:stop``, shape ``(rows, K/M, N)``."""
        packed = self.metadata[start:stop]
        kept = self.values.shape[1]
        flat = unpack_indices(packed, index_bits(self.m), kept)
        return flat.reshape(packed.shape[0], kept // self.n, self.n)

    def _columns(self, start: int, stop: int, row_stride: int = 0) -> npt.NDArray[np.intp]:
        """Column of every kept value of rows ``start:stop``, shape ``(rows, K*N/M)``.

        With ``row_stride``, row ``i`` of the span is offset by ``i * row_stride``,
        giving flat indices into a C-contiguous ``(rows, row_stride)`` buffer.
        When a metadata byte holds whole groups (2:4, 1:4, 1:2, 2:8, ...), one lookup
        table maps each byte straight to its column offsets; otherwise positions are
        unpacked and offset by their group's first column.
        """
        packed = self.metadata[start:stop]
        rows = packed.shape[0]
        kept = self.values.shape[1]
        bits = index_bits(self.m)
        per_byte = 8 // bits
        row_offset = (np.arange(rows, dtype=np.intp) * row_stride)[:, None]
        if per_byte % self.n == 0 and kept % per_byte == 0:
            span = per_byte // self.n * self.m  # dense columns covered by one byte
            cols = np.take(_byte_offsets(self.n, self.m), packed, axis=0)  # (rows, bytes, per_byte)
            cols += (np.arange(packed.shape[1], dtype=np.intp) * span)[None, :, None] + row_offset[:, :, None]
            return cols.reshape(rows, kept)
        pos = unpack_indices(packed, bits, kept).astype(np.intp)
        pos += np.repeat(np.arange(kept // self.n, dtype=np.intp) * self.m, self.n)[None, :] + row_offset
        return pos

    def _scatter(self, out: npt.NDArray[Any], start: int, stop: int, values: npt.NDArray[Any]) -> None:
        """Write rows ``start:stop`` into the zeroed, C-contiguous ``out`` (shape ``(stop-start, K)``)."""
        if not out.flags.c_contiguous:
            raise InternalError("scatter target must be C-contiguous (a reshape would copy)")
        flat = self._columns(start, stop, row_stride=self._shape[1])
        out.reshape(-1)[flat.reshape(-1)] = values[start:stop].reshape(-1)

    def decompress(self) -> npt.NDArray[Any]:
        """The dense masked weight, exactly (same values, zeros elsewhere)."""
        rows, k = self._shape
        out = np.zeros(self._shape, dtype=self.values.dtype)
        tile = max(1, min(rows, TILE_ELEMENTS // k))
        for start in range(0, rows, tile):
            stop = min(rows, start + tile)
            self._scatter(out[start:stop], start, stop, self.values)
        return out

    def matmul(self, x: Any, precision: Precision = "fp32") -> npt.NDArray[Any]:
        """``W @ x`` for ``x`` of shape ``(K, T)``, operands rounded per ``precision``.

        Accumulates in fp32 (fp64 for ``"fp64"``). Returns ``(out, T)`` in the compute dtype.
        """
        check_precision(precision)
        rows, k = self._shape
        xr = np.ascontiguousarray(round_input(check_x(x, k), precision))
        dtype = compute_dtype(precision)
        values = self.values if self.values.dtype == dtype and precision in ("fp32", "fp64") else round_input(self.values, precision)
        out = np.empty((rows, xr.shape[1]), dtype=dtype)
        tile = max(1, min(rows, TILE_ELEMENTS // k))
        scratch = np.empty((tile, k), dtype=dtype)
        for start in range(0, rows, tile):
            stop = min(rows, start + tile)
            dense = scratch[: stop - start]
            dense.fill(0)
            self._scatter(dense, start, stop, values)
            np.matmul(dense, xr, out=out[start:stop])
        return out

    def footprint(self) -> Footprint:
        """Bytes of values, of packed metadata, and of the dense equivalent (same dtype)."""
        return Footprint.of(self.values, self.metadata, self._shape)
