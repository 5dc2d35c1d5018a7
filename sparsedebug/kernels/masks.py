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

MAX_M = 16
"""Largest group size supported (metadata then fits one uint8 per kept value)."""

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


def group_choice(group_scores: npt.NDArray[Any], n: int) -> npt.NDArray[np.uint8]:
    """Indices (ascending, within the group) of the ``n`` largest scores along the last axis.

    ``group_scores`` has shape ``(..., M)``; ties go to the lower index, so the
    choice is deterministic. Returns uint8 of shape ``(..., n)``.
    """
    order = np.argsort(-group_scores, axis=-1, kind="stable")[..., :n]
    order.sort(axis=-1)
    return order.astype(np.uint8)


def nm_choice(weight: Any, n: int, m: int, scores: Any = None) -> npt.NDArray[np.uint8]:
    """Per-row ``N:M`` choice: uint8 ``(rows, K/M, N)`` positions kept in each group.

    Chooses the ``n`` largest ``|weight|`` (or ``scores``) of each group of ``m``
    consecutive entries along axis 1.
    """
    check_nm(n, m)
    arr = check_weight(weight, m)
    rows, k = arr.shape
    key = np.abs(arr) if scores is None else _check_scores(scores, arr.shape)
    return group_choice(key.reshape(rows, k // m, m), n)


def vnm_choice(weight: Any, n: int, m: int, block: int, scores: Any = None) -> npt.NDArray[np.uint8]:
    """Blocked choice: uint8 ``(blocks, K/M, N)``, one per block of ``block`` rows.

    Each block picks the ``n`` columns of each group with the largest summed
    ``|weight|`` (or summed ``scores``) over the block's rows. The last block may
    be shorter when ``block`` does not divide the row count.
    """
    check_nm(n, m)
    if block < 1:
        raise UserError(f"block V={block} must be at least 1")
    arr = check_weight(weight, m)
    rows, k = arr.shape
    key = np.abs(arr) if scores is None else _check_scores(scores, arr.shape)
    key = key.astype(np.float64, copy=False)
    starts = np.arange(0, rows, block)
    block_sums = np.add.reduceat(key, starts, axis=0)
    return group_choice(block_sums.reshape(len(starts), k // m, m), n)


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
    arr = np.asarray(weight)
    choice = nm_choice(weight, n, m, scores)
    return choice_to_mask(choice, m, arr.shape[0])


def vnm_mask(weight: Any, n: int, m: int, block: int, scores: Any = None) -> npt.NDArray[np.bool_]:
    """Boolean ``V:N:M`` mask: rows in blocks of ``block`` share one ``n``-of-``m`` choice per group."""
    arr = np.asarray(weight)
    choice = vnm_choice(weight, n, m, block, scores)
    return choice_to_mask(choice, m, arr.shape[0], block=block)


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
