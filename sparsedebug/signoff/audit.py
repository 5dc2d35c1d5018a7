"""Audit a checkpoint before deploying it: is every tensor that is meant to be N:M really N:M, and would
the backend run it sparse?

A tensor counts as *meant to be sparse* when at least ``MEANT_SPARSE`` of its groups comply with the
pattern; a dense checkpoint (almost every group breaks 2:4) audits as dense, not as violations. For
each matrix the backend profile's own lowering rule (``sources/workload/lowering.py``) says whether it
would run sparse and, if not, why (shape, dtype, op); a dense tensor is judged as if pruned, so the
audit also answers "would pruning this layer pay off on this backend at all?".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.core.io import file_digest
from sparsedebug.kernels.masks import Pattern, check_compliance, parse_pattern
from sparsedebug.records.audit import CheckpointAudit, TensorAudit, TensorStatus
from sparsedebug.records.run import FallbackReason, KernelPath
from sparsedebug.sources.checkpoint import Tensor, read_checkpoint
from sparsedebug.sources.workload.lowering import Decision, LayerQuery, get_profile

MEANT_SPARSE = 0.90
"""Share of compliant groups from which a tensor is taken as meant to be sparse."""

_EMBEDDING_MARKERS = ("embed", "wte", "wpe", "token_embd")


def _op(name: str) -> str:
    lowered = name.lower()
    return "embedding" if any(marker in lowered for marker in _EMBEDDING_MARKERS) else "linear"


def _violating_rows(values: np.ndarray, pattern: Pattern) -> list[int]:
    rows, k = values.shape
    groups = (values != 0).reshape(rows, k // pattern.m, pattern.m)
    if pattern.block is not None:
        starts = np.arange(0, rows, pattern.block)
        counts = np.logical_or.reduceat(groups, starts, axis=0).sum(axis=2)
        bad_blocks = np.flatnonzero((counts > pattern.n).any(axis=1))
        return [int(b) * pattern.block for b in bad_blocks[:5]]
    counts = groups.sum(axis=2)
    return [int(r) for r in np.flatnonzero((counts > pattern.n).any(axis=1))[:5]]


def _decide(backend: str, query: LayerQuery) -> Decision:
    """The profile's decision; a stored type the dtype table does not know (GGUF ``q4_1``, ``int16``) runs dense."""
    if canonical_dtype(query.dtype) is None:
        return Decision(
            path=KernelPath.DENSE, reason=FallbackReason.DTYPE_UNSUPPORTED,
            detail=f"stored as {query.dtype}: {backend} runs sparse only the formats of its profile; dequantize or convert first",
        )  # fmt: skip
    return get_profile(backend).decide(query)


def audit_tensor(tensor: Tensor, pattern: Pattern, backend: str) -> TensorAudit:
    """One tensor's compliance with ``pattern`` and the backend's decision for it."""
    shape = [int(d) for d in tensor.values.shape]
    base = {"name": tensor.name, "shape": shape, "dtype": tensor.dtype}
    if tensor.values.ndim != 2:
        return TensorAudit(**base, status="not_a_matrix")
    values = np.asarray(tensor.values)
    zero_fraction = float(np.count_nonzero(values == 0) / values.size) if values.size else 0.0
    if shape[1] % pattern.m != 0:
        decision = _decide(backend, LayerQuery(tensor.name, _op(tensor.name), shape[0], shape[1], tensor.dtype, pattern))
        return TensorAudit(
            **base, status="shape", zero_fraction=zero_fraction, backend_path=decision.path.value,
            backend_reason=decision.reason.value if decision.reason else None, backend_detail=decision.detail,
            backend_judged="once_pruned",
        )
    compliance = check_compliance(values if values.dtype.kind == "f" else values.astype(np.float32), pattern.n, pattern.m, pattern.block)
    status: TensorStatus
    if compliance.violating_groups == 0:
        status = "compliant"
    elif 1.0 - compliance.violating_fraction >= MEANT_SPARSE:
        status = "violations"
    else:
        status = "dense"
    judged = "once_pruned" if status == "dense" else "as_stored"
    query = LayerQuery(tensor.name, _op(tensor.name), shape[0], shape[1], tensor.dtype, pattern, compliant=status != "violations")
    decision = _decide(backend, query)
    return TensorAudit(
        **base, status=status, zero_fraction=zero_fraction, groups=compliance.groups,
        violating_groups=compliance.violating_groups, violating_fraction=compliance.violating_fraction,
        first_violating_rows=_violating_rows(values, pattern) if status == "violations" else [],
        backend_path=decision.path.value, backend_reason=decision.reason.value if decision.reason else None,
        backend_detail=decision.detail, backend_judged=judged,
    )


def audit_checkpoint(path: Path, pattern: str = "2:4", backend: str = "h200-cusparselt") -> CheckpointAudit:
    """Audit every tensor of a ``.safetensors``, ``.npz`` or ``.gguf`` checkpoint."""
    parsed = parse_pattern(pattern)
    get_profile(backend)  # an unknown profile is a UserError before any tensor is read
    tensors = [audit_tensor(t, parsed, backend) for t in read_checkpoint(path)]
    counts: dict[str, int] = {}
    for t in tensors:
        counts[t.status] = counts.get(t.status, 0) + 1
    return CheckpointAudit(
        file=file_digest(path), pattern=str(parsed), backend=backend, meant_sparse_threshold=MEANT_SPARSE,
        tensors=tensors, counts=counts, failing=[t.name for t in tensors if t.status == "violations"],
    )
