"""Interpolation over measured (weight shape, token count) points, in log tokens and log FLOPs.

A :class:`Surface` holds the measured times of one path and dtype, one point per
(out, in, tokens). A query is answered in two steps:

1. **Shape.** A roofline ``max(floor, bytes / bandwidth, FLOPs / throughput)`` is
   fitted to every point (least squares on log time; ``bytes`` is the weight,
   input and output of one call). It gives the curve its shape between and
   beyond the points: flat where a call is launch-bound, proportional to bytes
   where it is memory-bound, to FLOPs where it is compute-bound.
2. **Residual.** The log ratio of each measured time to the roofline is
   interpolated piecewise-linearly: along log tokens within each measured
   weight shape (held constant beyond its first and last token count), then
   across shapes along log FLOPs at the query's token count (shapes of equal
   size averaged; held constant beyond the smallest and largest shape), using
   the shapes whose token range covers the query when there are any. A query
   on a measured shape uses that shape alone.

The answer is roofline x exp(residual): exact at every measured point, and it
says which points it used and whether the query lay inside the measured range
(``interpolated``) or outside it (``extrapolated``: a token count beyond a shape's
rows, a shape smaller or larger than every measured one). A :class:`Surface`
without a roofline (``roofline=False``) interpolates the values themselves the
same way (used for ratios, held constant outside).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sparsedebug.core.errors import InternalError
from sparsedebug.core.stats import median


@dataclass(frozen=True)
class Point:
    """One measured value at (out, in, tokens), with the label that cites it."""

    out: int
    k: int
    tokens: int
    value: float
    label: str


@dataclass(frozen=True)
class Estimate:
    """A value read from a surface, with the points it used and whether it lies outside them."""

    value: float
    labels: tuple[str, ...]
    exact: bool
    extrapolated: bool


@dataclass(frozen=True)
class Roofline:
    """``max(floor_ms, bytes / bytes_per_ms, flops / flops_per_ms)``, fitted to a surface's points."""

    floor_ms: float
    bytes_per_ms: float
    flops_per_ms: float
    itemsize: int

    def at(self, out: int, k: int, tokens: int) -> float:
        """Roofline time (ms) of one ``out x k`` GEMM on ``tokens`` tokens."""
        moved = self.itemsize * (out * k + k * tokens + out * tokens)
        return max(self.floor_ms, moved / self.bytes_per_ms, 2.0 * out * k * tokens / self.flops_per_ms)

    def facts(self) -> dict[str, float]:
        """The fitted floor (us), bandwidth (GB/s) and throughput (TFLOP/s), as note values."""
        return {"floor_us": self.floor_ms * 1e3, "gb_s": self.bytes_per_ms / 1e6, "tflops": self.flops_per_ms / 1e9}


def fit_roofline(points: Sequence[Point], itemsize: int) -> Roofline:
    """Least-squares fit (log time) of a roofline to ``points`` (Levenberg-Marquardt, :func:`core.fit.levenberg_marquardt`);
    deterministic (fixed start, no randomness)."""
    import numpy as np

    from sparsedebug.core.fit import levenberg_marquardt

    if not points:
        raise InternalError("fit_roofline: no points")
    moved = np.array([itemsize * (p.out * p.k + p.k * p.tokens + p.out * p.tokens) for p in points], dtype=np.float64)
    flops = np.array([2.0 * p.out * p.k * p.tokens for p in points], dtype=np.float64)
    times = np.array([p.value for p in points], dtype=np.float64)
    start = np.log([float(times.min()), median(list(moved / times)), median(list(flops / times))])

    def residual(params: np.ndarray) -> np.ndarray:
        floor, bw, fl = np.exp(np.clip(params, -700.0, 700.0))
        pred = np.maximum(floor, np.maximum(moved / bw, flops / fl))
        out: np.ndarray = np.log(pred) - np.log(times)
        return out

    with np.errstate(over="ignore"):  # a subset without compute-bound points leaves that rate free
        fit = levenberg_marquardt(residual, start)
        floor, bw, fl = (float(v) for v in np.exp(fit.x))
    return Roofline(floor, bw, fl, itemsize)


def _interp(xs: Sequence[float], ys: Sequence[float], x: float) -> tuple[float, tuple[int, ...], bool]:
    """Piecewise-linear ``y(x)``, constant beyond the ends; the indices used and whether ``x`` is outside."""
    if x <= xs[0]:
        return ys[0], (0,), x < xs[0]
    if x >= xs[-1]:
        return ys[-1], (len(xs) - 1,), x > xs[-1]
    for i, value in enumerate(xs):
        if x == value:
            return ys[i], (i,), False
    for i in range(len(xs) - 1):
        if xs[i] < x < xs[i + 1]:
            frac = (x - xs[i]) / (xs[i + 1] - xs[i])
            return ys[i] + frac * (ys[i + 1] - ys[i]), (i, i + 1), False
    raise InternalError("_interp: x not bracketed")  # pragma: no cover - xs sorted and x inside


class Surface:
    """Measured values of one path and dtype over (weight shape, tokens); see the module docstring."""

    def __init__(self, points: Sequence[Point], *, itemsize: int = 2, roofline: bool = True) -> None:
        if not points:
            raise InternalError("Surface: no points")
        merged: dict[tuple[int, int, int], list[Point]] = defaultdict(list)
        for p in points:
            merged[(p.out, p.k, p.tokens)].append(p)
        self.points = [
            Point(o, k, t, median([p.value for p in ps]), "; ".join(p.label for p in ps)) for (o, k, t), ps in sorted(merged.items())
        ]
        self.roofline = fit_roofline(self.points, itemsize) if roofline else None
        self._shapes: dict[tuple[int, int], list[Point]] = defaultdict(list)
        for p in self.points:
            self._shapes[(p.out, p.k)].append(p)

    def _base(self, out: int, k: int, tokens: int) -> float:
        return self.roofline.at(out, k, tokens) if self.roofline is not None else 1.0

    def _residual(self, p: Point) -> float:
        return math.log(p.value / self._base(p.out, p.k, p.tokens))

    def _along_tokens(self, shape: tuple[int, int], tokens: int) -> tuple[float, tuple[Point, ...], bool]:
        pts = self._shapes[shape]
        value, used, outside = _interp([math.log(p.tokens) for p in pts], [self._residual(p) for p in pts], math.log(tokens))
        return value, tuple(pts[i] for i in used), outside

    def at(self, out: int, k: int, tokens: int) -> Estimate:
        """The value at ``(out, k, tokens)`` with the points it came from (see the module docstring)."""
        base = self._base(out, k, tokens)
        if (out, k) in self._shapes:
            value, used, outside = self._along_tokens((out, k), tokens)
            exact = len(used) == 1 and used[0].tokens == tokens
            return Estimate(base * math.exp(value), tuple(p.label for p in used), exact, outside)
        per_shape = {shape: self._along_tokens(shape, tokens) for shape in self._shapes}
        inside = {shape: entry for shape, entry in per_shape.items() if not entry[2]} or per_shape
        levels: dict[float, list[tuple[float, tuple[Point, ...], bool]]] = defaultdict(list)
        for (o, kk), entry in inside.items():
            levels[math.log(2.0 * o * kk)].append(entry)
        xs = sorted(levels)
        ys = [sum(e[0] for e in levels[x]) / len(levels[x]) for x in xs]
        value, used_levels, outside = _interp(xs, ys, math.log(2.0 * out * k))
        labels: list[str] = []
        inner_outside = False
        for i in used_levels:
            for _, pts, beyond in levels[xs[i]]:
                labels.extend(p.label for p in pts)
                inner_outside = inner_outside or beyond
        return Estimate(base * math.exp(value), tuple(labels), False, outside or inner_outside)
