"""Intervals of the target clock: from the fit's residuals and the distance from measured points.

Every projected GPU time is ``value x exp(+-Z x s(d))`` with

    s(d) = sqrt(sigma^2 + (per_token_decade x d_tokens)^2 + (per_shape_decade x d_shape)^2)

- ``sigma``: the spread at a measured point: the log residual sd of the sparse
  kernel fit, never below the repeat spread of the measurements themselves (the
  same point measured by several trace layers, Nsight Compute and a per-call row);
- ``d``: the distance, in decades, from the query to the nearest measured point
  of that path and dtype over (log10 tokens, log10 out, log10 in), split into its
  token part ``d_tokens`` and its shape part ``d_shape`` (out and in);
- ``per_token_decade``, ``per_shape_decade``: how much log error one decade of
  distance along tokens or shape adds, estimated from the model's own data by
  holding out whole shapes and whole token decades, refitting, and regressing
  the squared held-out log errors (less ``sigma^2``) on ``d_tokens^2`` and
  ``d_shape^2`` (non-negative least squares through the origin).

``Z`` is the two-sided 90% normal quantile: a claim (sparse wins, sparse loses,
break-even) is made only where the interval of the speedup excludes 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparsedebug.records.target import Provenance

# Two-sided 90% quantile of the standard normal.
Z90 = 1.6448536269514722

# (out, in, tokens) of a measured or queried point.
Coordinate = tuple[int, int, int]

# (out, in, tokens, torch dtype) of a measured point.
Key = tuple[int, int, int, str]


@dataclass(frozen=True)
class Distance:
    """How far a query lies from the nearest measured point: token and shape parts, in decades."""

    tokens: float
    shape: float
    nearest: Coordinate | None

    @property
    def total(self) -> float:
        """Euclidean distance in decades."""
        return math.hypot(self.tokens, self.shape)


FAR = Distance(math.inf, math.inf, None)
"""No measured point at all."""


def distance(query: Coordinate, measured: Iterable[Coordinate]) -> Distance:
    """Decades from ``query`` to the nearest of ``measured`` over (log10 tokens, log10 out, log10 in)."""
    best = FAR
    qo, qk, qt = query
    for o, k, t in measured:
        dt = abs(math.log10(max(qt, 1) / max(t, 1)))
        ds = math.hypot(math.log10(qo / o), math.log10(qk / k))
        if math.hypot(dt, ds) < best.total:
            best = Distance(dt, ds, (o, k, t))
    return best


@dataclass(frozen=True)
class Spread:
    """``s(d) = sqrt(sigma^2 + (per_token_decade x d_tokens)^2 + (per_shape_decade x d_shape)^2)`` (log units)."""

    sigma: float
    per_token_decade: float
    per_shape_decade: float

    def at(self, d: Distance) -> float:
        """Log sd at distance ``d`` from the nearest measured point (infinite at infinite distance)."""
        if math.isinf(d.total):
            return math.inf
        return math.sqrt(self.sigma**2 + (self.per_token_decade * d.tokens) ** 2 + (self.per_shape_decade * d.shape) ** 2)

    def bounds(self, value: float, d: Distance) -> tuple[float, float]:
        """The 90% interval of ``value`` at distance ``d``."""
        s = self.at(d)
        if math.isinf(s):
            return 0.0, math.inf
        return value * math.exp(-Z90 * s), value * math.exp(Z90 * s)


def repeat_sigma(groups: Iterable[Sequence[float]]) -> float:
    """Pooled log sd of repeated measurements of one point (groups of at least two values); 0 without repeats."""
    total, dof = 0.0, 0
    for values in groups:
        if len(values) < 2 or min(values) <= 0:
            continue
        logs = [math.log(v) for v in values]
        mean = sum(logs) / len(logs)
        total += sum((x - mean) ** 2 for x in logs)
        dof += len(logs) - 1
    return math.sqrt(total / dof) if dof else 0.0


def per_decade_from(errors: Iterable[tuple[float, Distance, float]]) -> tuple[float, float]:
    """(per_token_decade, per_shape_decade) from held-out (log error, distance, sigma): NNLS of e^2 - sigma^2."""
    import numpy as np

    from sparsedebug.core.fit import nnls

    rows, target = [], []
    for error, d, sigma in errors:
        if d.total <= 0 or math.isinf(d.total):
            continue
        rows.append([d.tokens**2, d.shape**2])
        target.append(error * error - sigma * sigma)
    if not rows:
        return 0.0, 0.0
    solution, _ = nnls(np.array(rows, dtype=np.float64), np.array(target, dtype=np.float64))
    return math.sqrt(float(solution[0])), math.sqrt(float(solution[1]))


@dataclass(frozen=True)
class Figure:
    """One projected time (ms) with its 90% interval, distance from measured points and provenance."""

    ms: float
    low: float
    high: float
    away: Distance
    prov: Provenance

    def plus(self, ms: float) -> Figure:
        """This figure with ``ms`` added to the value and both ends (a measured, fixed extra cost)."""
        return Figure(self.ms + ms, self.low + ms, self.high + ms, self.away, self.prov)


def hold_out_groups(keys: list[Key]) -> list[tuple[str, str, frozenset[Key]]]:
    """Hold-out groups over measured keys: (grouping, name, keys) for each whole shape and each token decade
    (10^d <= tokens < 10^(d+1))."""
    shapes: dict[tuple[int, int], set[Key]] = {}
    decades: dict[int, set[Key]] = {}
    for key in keys:
        shapes.setdefault((key[0], key[1]), set()).add(key)
        decades.setdefault(int(math.floor(math.log10(max(key[2], 1)))), set()).add(key)
    out = [("shape", f"{o}x{k}", frozenset(v)) for (o, k), v in sorted(shapes.items())]
    out += [("token decade", f"{10**d}-{10 ** (d + 1) - 1}", frozenset(v)) for d, v in sorted(decades.items())]
    return out
