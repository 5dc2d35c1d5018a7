"""N:M patterns, mask selection and compliance checks.

Groups run along the input (reduction) dimension, as sparse tensor cores
require: for a weight ``W`` of shape ``(out, in)`` each row is cut into
consecutive groups of ``M`` columns, and at most ``N`` entries of every group may
be non-zero. The blocked ``V:N:M`` variant additionally makes blocks of ``V``
consecutive rows share one ``N``-of-``M`` column choice per group.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ConfigDict

from sparsedebug.core.errors import UserError
from sparsedebug.records.base import Record
from sparsedebug.records.run import DENSE

# Largest group size supported (metadata then fits one uint8 per kept value).
MAX_M = 16

_PATTERN_RE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*(?::\s*(\d+)\s*)?$")


class Pattern(Record):
    """An ``N:M`` pattern, optionally blocked (``V:N:M`` with ``block=V``)."""

    model_config = ConfigDict(frozen=True)

    n: int
    m: int
    block: int | None = None

    def __str__(self) -> str:
        core = f"{self.n}:{self.m}"
        return core if self.block is None else f"{self.block}:{core}"

    @property
    def density(self) -> float:
        """Fraction of weights kept, ``N / M``."""
        return self.n / self.m


def check_nm(n: int, m: int, what: str = "pattern") -> None:
    """Raise ``UserError`` unless ``1 <= n < m <= 16``."""
    if not 2 <= m <= MAX_M:
        raise UserError(f"{what}: M={m} must be between 2 and {MAX_M}")
    if not 1 <= n < m:
        raise UserError(f"{what}: N={n} must satisfy 1 <= N < M={m}")


def check_divisible(k: int, pattern: Pattern, what: str) -> None:
    """The one rule of every N:M weight: its reduction dimension ``K`` is a whole number of groups of ``M``."""
    if k % pattern.m != 0:
        raise UserError(f"{what}: K={k} is not divisible by M={pattern.m} of pattern {pattern}")


def check_block(rows: int, pattern: Pattern, what: str) -> None:
    """Refuse a ``V:N:M`` block taller than the weight it applies to (``rows``): the block would be the whole
    matrix, so ``V`` says nothing; give ``V`` at most the rows, or the plain ``N:M`` pattern."""
    if pattern.block is not None and pattern.block > rows:
        raise UserError(
            f"{what}: block V={pattern.block} of pattern {pattern} is taller than the {rows} rows it applies to; "
            f"use V <= {rows}, or {pattern.n}:{pattern.m} for one choice per row"
        )


def describe_pattern(pattern: Pattern) -> str:
    """The pattern in words, so that ``V:N:M`` is never read silently: ``2:4 (N of every M weights kept)``
    or ``2:4:8 = V=2 rows per block, 4 of every 8 weights kept``."""
    if pattern.block is None:
        return f"{pattern}: {pattern.n} of every {pattern.m} weights kept per row"
    return f"{pattern}: V:N:M, blocks of V={pattern.block} rows sharing one choice of {pattern.n} of every {pattern.m} weights"


def parse_pattern(text: str) -> Pattern:
    """Parse ``"N:M"`` (e.g. ``"2:4"``) or ``"V:N:M"`` (e.g. ``"64:2:4"``).

    Raises ``UserError`` for malformed text, ``N >= M``, ``M > 16`` or ``V < 1``.
    """
    match = _PATTERN_RE.match(text)
    if match is None:
        raise UserError(f"pattern {text!r}: expected 'N:M' (e.g. 2:4) or 'V:N:M' (e.g. 64:2:4)")
    first, second, third = match.groups()
    if third is None:
        block, n, m = None, int(first), int(second)
    else:
        block, n, m = int(first), int(second), int(third)
    check_nm(n, m, what=f"pattern {text!r}")
    if block is not None and block < 1:
        raise UserError(f"pattern {text!r}: block V={block} must be at least 1")
    return Pattern(n=n, m=m, block=block)


def check_weight(weight: Any, m: int, what: str = "weight") -> npt.NDArray[np.floating[Any]]:
    """Validate a weight matrix: a 2-D floating array, finite, ``K`` divisible by ``m``.

    Returns it as a numpy array (no copy when already one). Messages name ``what``
    so callers can prefix the layer name.
    """
    arr = np.asarray(weight)
    if arr.ndim != 2:
        raise UserError(f"{what}: expected a 2-D (out, in) matrix, got {arr.ndim}-D shape {tuple(arr.shape)}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise UserError(f"{what}: dtype {arr.dtype} is not a floating type (use float16, float32 or float64)")
    rows, k = arr.shape
    if rows == 0 or k == 0:
        raise UserError(f"{what}: empty matrix of shape {tuple(arr.shape)}")
    if k % m != 0:
        raise UserError(f"{what}: K={k} is not divisible by M={m}")
    if not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise UserError(f"{what}: {bad} NaN or inf value(s); prune only finite weights")
    return arr


def _check_scores(scores: Any, shape: tuple[int, ...]) -> npt.NDArray[Any]:
    arr = np.asarray(scores)
    if arr.shape != shape:
        raise UserError(f"scores: shape {tuple(arr.shape)} does not match the weight's {shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise UserError(f"scores: dtype {arr.dtype} is not numeric")
    if not np.isfinite(arr).all():
        raise UserError("scores: NaN or inf value(s)")
    return arr


# Largest ``M`` whose top-``N`` is chosen by pairwise comparisons (``M(M-1)/2`` of them) instead of a sort.
SMALL_GROUP = 8

# Below this many groups the comparisons run as one broadcast ``(..., M, M)`` (fewer numpy calls); above it, pair by
# pair on ``(...)`` arrays (less memory traffic).
FEW_GROUPS = 4096


def group_keep(group_scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.bool_]:
    """Keep-mask ``(..., M)`` of the ``n`` largest scores along the last axis; ties go to the lower index.

    An entry is kept when fewer than ``n`` entries of its group come before it: larger,
    or equal at a lower index. For ``M <= SMALL_GROUP`` the ranks come from pairwise
    comparisons, no sort (six for 2:4; all at once for few groups, pair by pair for
    many); larger groups use a stable argsort. All give the same choice, ties included.
    """
    scores = np.asarray(group_scores)
    m = scores.shape[-1]
    if n >= m:
        return np.ones(scores.shape, dtype=bool)
    if m > SMALL_GROUP:
        return _keep_by_sort(scores, n)
    if scores.size < FEW_GROUPS * m:
        return _keep_by_broadcast(scores, n)
    return _keep_by_pairs(scores, n)


def _keep_by_broadcast(scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.bool_]:
    """``group_keep`` from all ``M x M`` comparisons at once: entry ``c`` is beaten by ``d`` when ``d`` is
    larger, or equal at a lower index."""
    m = scores.shape[-1]
    mine, other = scores[..., :, None], scores[..., None, :]
    beaten = np.where(np.tri(m, k=-1, dtype=bool), other >= mine, other > mine)
    keep: npt.NDArray[np.bool_] = np.count_nonzero(beaten, axis=-1) < n
    return keep


def _keep_by_pairs(scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.bool_]:
    """``group_keep`` from the ``M(M-1)/2`` pairwise comparisons, each on whole ``(...)`` arrays."""
    m = scores.shape[-1]
    columns = [scores[..., i] for i in range(m)]
    # rank[j] = entries before j: at a lower index and not smaller, or at a higher index and larger.
    # Start from j (every lower index before it) and take back each lower one that j beats.
    rank = np.empty((m, *scores.shape[:-1]), dtype=np.uint8)
    for j in range(m):
        rank[j] = j
    for i in range(m):
        for j in range(i + 1, m):
            later_wins = np.greater(columns[j], columns[i])  # a tie goes to i, the lower index
            rank[i] += later_wins
            rank[j] -= later_wins
    keep: npt.NDArray[np.bool_] = np.moveaxis(rank < n, 0, -1)
    return keep


def _keep_by_sort(scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.bool_]:
    """``group_keep`` by a stable argsort of the negated scores (any ``M``)."""
    order = np.argsort(-scores, axis=-1, kind="stable")[..., :n]
    keep = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return keep


def group_choice(group_scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.uint8]:
    """Indices (ascending, within the group) of the ``n`` largest scores along the last axis.

    ``group_scores`` has shape ``(..., M)``; ties go to the lower index, so the
    choice is deterministic (``group_keep``). Returns uint8 of shape ``(..., n)``.
    """
    keep = group_keep(group_scores, n)
    lead = keep.shape[:-1]
    positions = np.nonzero(keep.reshape(-1, keep.shape[-1]))[1]
    return positions.astype(np.uint8).reshape(*lead, min(n, keep.shape[-1]))


def _row_groups(weight: Any, n: int, m: int, scores: Any) -> npt.NDArray[Any]:
    """``(rows, K/M, M)`` ranking keys of the per-row choice: ``|weight|`` or ``scores``."""
    check_nm(n, m)
    arr = check_weight(weight, m)
    rows, k = arr.shape
    key = np.abs(arr) if scores is None else _check_scores(scores, arr.shape)
    return key.reshape(rows, k // m, m)


def _block_groups(weight: Any, n: int, m: int, block: int, scores: Any) -> npt.NDArray[np.float64]:
    """``(blocks, K/M, M)`` ranking keys of the blocked choice: ``|weight|`` or ``scores`` summed over each block's rows."""
    check_nm(n, m)
    if block < 1:
        raise UserError(f"block V={block} must be at least 1")
    arr = check_weight(weight, m)
    rows, k = arr.shape
    key = np.abs(arr) if scores is None else _check_scores(scores, arr.shape)
    starts = np.arange(0, rows, block)
    block_sums = np.add.reduceat(key.astype(np.float64, copy=False), starts, axis=0)
    return block_sums.reshape(len(starts), k // m, m)


def nm_choice(weight: Any, n: int, m: int, scores: Any = None) -> npt.NDArray[np.uint8]:
    """Per-row ``N:M`` choice: uint8 ``(rows, K/M, N)`` positions kept in each group.

    Chooses the ``n`` largest ``|weight|`` (or ``scores``) of each group of ``m``
    consecutive entries along axis 1.
    """
    return group_choice(_row_groups(weight, n, m, scores), n)


def vnm_choice(weight: Any, n: int, m: int, block: int, scores: Any = None) -> npt.NDArray[np.uint8]:
    """Blocked choice: uint8 ``(blocks, K/M, N)``, one per block of ``block`` rows.

    Each block picks the ``n`` columns of each group with the largest summed
    ``|weight|`` (or summed ``scores``) over the block's rows. The last block may
    be shorter when ``block`` does not divide the row count.
    """
    return group_choice(_block_groups(weight, n, m, block, scores), n)


def choice_to_mask(choice: npt.NDArray[np.uint8], m: int, rows: int, block: int | None = None) -> npt.NDArray[np.bool_]:
    """Expand a group choice (per row, or per block of ``block`` rows) into a boolean mask."""
    lead, groups, _ = choice.shape
    grouped = np.zeros((lead, groups, m), dtype=bool)
    np.put_along_axis(grouped, choice.astype(np.intp), True, axis=2)
    mask: npt.NDArray[np.bool_] = grouped.reshape(lead, groups * m)
    if block is not None:
        mask = np.repeat(mask, block, axis=0)[:rows]
    return mask


def nm_mask(weight: Any, n: int, m: int, scores: Any = None) -> npt.NDArray[np.bool_]:
    """Boolean mask keeping the top-``n`` of every ``m`` consecutive entries along axis 1.

    Ranked by ``|weight|``, or by ``scores`` (same shape, e.g. ``|W| * ||x||`` for
    activation-aware pruning) when given. Exactly ``n`` entries per group are True.
    """
    groups = _row_groups(weight, n, m, scores)
    mask: npt.NDArray[np.bool_] = group_keep(groups, n).reshape(groups.shape[0], -1)
    return mask


def vnm_mask(weight: Any, n: int, m: int, block: int, scores: Any = None) -> npt.NDArray[np.bool_]:
    """Boolean ``V:N:M`` mask: rows in blocks of ``block`` share one ``n``-of-``m`` choice per group."""
    groups = _block_groups(weight, n, m, block, scores)
    keep = group_keep(groups, n).reshape(groups.shape[0], -1)
    mask: npt.NDArray[np.bool_] = np.repeat(keep, block, axis=0)[: np.asarray(weight).shape[0]]
    return mask


class Compliance(Record):
    """How far a tensor is from an ``N:M`` pattern."""

    model_config = ConfigDict(frozen=True)

    pattern: str
    groups: int
    violating_groups: int
    violating_fraction: float
    max_nonzeros: int

    @property
    def compliant(self) -> bool:
        """True when no group has more than ``N`` non-zeros."""
        return self.violating_groups == 0


def check_compliance(weight: Any, n: int, m: int, block: int | None = None) -> Compliance:
    """Count the groups with more than ``n`` non-zeros among each ``m`` along axis 1.

    With ``block``, the union of non-zero positions over each block of ``block``
    rows must also fit ``n`` per group (the ``V:N:M`` rule); groups are then
    counted per block.
    """
    check_nm(n, m)
    arr = check_weight(weight, m)
    rows, k = arr.shape
    nonzero = (arr != 0).reshape(rows, k // m, m)
    if block is not None:
        if block < 1:
            raise UserError(f"block V={block} must be at least 1")
        starts = np.arange(0, rows, block)
        nonzero = np.logical_or.reduceat(nonzero, starts, axis=0)
    counts = nonzero.sum(axis=2)
    violating = int(np.count_nonzero(counts > n))
    total = int(counts.size)
    pattern = Pattern(n=n, m=m, block=block)
    return Compliance(
        pattern=str(pattern),
        groups=total,
        violating_groups=violating,
        violating_fraction=violating / total,
        max_nonzeros=int(counts.max()),
    )


def intent_pattern(intended: str | None) -> Pattern | None:
    """The pattern of a layer's declared sparsity (a canonical ``records.run.SparsityIntent``); None for
    ``dense``, and for a pattern outside the kernels' limits (which no kernel could run)."""
    if intended is None or intended == DENSE:
        return None
    try:
        return parse_pattern(intended)
    except UserError:
        return None
