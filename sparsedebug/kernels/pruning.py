"""One-shot N:M pruning: magnitude, Wanda and SparseGPT, on ``(out, in)`` weights.

Groups run along the input dimension as in :mod:`sparsedebug.kernels.masks`;
every method returns a weight with at most ``N`` non-zeros per group of ``M``
(and, for a blocked ``V:N:M`` pattern, one column choice per block of ``V``
rows).

- magnitude: keep the ``N`` largest ``|w|`` of each group.
- Wanda (Sun et al., 2023): keep the ``N`` largest ``|w_ij| * ||x_j||``, the
  weight times the L2 norm of input feature ``j`` over the calibration tokens.
- SparseGPT (Frantar and Alistarh, 2023): walk the input columns left to right;
  at the first column of each group choose the ``N`` kept weights by
  ``w^2 / [H^-1]_jj^2`` and, column by column, fold each pruned weight's error
  into the columns not yet visited through the inverse Hessian ``H = X^T X``
  of the calibration inputs (its upper Cholesky factor, damped by a fraction
  of the mean diagonal). Columns are processed in blocks so the update of the
  remaining columns is one matrix product per block.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern, check_nm, check_weight, group_keep, nm_mask, vnm_mask
from sparsedebug.records.defaults import DEFAULT_BLOCK as DEFAULT_BLOCK
from sparsedebug.records.defaults import DEFAULT_DAMPING as DEFAULT_DAMPING
from sparsedebug.records.defaults import METHODS as METHODS
from sparsedebug.records.defaults import Method as Method

F64 = npt.NDArray[np.float64]


class InputStats:
    """Running statistics of a layer's input ``x (tokens, features)``: sum of squares and, optionally, ``X^T X``.

    Each block's products run in the input's precision (fp32 BLAS for fp32
    activations) and are accumulated in fp64. Wanda needs the per-feature
    norms, SparseGPT the Gram matrix (the layer-wise Hessian up to a constant
    factor, damped by 1% of its mean diagonal, far above fp32 rounding).
    """

    def __init__(self, features: int, *, gram: bool) -> None:
        self.features = features
        self.tokens = 0
        self.square_sum: F64 = np.zeros(features)
        self.gram: F64 | None = np.zeros((features, features)) if gram else None

    def add(self, x: npt.NDArray[Any]) -> None:
        """Fold in a ``(tokens, features)`` block of inputs."""
        if x.ndim != 2 or x.shape[1] != self.features:
            raise UserError(f"input statistics: expected (tokens, {self.features}) inputs, got {tuple(x.shape)}")
        self.tokens += x.shape[0]
        self.square_sum += np.square(x).sum(axis=0, dtype=np.float64)
        if self.gram is not None:
            self.gram += x.T @ x

    def feature_norms(self) -> F64:
        """L2 norm of every input feature over the tokens seen."""
        out: F64 = np.sqrt(self.square_sum)
        return out


def pattern_mask(weight: npt.NDArray[Any], pattern: Pattern, scores: npt.NDArray[Any] | None = None) -> npt.NDArray[np.bool_]:
    """Keep-mask of ``pattern`` ranked by ``scores`` (default ``|weight|``), per row or per block of rows."""
    if pattern.block is None:
        return nm_mask(weight, pattern.n, pattern.m, scores)
    return vnm_mask(weight, pattern.n, pattern.m, pattern.block, scores)


def magnitude_prune(weight: npt.NDArray[Any], pattern: Pattern) -> npt.NDArray[Any]:
    """Zero all but the ``N`` largest ``|w|`` of every group."""
    mask = pattern_mask(weight, pattern)
    return np.where(mask, weight, 0).astype(weight.dtype, copy=False)


def wanda_scores(weight: npt.NDArray[Any], feature_norms: npt.NDArray[Any]) -> F64:
    """``|w_ij| * ||x_j||`` in fp64."""
    arr = np.asarray(weight)
    norms = np.asarray(feature_norms, dtype=np.float64)
    if norms.shape != (arr.shape[1],):
        raise UserError(f"wanda: input norms of shape {norms.shape} for a weight with {arr.shape[1]} inputs")
    out: F64 = np.abs(arr.astype(np.float64)) * norms[None, :]
    return out


def wanda_prune(weight: npt.NDArray[Any], pattern: Pattern, feature_norms: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Zero all but the ``N`` largest ``|w_ij| * ||x_j||`` of every group."""
    mask = pattern_mask(weight, pattern, wanda_scores(weight, feature_norms))
    return np.where(mask, weight, 0).astype(weight.dtype, copy=False)


TRIANGLE_BLOCK = 96
"""Size at and under which :func:`lower_inverse` inverts a triangle with LAPACK's general inverse."""


def lower_inverse(lower: F64) -> F64:
    """The inverse of a lower-triangular matrix, by halves: ``[[A, 0], [C, D]]^-1 = [[A^-1, 0], [-D^-1 C A^-1, D^-1]]``.

    numpy has no triangular inverse (LAPACK's ``dtrtri``); its general inverse costs about six
    times the multiplications. Splitting in halves puts the work in two matrix products per level
    (BLAS), about the triangular inverse's count; small blocks use the general inverse.
    """
    n = lower.shape[0]
    if n <= TRIANGLE_BLOCK:
        small: F64 = np.tril(np.linalg.inv(lower))  # the inverse of a lower triangle is one: its upper part is rounding
        return small
    half = n // 2
    top, bottom = lower_inverse(lower[:half, :half]), lower_inverse(lower[half:, half:])
    out = np.zeros_like(lower)
    out[:half, :half] = top
    out[half:, half:] = bottom
    out[half:, :half] = -(bottom @ (lower[half:, :half] @ top))
    return out


def _inverse_hessian_factor(gram: F64, damping: float) -> tuple[F64, npt.NDArray[np.bool_]]:
    """Upper Cholesky factor ``U`` of the damped inverse Hessian (``H^-1 = U^T U``), and the dead-input mask.

    Inputs that were always zero (zero diagonal) get a unit diagonal so the
    matrix stays positive definite; their weights are pruned by the caller.
    With ``J`` the order-reversing permutation and ``J H J = R R^T`` (``R``
    lower), ``U = J R^-1 J``: one Cholesky factorisation and one triangular
    inverse, no explicit ``H^-1`` (numpy's LAPACK: ``cholesky`` and the inverse of
    the triangular factor). If the factorisation fails, damping grows tenfold, up
    to three times. LAPACK runs on one thread: on a busy machine, threaded
    factorisations of these small matrices wait more than they compute.
    """
    hessian = np.array(gram, dtype=np.float64, copy=True)
    dead = np.diag(hessian) == 0
    hessian[dead, dead] = 1.0
    mean_diag = float(np.mean(np.diag(hessian)))
    flipped = hessian[::-1, ::-1]
    damp = damping
    with threadpool_limits(1):
        for _ in range(4):
            damped = flipped + np.eye(len(hessian)) * (damp * mean_diag)
            try:
                lower = np.linalg.cholesky(damped)
            except np.linalg.LinAlgError:
                damp *= 10.0
                continue
            inverse = lower_inverse(np.asarray(lower, dtype=np.float64))
            upper: F64 = np.ascontiguousarray(inverse[::-1, ::-1])
            return upper, dead
    raise UserError(
        f"sparsegpt: the calibration Hessian is not positive definite even with damping {damp / 10:g}; "
        "use more calibration tokens"
    )


def _group_keep(scores: F64, n: int, block: int | None) -> npt.NDArray[np.bool_]:
    """``(rows, M)`` keep-mask of one group from ``(rows, M)`` scores: top ``n`` per row or per block of rows.

    Ties go to the lower column (:func:`sparsedebug.kernels.masks.group_keep`).
    """
    rows = scores.shape[0]
    key = np.add.reduceat(scores, np.arange(0, rows, block), axis=0) if block is not None else scores
    keep = group_keep(key, n)
    if block is not None:
        keep = np.repeat(keep, block, axis=0)[:rows]
    return keep


def sparsegpt_prune(
    weight: npt.NDArray[Any],
    pattern: Pattern,
    gram: npt.NDArray[Any],
    *,
    damping: float = DEFAULT_DAMPING,
    block_size: int = DEFAULT_BLOCK,
) -> npt.NDArray[Any]:
    """SparseGPT one-shot pruning of ``weight`` to ``pattern`` with the input Gram matrix ``gram = X^T X``.

    Returns the pruned and reconstructed weight in the input's dtype; the
    solve runs in fp64. ``block_size`` only changes how the work is batched,
    not the result (up to rounding).
    """
    n, m = pattern.n, pattern.m
    check_nm(n, m)
    arr = check_weight(weight, m, "sparsegpt weight")
    cols = arr.shape[1]
    g = np.asarray(gram, dtype=np.float64)
    if g.shape != (cols, cols):
        raise UserError(f"sparsegpt: Gram matrix of shape {g.shape} for a weight with {cols} inputs")
    if not np.isfinite(g).all():
        raise UserError("sparsegpt: the Gram matrix has NaN or inf values")
    if damping <= 0:
        raise UserError(f"sparsegpt: damping {damping} must be positive")
    upper, dead = _inverse_hessian_factor(g, damping)
    return sparsegpt_solve(arr, pattern, upper, dead, block_size=block_size).astype(arr.dtype)


def sparsegpt_solve(
    weight: npt.NDArray[Any], pattern: Pattern, upper: F64, dead: npt.NDArray[np.bool_], *, block_size: int = DEFAULT_BLOCK
) -> F64:
    """SparseGPT's column walk given the inverse Hessian's upper factor ``U`` and the dead inputs (fp64 result).

    Works on ``W^T``, where a column of ``W`` is a contiguous row; columns go in blocks of
    ``block_size`` (a multiple of M), groups of M inside a block (``_sparsegpt_block``), and
    each block's errors reach the later columns in one product.
    """
    n, m = pattern.n, pattern.m
    cols = weight.shape[1]
    width = max(m, (block_size // m) * m)
    wt = np.array(weight.T, dtype=np.float64, order="C")
    wt[dead, :] = 0.0
    for start in range(0, cols, width):
        stop = min(start + width, cols)
        errors = _sparsegpt_block(wt[start:stop], upper[start:stop, start:stop], n, m, pattern.block)
        wt[stop:] -= upper[start:stop, stop:].T @ errors
    out: F64 = wt.T
    return out


def _sparsegpt_block(block: F64, hinv: F64, n: int, m: int, row_block: int | None) -> F64:
    """Prune one block of columns of ``W^T`` (``(width, rows)``, in place), group by group; returns the
    scaled errors ``(width, rows)`` to propagate to the later columns.

    Inside a group of ``M`` columns the errors go column by column to the group's later columns;
    at the group's end, to the rest of the block in one product. The same updates as column by
    column over the whole block, summed in another order.
    """
    width, rows = block.shape
    errors = np.zeros_like(block)
    updated = np.empty((m, rows))
    inverse_diag = 1.0 / np.diag(hinv)
    inverse_diag_squared = np.square(inverse_diag)[:, None]
    for group in range(0, width, m):
        end = group + m
        columns, errs, factor = block[group:end], errors[group:end], hinv[group:end, group:end]
        drop = ~_group_keep((np.square(columns) * inverse_diag_squared[group:end]).T, n, row_block).T  # (M, rows)
        scale = drop * inverse_diag[group:end, None]
        for j in range(m):
            # column j after the errors of the group's earlier columns, and its error where pruned
            if j:
                np.subtract(columns[j], factor[:j, j] @ errs[:j], out=updated[j])
            else:
                updated[0] = columns[0]
            np.multiply(updated[j], scale[j], out=errs[j])
        np.copyto(columns, np.where(drop, 0.0, updated))
        if end < width:
            block[end:] -= hinv[group:end, end:].T @ errs
    return errors


def reconstruction_error(dense: npt.NDArray[Any], pruned: npt.NDArray[Any], gram: npt.NDArray[Any]) -> float:
    """``||X (W_p - W)^T||_F^2 / ||X W^T||_F^2`` from the Gram matrix ``X^T X`` (fp64)."""
    delta = pruned.astype(np.float64) - dense.astype(np.float64)
    d = dense.astype(np.float64)
    g = np.asarray(gram, dtype=np.float64)
    num = float(np.sum((delta @ g) * delta))
    den = float(np.sum((d @ g) * d))
    return num / den if den > 0 else 0.0
