"""Audit a checkpoint before deploying it: is every tensor that is meant to be N:M really N:M, and would
the backend run it sparse?

A tensor counts as *meant to be sparse* when at least ``MEANT_SPARSE`` of its groups comply with the
pattern; a dense checkpoint (almost every group breaks 2:4) audits as dense, not as violations. For
each matrix the backend profile's own lowering rule (``sources/workload/lowering.py``) says whether it
would run sparse and, if not, why (shape, dtype, op); a dense tensor is judged as if pruned, so the
audit also answers "would pruning this layer pay off on this backend at all?".

Every tensor's ``-0.0`` elements are counted (a compressor that tests bits, as CUTLASS's does, counts them
as non-zero), with the groups that comply by value but not by bits. With a stack (``--stack NAME==VERSION``,
``sources/stacks.py``) each matrix also gets that stack's verdict at that version (``signoff/stack.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.core.io import file_digest
from sparsedebug.kernels.masks import Pattern, check_compliance, parse_pattern
from sparsedebug.records.audit import CheckpointAudit, TensorAudit, TensorStatus
from sparsedebug.records.notes import note
from sparsedebug.records.run import FallbackReason, KernelPath
from sparsedebug.signoff.stack import TensorFacts, consumer_op, judge_on_stack
from sparsedebug.sources.checkpoint import Tensor, read_checkpoint
from sparsedebug.sources.stacks import StackSpec, parse_stack_spec
from sparsedebug.sources.workload.lowering import Decision, LayerQuery, get_profile

# Share of compliant groups from which a tensor is taken as meant to be sparse.
MEANT_SPARSE = 0.90

def _op(name: str) -> str:
    return "embedding" if consumer_op(name) == "embedding" else "linear"


def negative_zero_mask(values: np.ndarray, dtype: str) -> np.ndarray:
    """Where ``values`` hold -0.0: sign bit set, every other bit clear (fp8 is read as raw bytes: 0x80)."""
    if dtype.startswith("fp8") and values.dtype.kind == "u":
        return np.asarray(values == 0x80)
    if values.dtype.kind != "f":
        return np.zeros(values.shape, dtype=bool)
    return np.asarray((values == 0) & np.signbit(values))


def _bad_groups(nonzero: np.ndarray, pattern: Pattern) -> np.ndarray:
    """Per row (or per block of V rows) and group of M: more than N non-zeros."""
    rows, k = nonzero.shape
    groups = nonzero.reshape(rows, k // pattern.m, pattern.m)
    if pattern.block is not None:
        groups = np.logical_or.reduceat(groups, np.arange(0, rows, pattern.block), axis=0)
    return np.asarray(groups.sum(axis=2) > pattern.n)


def _rows_of(bad: np.ndarray, pattern: Pattern) -> list[int]:
    step = pattern.block or 1
    return [int(r) * step for r in np.flatnonzero(bad.any(axis=1))[:5]]


def _violating_rows(values: np.ndarray, pattern: Pattern) -> list[int]:
    return _rows_of(_bad_groups(values != 0, pattern), pattern)


def _decide(backend: str, query: LayerQuery) -> Decision:
    """The profile's decision; a stored type the dtype table does not know (GGUF ``q4_1``, ``int16``) runs dense."""
    if canonical_dtype(query.dtype) is None:
        return Decision(
            path=KernelPath.DENSE, reason=FallbackReason.DTYPE_UNSUPPORTED,
            detail=note("targets.stored_format_unknown", dtype=query.dtype, backend=backend),
        )  # fmt: skip
    return get_profile(backend).decide(query)


def audit_tensor(tensor: Tensor, pattern: Pattern, backend: str, stack: StackSpec | None = None) -> TensorAudit:
    """One tensor's compliance with ``pattern``, its -0.0 count, the backend's decision and (with ``stack``) the stack's verdict."""
    shape = [int(d) for d in tensor.values.shape]
    base = {"name": tensor.name, "shape": shape, "dtype": tensor.dtype}
    raw = np.asarray(tensor.values)
    negzero = negative_zero_mask(raw, tensor.dtype)
    neg_count = int(np.count_nonzero(negzero))
    neg_rows = [int(r) for r in np.flatnonzero(negzero.reshape(negzero.shape[0], -1).any(axis=1))[:5]] if raw.ndim >= 1 and neg_count else []
    if raw.ndim != 2:
        return TensorAudit(**base, status="not_a_matrix", negative_zeros=neg_count, negative_zero_rows=neg_rows)
    # by value, -0.0 is a zero (fp8 raw bytes 0x80 too)
    values = np.where(negzero, 0, raw) if negzero.any() else raw
    zero_fraction = float(np.count_nonzero(values == 0) / values.size) if values.size else 0.0
    if shape[1] % pattern.m != 0:
        decision = _decide(backend, LayerQuery(tensor.name, _op(tensor.name), shape[0], shape[1], tensor.dtype, pattern))
        facts = TensorFacts(tensor.name, tensor.dtype, shape[0], shape[1], "shape", pattern, negative_zeros=neg_count, negative_zero_rows=neg_rows)
        return TensorAudit(
            **base, status="shape", zero_fraction=zero_fraction, backend_path=decision.path.value,
            backend_reason=decision.reason.value if decision.reason else None, backend_detail=decision.detail,
            backend_judged="once_pruned", negative_zeros=neg_count, negative_zero_rows=neg_rows,
            stack=judge_on_stack(stack.profile, stack.version, facts) if stack is not None else None,
        )
    compliance = check_compliance(values if values.dtype.kind == "f" else values.astype(np.float32), pattern.n, pattern.m, pattern.block)
    status: TensorStatus
    if compliance.violating_groups == 0:
        status = "compliant"
    elif 1.0 - compliance.violating_fraction >= MEANT_SPARSE:
        status = "violations"
    else:
        status = "dense"
    bw_groups: int | None = None
    bw_rows: list[int] = []
    if neg_count and status != "dense":
        by_value = _bad_groups(values != 0, pattern)
        extra = _bad_groups((values != 0) | negzero, pattern) & ~by_value
        bw_groups, bw_rows = int(np.count_nonzero(extra)), _rows_of(extra, pattern)
    judged = "once_pruned" if status == "dense" else "as_stored"
    query = LayerQuery(tensor.name, _op(tensor.name), shape[0], shape[1], tensor.dtype, pattern, compliant=status != "violations")
    decision = _decide(backend, query)
    violating_rows = _violating_rows(values, pattern) if status == "violations" else []
    verdict = None
    if stack is not None:
        facts = TensorFacts(
            tensor.name, tensor.dtype, shape[0], shape[1], status, pattern, violating_rows=violating_rows,
            negative_zeros=neg_count, negative_zero_rows=neg_rows, bitwise_violating_groups=bw_groups or 0, bitwise_violating_rows=bw_rows,
        )
        verdict = judge_on_stack(stack.profile, stack.version, facts)
    return TensorAudit(
        **base, status=status, zero_fraction=zero_fraction, groups=compliance.groups,
        violating_groups=compliance.violating_groups, violating_fraction=compliance.violating_fraction,
        first_violating_rows=violating_rows,
        backend_path=decision.path.value, backend_reason=decision.reason.value if decision.reason else None,
        backend_detail=decision.detail, backend_judged=judged, negative_zeros=neg_count, negative_zero_rows=neg_rows,
        bitwise_violating_groups=bw_groups, bitwise_violating_rows=bw_rows, stack=verdict,
    )


def audit_checkpoint(path: Path, pattern: str = "2:4", backend: str = "h200-cusparselt", stack: str | None = None) -> CheckpointAudit:
    """Audit every tensor of a ``.safetensors``, ``.npz`` or ``.gguf`` checkpoint (``stack``: ``NAME==VERSION``)."""
    parsed = parse_pattern(pattern)
    get_profile(backend)  # an unknown profile is a UserError before any tensor is read
    spec = parse_stack_spec(stack) if stack is not None else None
    tensors = [audit_tensor(t, parsed, backend, spec) for t in read_checkpoint(path)]
    counts: dict[str, int] = {}
    stack_counts: dict[str, int] = {}
    for t in tensors:
        counts[t.status] = counts.get(t.status, 0) + 1
        if t.stack is not None:
            stack_counts[t.stack.verdict] = stack_counts.get(t.stack.verdict, 0) + 1
    meant = ("compliant", "violations")
    return CheckpointAudit(
        file=file_digest(path), pattern=str(parsed), backend=backend, meant_sparse_threshold=MEANT_SPARSE,
        tensors=tensors, counts=counts, failing=[t.name for t in tensors if t.status == "violations"],
        negative_zero_tensors=[t.name for t in tensors if t.negative_zeros],
        stack=spec.label if spec is not None else None, stack_title=spec.profile.title if spec is not None else None,
        stack_file=file_digest(spec.file) if spec is not None else None, stack_counts=stack_counts,
        stack_failing=[t.name for t in tensors if t.stack is not None and t.status in meant and t.stack.verdict not in ("sparse", "eligible")],
    )
