"""The numpy least-squares solvers (core.fit) against scipy's: NNLS and Levenberg-Marquardt."""

from __future__ import annotations

import numpy as np
import pytest

from sparsedebug.core.errors import InternalError
from sparsedebug.core.fit import levenberg_marquardt, nnls

optimize = pytest.importorskip("scipy.optimize")


@pytest.mark.parametrize("shape", [(106, 2), (10, 3), (40, 8), (5, 9), (300, 20)])
def test_nnls_matches_scipy(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[0] * 31 + shape[1])
    for trial in range(20):
        a = rng.normal(size=shape) if trial % 2 else np.abs(rng.normal(size=shape))
        b = rng.normal(size=shape[0]) * 3.0
        x, r = nnls(a, b)
        ref, ref_r = optimize.nnls(a, b)
        assert (x >= 0).all()
        assert r == pytest.approx(ref_r, rel=1e-9, abs=1e-12)
        if shape[0] >= shape[1]:  # a full-rank system has one solution
            assert np.allclose(x, ref, rtol=1e-8, atol=1e-10)


def test_nnls_edge_cases() -> None:
    x, r = nnls(np.eye(3), np.array([-1.0, 2.0, -3.0]))
    assert x.tolist() == [0.0, 2.0, 0.0] and r == pytest.approx(np.sqrt(10.0))
    x, _ = nnls(np.zeros((4, 2)), np.ones(4))
    assert x.tolist() == [0.0, 0.0]
    with pytest.raises(InternalError, match="do not make a system"):
        nnls(np.ones((3, 2)), np.ones(2))


def _decay(t: np.ndarray, y: np.ndarray):  # type: ignore[no-untyped-def]
    def residual(p: np.ndarray) -> np.ndarray:
        out: np.ndarray = p[0] * np.exp(-p[1] * t) + p[2] - y
        return out

    return residual


def test_levenberg_marquardt_finds_scipys_minimum() -> None:
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 5.0, 40)
    for true in ([3.0, 1.3, 0.5], [10.0, 0.2, -1.0], [0.5, 4.0, 2.0]):
        y = true[0] * np.exp(-true[1] * t) + true[2] + rng.normal(0.0, 0.02, t.size)
        residual = _decay(t, y)
        fit = levenberg_marquardt(residual, [1.0, 1.0, 0.0])
        ref = optimize.least_squares(residual, [1.0, 1.0, 0.0], method="lm")
        assert fit.cost == pytest.approx(0.5 * float(ref.fun @ ref.fun), rel=1e-9)
        assert np.allclose(fit.x, ref.x, rtol=1e-5, atol=1e-7)


def test_levenberg_marquardt_on_rosenbrock() -> None:
    def residual(p: np.ndarray) -> np.ndarray:
        return np.array([10.0 * (p[1] - p[0] ** 2), 1.0 - p[0]])

    fit = levenberg_marquardt(residual, [-1.2, 1.0])
    assert np.allclose(fit.x, [1.0, 1.0], atol=1e-6) and fit.cost < 1e-12
