"""Compare how one layer was dispatched in two runs: backend changes, their cause in the trace, and the fix that tests it.

A layer whose op stayed the same but whose backend changed (SDPA from cudnn or
flash to efficient or math, a GEMM from cuBLAS to another path) took a different
*lowering*: the model did not change. What the dispatcher chose from is in the
trace (``DispatchEvidence``): input layout, dtypes, mask, dropout, head dim. The
cause of a change is what differs there between the two runs; the fix undoes it
(make the producer's output contiguous, cast back, drop the mask).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsedebug.records.note_codes.facts import CauseCode
from sparsedebug.records.run import DispatchCause, DispatchEvidence, KernelClass, LowerLayer

if TYPE_CHECKING:  # a type only: records.classification (and records.power) is no import of every bisect's start
    from sparsedebug.records.classification import FixAction

_HALF = frozenset({"fp16", "bf16", "fp8_e4m3", "fp8_e5m2"})
_WIDE = frozenset({"fp32", "fp64"})
_TENSOR_CORE = frozenset({KernelClass.DENSE_TC_GEMM, KernelClass.SPARSE_GEMM, KernelClass.ATTENTION})


def _role(evidence: DispatchEvidence, k: int) -> str:
    names = ("query", "key", "value") if "attention" in evidence.op else ("input", "weight", "bias")
    return names[k] if k < len(names) else f"input {k}"


def backend_changed(base: LowerLayer, cand: LowerLayer) -> bool:
    """Both runs recorded a backend for the layer and it differs."""
    b = base.dispatch.backend if base.dispatch else None
    c = cand.dispatch.backend if cand.dispatch else None
    return b is not None and c is not None and b != c


def dispatch_causes(base: DispatchEvidence | None, cand: DispatchEvidence | None) -> list[DispatchCause]:
    """What the dispatcher saw differently in the candidate (layout, dtype, mask, dropout, head dim), as typed causes."""
    if base is None or cand is None:
        return []
    causes: list[DispatchCause] = []
    for k in cand.non_contiguous:
        if k not in base.non_contiguous:
            stride = cand.input_strides[k] if k < len(cand.input_strides) else None
            causes.append(DispatchCause(code="non_contiguous", tensor=_role(cand, k), was="1", now=str(stride[-1]) if stride else None))
    for k, (before, after) in enumerate(zip(base.input_dtypes[:3], cand.input_dtypes[:3], strict=False)):
        if before is not None and after is not None and before != after:
            causes.append(DispatchCause(code="dtype_change", tensor=_role(cand, k), was=before, now=after))
    if cand.attn_mask and not base.attn_mask:
        causes.append(DispatchCause(code="attn_mask"))
    if (cand.dropout_p or 0.0) > 0.0 and not (base.dropout_p or 0.0) > 0.0:
        causes.append(DispatchCause(code="dropout", was="0", now=f"{cand.dropout_p:g}"))
    if cand.head_dim is not None and base.head_dim is not None and cand.head_dim != base.head_dim:
        causes.append(DispatchCause(code="head_dim", was=str(base.head_dim), now=str(cand.head_dim)))
    return causes


# The fix that undoes each kind of dispatch cause.
FIX_ACTION: dict[CauseCode, FixAction] = {
    "non_contiguous": "make_contiguous", "dtype_change": "cast_back", "attn_mask": "drop_attn_mask",
    "dropout": "drop_dropout", "head_dim": "restore_head_dim",
}


def dispatch_changed(base: LowerLayer, cand: LowerLayer) -> bool:
    """The backend changed, or the inputs the dispatcher chooses from changed (a GEMM turned non-contiguous or changed dtype)."""
    return backend_changed(base, cand) or bool(dispatch_causes(base.dispatch, cand.dispatch))


def moved_to_fp32(base: LowerLayer, cand: LowerLayer) -> bool:
    """A tensor-core half-precision path became an fp32/SIMT one (kernel class, or the inputs' dtype)."""
    if base.kernel_class in _TENSOR_CORE and cand.kernel_class is KernelClass.FP32_GEMM:
        return True
    b, c = base.dispatch, cand.dispatch
    if b is None or c is None:
        return False
    before = {d for d in b.input_dtypes[:3] if d is not None}
    after = {d for d in c.input_dtypes[:3] if d is not None}
    return bool(before) and before <= _HALF and bool(after & _WIDE)
