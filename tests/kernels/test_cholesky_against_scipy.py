"""SparseGPT's inverse-Hessian factor in numpy gives what scipy's LAPACK (``dpotrf`` + ``dtrtri``) gave: the same factor
to rounding, the same masks and the same reconstructed weights, dead inputs and damping growth included."""

from __future__ import annotations

import numpy as np
import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.kernels import pruning
from sparsedebug.kernels.masks import Pattern
from tests.kernels.test_pruning import correlated_inputs

lapack = pytest.importorskip("scipy.linalg.lapack")


def _scipy_factor(gram: np.ndarray, damping: float) -> tuple[np.ndarray, np.ndarray]:
    """The factor as it was computed with scipy's LAPACK."""
    hessian = np.array(gram, dtype=np.float64, copy=True)
    dead = np.diag(hessian) == 0
    hessian[dead, dead] = 1.0
    mean_diag = float(np.mean(np.diag(hessian)))
    flipped = hessian[::-1, ::-1]
    damp = damping
    for _ in range(4):
        lower, info = lapack.dpotrf(flipped + np.eye(len(hessian)) * (damp * mean_diag), lower=1, clean=1)
        if info == 0:
            inverse, info = lapack.dtrtri(lower, lower=1)
            if info == 0:
                return np.ascontiguousarray(inverse[::-1, ::-1]), dead
        damp *= 10.0
    raise AssertionError("not positive definite")


@pytest.mark.parametrize(("tokens", "features", "dead"), [(512, 64, 0), (256, 128, 5), (96, 192, 0), (2048, 384, 3)])
def test_factor_masks_and_weights_match_scipy(tokens: int, features: int, dead: int) -> None:
    x = correlated_inputs(features + tokens, tokens, features)
    x[:, :dead] = 0.0  # inputs that never fire
    gram = x.T @ x
    upper, dead_mask = pruning._inverse_hessian_factor(gram, 0.01)
    ref, ref_dead = _scipy_factor(gram, 0.01)
    assert (dead_mask == ref_dead).all()
    assert np.allclose(upper, ref, rtol=1e-9, atol=1e-12 * float(np.abs(ref).max()))
    assert np.allclose(upper.T @ upper, ref.T @ ref, rtol=1e-8, atol=1e-12 * float(np.abs(ref.T @ ref).max()))
    rng = np.random.default_rng(features)
    weight = rng.normal(size=(48, features)).astype(np.float32)
    for pattern in (Pattern(n=2, m=4), Pattern(n=1, m=4), Pattern(n=4, m=8)):
        got = pruning.sparsegpt_solve(weight, pattern, upper, dead_mask)
        want = pruning.sparsegpt_solve(weight, pattern, ref, ref_dead)
        assert ((got != 0) == (want != 0)).all()
        assert np.allclose(got, want, rtol=1e-6, atol=1e-7)


def test_an_indefinite_hessian_grows_damping_then_refuses() -> None:
    rng = np.random.default_rng(1)
    q = np.linalg.qr(rng.normal(size=(16, 16)))[0]
    gram = q @ np.diag(np.r_[np.full(15, 100.0), -1000.0]) @ q.T  # beyond 10x the mean diagonal (31.25), the last damping
    with pytest.raises(UserError, match="not positive definite even with damping 10;"):
        pruning._inverse_hessian_factor(gram, 0.01)
    slightly = q @ np.diag(np.r_[np.ones(15), -0.005]) @ q.T  # made definite by the second damping (0.1 of the mean diagonal)
    upper, _ = pruning._inverse_hessian_factor(slightly, 0.01)
    ref, _ = _scipy_factor(slightly, 0.01)
    assert np.allclose(upper, ref, rtol=1e-9)


@pytest.mark.parametrize("n", [1, 7, 96, 97, 250, 1000])
def test_the_triangle_inverse_by_halves_matches_lapack(n: int) -> None:
    rng = np.random.default_rng(n)
    lower = np.tril(rng.normal(size=(n, n))) + np.eye(n) * (n + 2.0)
    got = pruning.lower_inverse(lower)
    want, info = lapack.dtrtri(lower, lower=1)
    assert info == 0 and np.allclose(got, want, rtol=1e-12, atol=1e-14 * float(np.abs(want).max()))
    assert (np.triu(got, 1) == 0).all()
