"""Statistics over raw timing samples: percentiles now, significance tests beside them.

Latencies are always quoted as p50/p95/p99 (never a bare mean): tails are where
sparse deployments hide their per-call overheads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel


class Percentiles(BaseModel):
    """p50/p95/p99 of a sample, with its size."""

    n: int
    p50: float
    p95: float
    p99: float


def percentiles(samples: Sequence[float]) -> Percentiles:
    """p50/p95/p99 (linear interpolation) of non-empty ``samples``."""
    if len(samples) == 0:
        raise ValueError("percentiles of an empty sample")
    p50, p95, p99 = np.percentile(np.asarray(samples, dtype=np.float64), [50.0, 95.0, 99.0])
    return Percentiles(n=len(samples), p50=float(p50), p95=float(p95), p99=float(p99))


def median(samples: Sequence[float]) -> float:
    """Median of non-empty ``samples``."""
    if len(samples) == 0:
        raise ValueError("median of an empty sample")
    return float(np.median(np.asarray(samples, dtype=np.float64)))
