"""Spearman's rank correlation and its p-value in numpy and the standard library (no scipy at the CLI's start).

``spearman(x, y)`` is Pearson's correlation of the mid-ranks (ties share their mean rank,
:func:`sparsedebug.core.paired.mid_ranks`), and its two-sided p-value is the one scipy's
``spearmanr`` gives: Student's t with ``n - 2`` degrees of freedom on
``t = rho * sqrt((n - 2) / (1 - rho^2))``, whose two-sided tail is the regularized incomplete
beta function ``I_{df / (df + t^2)}(df / 2, 1 / 2)`` (Lentz's continued fraction, to 1e-15).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from sparsedebug.core.paired import mid_ranks

_TINY = 1e-300
_EPS = 1e-15
_MAX_TERMS = 1000


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz), converging for ``x < (a + 1) / (a + b + 2)``."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0`` and ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def student_t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (0 for an infinite ``t``)."""
    if math.isinf(t):
        return 0.0
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[float, float]:
    """Spearman's rho of ``x`` and ``y`` (mid-ranks for ties) and its two-sided p-value; NaN, NaN when one side is constant."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xs.shape != ys.shape or xs.ndim != 1 or xs.size < 3:
        raise ValueError(f"spearman needs two 1-D samples of the same length, at least 3 (got {xs.shape} and {ys.shape})")
    rx, ry = mid_ranks(xs)[0], mid_ranks(ys)[0]
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(rx @ rx) * float(ry @ ry))
    if denominator == 0.0:
        return math.nan, math.nan
    rho = max(-1.0, min(1.0, float(rx @ ry) / denominator))
    df = xs.size - 2
    room = (1.0 + rho) * (1.0 - rho)
    t = math.inf if room <= 0.0 else rho * math.sqrt(df / room)
    return rho, student_t_two_sided_p(t, df)
