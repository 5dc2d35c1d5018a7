"""Magnitude, Wanda and SparseGPT against fp64 references, N:M compliance, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern, check_compliance
from sparsedebug.kernels.pruning import (
    InputStats,
    magnitude_prune,
    reconstruction_error,
    sparsegpt_prune,
    wanda_prune,
    wanda_scores,
)
from tests.kernels.strategies import nm_patterns
from tests.support.reference_kernels import columnwise_sparsegpt


def correlated_inputs(seed: int, tokens: int, features: int) -> np.ndarray:
    """Inputs whose features are strongly correlated and of very different scales (as real activations)."""
    rng = np.random.default_rng(seed)
    mixing = rng.standard_normal((features, features)) * 0.3 + np.eye(features)
    scales = 10.0 ** rng.uniform(-1, 1, features)
    return (rng.standard_normal((tokens, features)) @ mixing) * scales


def obs_reference(weight: np.ndarray, gram: np.ndarray, n: int, m: int, damping: float) -> np.ndarray:
    """SparseGPT written as plain optimal brain surgery in fp64: no Cholesky, no blocks.

    After column j is decided, the inverse Hessian of the remaining columns is
    ``Hinv - Hinv[:, j] Hinv[j, :] / Hinv[j, j]``. The group choice at column j
    ranks ``w_k^2 / d_k`` with ``d_k`` the diagonal each column k has when it is
    itself visited, which is what the Cholesky factor's diagonal holds.
    """
    w = weight.astype(np.float64).copy()
    h = gram.astype(np.float64).copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h += np.eye(len(h)) * damping * np.mean(np.diag(h))
    hinv = np.linalg.inv(h)
    cols = w.shape[1]
    rows_of_hinv, diags = [], []
    current = hinv.copy()
    for j in range(cols):
        rows_of_hinv.append(current[j].copy())
        diags.append(current[j, j])
        current = current - np.outer(current[:, j], current[j, :]) / current[j, j]
    keep = np.zeros(w.shape[0], dtype=bool)
    keep_group = np.zeros((w.shape[0], m), dtype=bool)
    for j in range(cols):
        if j % m == 0:
            scores = w[:, j : j + m] ** 2 / np.array(diags[j : j + m])[None, :]
            keep_group = np.zeros((w.shape[0], m), dtype=bool)
            for r in range(w.shape[0]):
                order = sorted(range(m), key=lambda c: (-scores[r, c], c))[:n]
                keep_group[r, order] = True
        keep = keep_group[:, j % m]
        q = np.where(keep, w[:, j], 0.0)
        err = (w[:, j] - q) / diags[j]
        w[:, j:] -= np.outer(err, rows_of_hinv[j][j:])
        w[:, j] = q
    return w


@pytest.mark.parametrize(("n", "m"), [(2, 4), (1, 4), (4, 8), (1, 2), (3, 6)])
@pytest.mark.parametrize("seed", [0, 1])
def test_sparsegpt_matches_plain_obs_in_fp64(n: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cols = 4 * m * 3
    x = correlated_inputs(seed, 200, cols)
    weight = rng.standard_normal((9, cols))
    gram = x.T @ x
    got = sparsegpt_prune(weight, Pattern(n=n, m=m), gram, block_size=2 * m)
    want = obs_reference(weight, gram, n, m, 0.01)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_sparsegpt_block_size_changes_batching_only() -> None:
    rng = np.random.default_rng(3)
    x = correlated_inputs(3, 300, 64)
    weight = rng.standard_normal((16, 64))
    gram = x.T @ x
    results = [sparsegpt_prune(weight, Pattern(n=2, m=4), gram, block_size=size) for size in (4, 16, 128, 7)]
    for other in results[1:]:
        np.testing.assert_allclose(other, results[0], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pattern", [Pattern(n=2, m=4), Pattern(n=1, m=4), Pattern(n=2, m=4, block=4)])
def test_sparsegpt_reconstructs_better_than_magnitude_and_wanda(seed: int, pattern: Pattern) -> None:
    rng = np.random.default_rng(seed)
    x = correlated_inputs(seed, 512, 96)
    weight = rng.standard_normal((32, 96))
    stats = InputStats(96, gram=True)
    stats.add(x)
    assert stats.gram is not None
    errors = {
        "magnitude": reconstruction_error(weight, magnitude_prune(weight, pattern), stats.gram),
        "wanda": reconstruction_error(weight, wanda_prune(weight, pattern, stats.feature_norms()), stats.gram),
        "sparsegpt": reconstruction_error(weight, sparsegpt_prune(weight, pattern, stats.gram), stats.gram),
    }
    assert errors["sparsegpt"] < errors["wanda"] <= errors["magnitude"] * 1.0001, errors
    # The direct output error agrees with the Gram-matrix form.
    pruned = sparsegpt_prune(weight, pattern, stats.gram)
    direct = np.sum((x @ (pruned - weight).T) ** 2) / np.sum((x @ weight.T) ** 2)
    assert errors["sparsegpt"] == pytest.approx(direct, rel=1e-9)


def test_wanda_keeps_the_largest_weight_times_norm_in_each_group() -> None:
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((7, 24)).astype(np.float32)
    norms = 10.0 ** rng.uniform(-2, 2, 24)
    got = wanda_prune(weight, Pattern(n=2, m=4), norms)
    want = np.zeros_like(weight)
    for r in range(7):
        for g in range(6):
            cols = range(4 * g, 4 * g + 4)
            ranked = sorted(cols, key=lambda c: (-abs(float(weight[r, c])) * norms[c], c))[:2]
            want[r, ranked] = weight[r, ranked]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32


def test_wanda_with_equal_norms_is_magnitude() -> None:
    weight = np.random.default_rng(6).standard_normal((5, 16))
    pattern = Pattern(n=1, m=4)
    np.testing.assert_array_equal(wanda_prune(weight, pattern, np.full(16, 3.0)), magnitude_prune(weight, pattern))


@settings(max_examples=60, deadline=None)
@given(nm=nm_patterns(), rows=st.integers(1, 12), groups=st.integers(1, 4), seed=st.integers(0, 2**31), blocked=st.booleans())
def test_every_method_is_pattern_compliant(nm: tuple[int, int], rows: int, groups: int, seed: int, blocked: bool) -> None:
    n, m = nm
    block = 2 if blocked else None
    pattern = Pattern(n=n, m=m, block=block)
    rng = np.random.default_rng(seed)
    k = groups * m
    weight = rng.standard_normal((rows, k))
    x = correlated_inputs(seed, 3 * k, k)
    stats = InputStats(k, gram=True)
    stats.add(x)
    assert stats.gram is not None
    for pruned in (
        magnitude_prune(weight, pattern),
        wanda_prune(weight, pattern, stats.feature_norms()),
        sparsegpt_prune(weight, pattern, stats.gram, block_size=m * 2),
    ):
        compliance = check_compliance(pruned, n, m, block)
        assert compliance.compliant, compliance
        assert np.isfinite(pruned).all()
        # Exactly N kept per group and row (zeros only where the method pruned).
        assert np.count_nonzero(pruned) <= rows * groups * n


def test_sparsegpt_prunes_dead_inputs_and_stays_finite() -> None:
    rng = np.random.default_rng(8)
    x = correlated_inputs(8, 100, 16)
    x[:, 5] = 0.0
    weight = rng.standard_normal((4, 16))
    stats = InputStats(16, gram=True)
    stats.add(x)
    assert stats.gram is not None
    pruned = sparsegpt_prune(weight, Pattern(n=2, m=4), stats.gram)
    assert np.all(pruned[:, 5] == 0.0)
    assert np.isfinite(pruned).all()
    assert check_compliance(pruned, 2, 4).compliant


def test_sparsegpt_on_a_singular_hessian_uses_damping() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 32))  # rank 3 of 32
    weight = rng.standard_normal((4, 32))
    pruned = sparsegpt_prune(weight, Pattern(n=2, m=4), x.T @ x)
    assert np.isfinite(pruned).all() and check_compliance(pruned, 2, 4).compliant


def test_input_stats_accumulate_blocks() -> None:
    rng = np.random.default_rng(10)
    parts = [rng.standard_normal((n, 6)).astype(np.float32) for n in (3, 5, 1)]
    stats = InputStats(6, gram=True)
    for part in parts:
        stats.add(part)
    full = np.vstack(parts).astype(np.float64)
    assert stats.tokens == 9
    np.testing.assert_allclose(stats.feature_norms(), np.linalg.norm(full, axis=0), rtol=1e-6)
    assert stats.gram is not None
    np.testing.assert_allclose(stats.gram, full.T @ full, rtol=1e-5, atol=1e-5)
    assert InputStats(6, gram=False).gram is None


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: sparsegpt_prune(np.ones((2, 8)), Pattern(n=2, m=4), np.eye(4)), "Gram matrix of shape"),
        (lambda: sparsegpt_prune(np.ones((2, 8)), Pattern(n=2, m=4), np.eye(8), damping=0.0), "damping"),
        (lambda: sparsegpt_prune(np.ones((2, 6)), Pattern(n=2, m=4), np.eye(6)), "not divisible by M=4"),
        (lambda: sparsegpt_prune(np.ones((2, 8)), Pattern(n=2, m=4), np.full((8, 8), np.nan)), "NaN"),
        (lambda: wanda_scores(np.ones((2, 8)), np.ones(4)), "input norms of shape (4,)"),
        (lambda: InputStats(4, gram=False).add(np.ones((2, 5))), "expected (tokens, 4)"),
    ],
)
def test_bad_input_is_a_user_error(call: object, needle: str) -> None:
    with pytest.raises(UserError, match=None) as info:
        call()  # type: ignore[operator]
    assert needle in str(info.value)


@settings(max_examples=25, deadline=None)
@given(
    nm=nm_patterns(), groups=st.integers(1, 12), rows=st.integers(1, 20), seed=st.integers(0, 2**16),
    block=st.sampled_from([None, 1, 3, 8]), block_size=st.sampled_from([4, 16, 64]),
)
def test_sparsegpt_matches_the_columnwise_solve(
    nm: tuple[int, int], groups: int, rows: int, seed: int, block: int | None, block_size: int
) -> None:
    """The group-wise solve keeps the same weights as the former column-by-column one, and the same values up to rounding."""
    n, m = nm
    pattern = Pattern(n=n, m=m, block=block)
    cols = groups * m
    weight = np.random.default_rng(seed).standard_normal((rows, cols))
    gram = (x := correlated_inputs(seed, 3 * cols, cols)).T @ x
    got = sparsegpt_prune(weight, pattern, gram, block_size=block_size)
    want = columnwise_sparsegpt(weight, pattern, gram, block_size=block_size)
    np.testing.assert_array_equal(got != 0, want != 0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
