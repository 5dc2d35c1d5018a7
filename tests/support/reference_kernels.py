"""The kernels as they were before they were made fast: references that the fast ones must match exactly.

``argsort_group_choice`` chose survivors by a stable argsort; ``columnwise_sparsegpt`` updated
the block's later columns after every column. Tests compare the current kernels with them
(same choices, ties included; same SparseGPT masks) and benchmarks time both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.kernels.masks import Pattern, check_nm, check_weight
from sparsedebug.kernels.pruning import _inverse_hessian_factor
from sparsedebug.records.defaults import DEFAULT_BLOCK, DEFAULT_DAMPING


def argsort_group_choice(group_scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.uint8]:
    """Indices (ascending) of the ``n`` largest scores along the last axis, ties to the lower index, by argsort."""
    order = np.argsort(-group_scores, axis=-1, kind="stable")[..., :n]
    order.sort(axis=-1)
    return order.astype(np.uint8)


def argsort_group_keep(group_scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.bool_]:
    """``argsort_group_choice`` as a keep-mask of the scores' shape."""
    keep = np.zeros(group_scores.shape, dtype=bool)
    np.put_along_axis(keep, argsort_group_choice(group_scores, n).astype(np.intp), True, axis=-1)
    return keep


def _rank_keep(scores: npt.NDArray[np.float64], n: int, block: int | None) -> npt.NDArray[np.bool_]:
    """The former per-group choice of SparseGPT: ranks from one broadcast comparison, summed."""
    rows, m = scores.shape
    key = np.add.reduceat(scores, np.arange(0, rows, block), axis=0) if block is not None else scores
    mine, other = key[:, :, None], key[:, None, :]
    lower = np.tri(m, k=-1, dtype=bool)[None, :, :]
    rank = np.sum((other > mine) | ((other == mine) & lower), axis=2)
    keep: npt.NDArray[np.bool_] = rank < n
    if block is not None:
        keep = np.repeat(keep, block, axis=0)[:rows]
    return keep


def columnwise_sparsegpt(
    weight: npt.NDArray[Any], pattern: Pattern, gram: npt.NDArray[Any], *, damping: float = DEFAULT_DAMPING,
    block_size: int = DEFAULT_BLOCK,
) -> npt.NDArray[Any]:
    """SparseGPT with the per-column update of the whole rest of the block (the former implementation)."""
    check_nm(pattern.n, pattern.m)
    arr = check_weight(weight, pattern.m, "sparsegpt weight")
    upper, dead = _inverse_hessian_factor(np.asarray(gram, dtype=np.float64), damping)
    return columnwise_solve(arr, pattern, upper, dead, block_size=block_size).astype(arr.dtype)


def columnwise_solve(
    arr: npt.NDArray[Any], pattern: Pattern, upper: npt.NDArray[np.float64], dead: npt.NDArray[np.bool_], *,
    block_size: int = DEFAULT_BLOCK,
) -> npt.NDArray[np.float64]:
    """The former column walk given the factor: every column updates the whole rest of its block."""
    n, m = pattern.n, pattern.m
    cols = arr.shape[1]
    width = max(m, (block_size // m) * m)
    w = arr.astype(np.float64, copy=True)
    w[:, dead] = 0.0
    for start in range(0, cols, width):
        stop = min(start + width, cols)
        block = w[:, start:stop].copy()
        hinv = upper[start:stop, start:stop]
        errors = np.zeros_like(block)
        diag = np.diag(hinv)
        keep = np.ones((arr.shape[0], m), dtype=bool)
        for j in range(stop - start):
            if j % m == 0:
                scores = np.square(block[:, j : j + m]) / np.square(diag[j : j + m])[None, :]
                keep = _rank_keep(scores, n, pattern.block)
            column = block[:, j]
            quantised = np.where(keep[:, j % m], column, 0.0)
            err = (column - quantised) / diag[j]
            block[:, j:] -= np.outer(err, hinv[j, j:])
            block[:, j] = quantised
            errors[:, j] = err
        w[:, start:stop] = block
        w[:, stop:] -= errors @ upper[start:stop, stop:]
    return w
