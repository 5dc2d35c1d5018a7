"""The 2:4 sparse GEMM kernel on the target: its own model, not dense time x a ratio.

A cuSPARSELt 2:4 GEMM (``sm90_xmma_sparse_gemm_*_tilesize128x256x64_*`` on the
H200) splits the output into tiles of ``tile_m x tile_n`` (weight rows x tokens)
and runs them in waves over the GPU's SMs; each tile walks the whole reduction
(``in``) dimension. Its GPU time is modelled as

    max(memory floor, waves x in x seconds_per_k)

- **tile minimum**: ``waves = max(1, ceil(out / tile_m) x ceil(tokens / tile_n) / SMs)``
  is at least one, so a call never costs less than one tile walking all of ``in``,
  however few tokens fill it: at 16 tokens a 256-wide tile is 6% full, and a
  small ``in`` leaves each tile little work to amortise its wave. The *efficiency*
  of a problem is the share of the waves' tile area it fills
  (``out x tokens / (waves x SMs x tile_m x tile_n)``).
- **memory floor**: the compressed weight (half the values plus 2-bit metadata
  per kept value), input and output over the bandwidth the dense roofline fitted
  on the same GPU (the dense roofline *beside it*).
- ``seconds_per_k`` (one wave's time per reduction element, metadata decode
  included) is the one fitted parameter: the geometric mean of measured time over
  ``waves x in`` across every GPU-only sparse time (trace layers, Nsight Compute,
  per-call rows that the kernel sets), pooled over the 16-bit dtypes. The tile
  shape comes from the sparse kernel names in the traces; the SM count from the
  measured environment.

Residuals of that fit (log time) set the model's own spread; see
:mod:`sparsedebug.sources.target.interval` for how it widens away from the
measured points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sparsedebug.core.errors import InternalError
from sparsedebug.core.stats import median
from sparsedebug.records.notes import Note, note


@dataclass(frozen=True)
class Tile:
    """The sparse kernel's tile (weight rows x tokens x reduction) and how many tiles run at once."""

    m: int
    n: int
    k: int
    ctas: int
    label: str


@dataclass(frozen=True)
class SparsePoint:
    """One GPU-only time of a sparse GEMM at (out, in, tokens, dtype), merged over repeats."""

    out: int
    k: int
    tokens: int
    dtype: str
    ms: float
    label: str


@dataclass(frozen=True)
class SparseEstimate:
    """The sparse kernel model at one point."""

    ms: float
    waves: float
    efficiency: float
    memory_bound: bool
    note: Note


def sparse_bytes(out: int, k: int, tokens: int, itemsize: int) -> float:
    """Bytes one 2:4 call moves: half the weight values, 2 bits of metadata per kept value, input and output."""
    kept = out * k / 2
    return itemsize * kept + kept * 2 / 8 + itemsize * (k * tokens + out * tokens)


class SparseKernelModel:
    """``max(memory floor, waves x in x seconds_per_k)`` fitted to GPU-only sparse times (see the module docstring)."""

    def __init__(self, points: Sequence[SparsePoint], tile: Tile, bytes_per_ms: float, itemsize: int = 2) -> None:
        if not points:
            raise InternalError("SparseKernelModel: no points")
        self.tile = tile
        self.bytes_per_ms = bytes_per_ms
        self.itemsize = itemsize
        self.points = list(points)
        per_k = [p.ms / (self.waves(p.out, p.tokens) * p.k) for p in self.points]
        self.ms_per_k = math.exp(sum(math.log(v) for v in per_k) / len(per_k))
        self.residuals = [math.log(p.ms / self.at(p.out, p.k, p.tokens).ms) for p in self.points]

    def waves(self, out: int, tokens: int) -> float:
        """Tiles over the SMs, at least one wave (the persistent kernel spreads a partial last wave over its SMs)."""
        tiles = math.ceil(out / self.tile.m) * math.ceil(max(tokens, 1) / self.tile.n)
        return max(1.0, tiles / self.tile.ctas)

    def at(self, out: int, k: int, tokens: int) -> SparseEstimate:
        """GPU time (ms) of one sparse call."""
        waves = self.waves(out, tokens)
        compute = waves * k * self.ms_per_k
        memory = sparse_bytes(out, k, tokens, self.itemsize) / self.bytes_per_ms
        efficiency = out * tokens / (waves * self.tile.ctas * self.tile.m * self.tile.n)
        bound = memory > compute
        facts = note(
            "targets.sparse_kernel_model", waves=waves, tile_m=self.tile.m, tile_n=self.tile.n, ctas=self.tile.ctas, k=k,
            ns_per_k=self.ms_per_k * 1e6, compute_us=compute * 1e3, fill=efficiency, memory_us=memory * 1e3,
            gb_s=self.bytes_per_ms / 1e6, memory_bound=bound,
        )
        return SparseEstimate(max(compute, memory), waves, min(efficiency, 1.0), bound, facts)

    def sigma(self) -> float | None:
        """Standard deviation of the log residuals (one fitted parameter); None with fewer than two points."""
        n = len(self.residuals)
        if n < 2:
            return None
        return math.sqrt(sum(r * r for r in self.residuals) / (n - 1))



def merge_points(raw: Sequence[SparsePoint]) -> list[SparsePoint]:
    """One point per (out, in, tokens, dtype): the median of its repeats, labels joined."""
    groups: dict[tuple[int, int, int, str], list[SparsePoint]] = {}
    for p in raw:
        groups.setdefault((p.out, p.k, p.tokens, p.dtype), []).append(p)
    return [
        SparsePoint(o, k, t, d, median([p.ms for p in ps]), "; ".join(dict.fromkeys(p.label for p in ps)))
        for (o, k, t, d), ps in sorted(groups.items())
    ]
