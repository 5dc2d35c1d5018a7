"""The target model's fits in numpy (core.fit) give the projections that scipy's ``least_squares`` and ``nnls`` gave.

Every shipped target profile is built twice: with the roofline fitted by scipy's MINPACK
Levenberg-Marquardt (the old path, ``trf`` under three points) and by ``core.fit``; the dense
and sparse projections (value and 90% interval, whose width comes from the per-decade NNLS) on
shapes inside and far outside the measured points agree to 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest

from sparsedebug.core.stats import median
from sparsedebug.sources.target import model as mdl
from sparsedebug.sources.target import surface as surf

optimize = pytest.importorskip("scipy.optimize")

SHAPES = [(4096, 4096, 1), (11008, 4096, 2048), (4096, 11008, 512), (384, 1536, 128), (50000, 8000, 30000), (1024, 1024, 64)]


def _scipy_roofline(points: list[surf.Point], itemsize: int) -> surf.Roofline:
    moved = np.array([itemsize * (p.out * p.k + p.k * p.tokens + p.out * p.tokens) for p in points], dtype=np.float64)
    flops = np.array([2.0 * p.out * p.k * p.tokens for p in points], dtype=np.float64)
    times = np.array([p.value for p in points], dtype=np.float64)
    start = np.log([float(times.min()), median(list(moved / times)), median(list(flops / times))])

    def residual(params: np.ndarray) -> np.ndarray:
        floor, bw, fl = np.exp(np.clip(params, -700.0, 700.0))
        out: np.ndarray = np.log(np.maximum(floor, np.maximum(moved / bw, flops / fl))) - np.log(times)
        return out

    with np.errstate(over="ignore"):
        fit = optimize.least_squares(residual, start, method="lm" if len(points) >= 3 else "trf")
        floor, bw, fl = (float(v) for v in np.exp(fit.x))
    return surf.Roofline(floor, bw, fl, itemsize)


def _projections() -> dict[tuple[object, ...], tuple[float, float, float] | None]:
    mdl.target_model.cache_clear()
    out: dict[tuple[object, ...], tuple[float, float, float] | None] = {}
    for profile in ("h200-cusparselt", "h200-cutlass"):
        model = mdl.target_model(profile)
        assert model is not None
        for o, k, t in SHAPES:
            for dtype in ("float16", "bfloat16"):
                for name, project in (("dense", model.dense_gpu), ("sparse", model.sparse_gpu)):
                    f = project(o, k, t, dtype)
                    out[(profile, name, o, k, t, dtype)] = None if f is None else (f.ms, f.low, f.high)
    mdl.target_model.cache_clear()
    return out


def test_projections_match_the_scipy_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    new = _projections()
    monkeypatch.setattr(surf, "fit_roofline", _scipy_roofline)
    old = _projections()
    assert old.keys() == new.keys() and sum(v is not None for v in new.values()) >= 24
    for key, value in new.items():
        before = old[key]
        if before is None:
            assert value is None, key
            continue
        assert value is not None and np.allclose(value, before, rtol=1e-6), (key, value, before)
