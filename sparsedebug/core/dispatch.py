"""Compare how one layer was dispatched in two runs: backend changes, their cause in the trace, and the fix that tests it.

A layer whose op stayed the same but whose backend changed (SDPA from cudnn or
flash to efficient or math, a GEMM from cuBLAS to another path) took a different
*lowering*: the model did not change. What the dispatcher chose from is in the
trace (``DispatchEvidence``): input layout, dtypes, mask, dropout, head dim. The
cause of a change is what differs there between the two runs; the fix undoes it
(make the producer's output contiguous, cast back, drop the mask).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.records.classification import CauseCode, FixAction
from sparsedebug.records.run import DispatchEvidence, KernelClass, LowerLayer

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


@dataclass(frozen=True)
class Cause:
    """One thing the dispatcher saw differently in the candidate: its kind, the tensor role it names, and in words."""

    code: CauseCode
    tensor: str | None
    text: str
    # The baseline's value the fix restores (the dtype, for a dtype change).
    was: str | None = None


def dispatch_causes(base: DispatchEvidence | None, cand: DispatchEvidence | None) -> list[Cause]:
    """What the dispatcher saw differently in the candidate (layout, dtype, mask, dropout, head dim), as codes and words."""
    if base is None or cand is None:
        return []
    causes: list[Cause] = []
    for k in cand.non_contiguous:
        if k not in base.non_contiguous:
            stride = cand.input_strides[k] if k < len(cand.input_strides) else None
            role = _role(cand, k)
            causes.append(Cause("non_contiguous", role, f"{role} not contiguous (last-dim stride {stride[-1] if stride else '?'}, was 1)"))
    for k, (before, after) in enumerate(zip(base.input_dtypes[:3], cand.input_dtypes[:3], strict=False)):
        if before is not None and after is not None and before != after:
            role = _role(cand, k)
            causes.append(Cause("dtype_change", role, f"{role} dtype {before} -> {after}", was=before))
    if cand.attn_mask and not base.attn_mask:
        causes.append(Cause("attn_mask", None, "an attn_mask is now passed"))
    if (cand.dropout_p or 0.0) > 0.0 and not (base.dropout_p or 0.0) > 0.0:
        causes.append(Cause("dropout", None, f"dropout_p {cand.dropout_p:g} (was 0)"))
    if cand.head_dim is not None and base.head_dim is not None and cand.head_dim != base.head_dim:
        causes.append(Cause("head_dim", None, f"head dim {base.head_dim} -> {cand.head_dim}"))
    return causes


def dispatch_cause(base: DispatchEvidence | None, cand: DispatchEvidence | None) -> list[str]:
    """What the dispatcher saw differently in the candidate: layout, dtype, mask, dropout, head dim (in words)."""
    return [c.text for c in dispatch_causes(base, cand)]


# The fix that undoes each kind of dispatch cause.
FIX_ACTION: dict[CauseCode, FixAction] = {
    "non_contiguous": "make_contiguous", "dtype_change": "cast_back", "attn_mask": "drop_attn_mask",
    "dropout": "drop_dropout", "head_dim": "restore_head_dim",
}


def dispatch_changed(base: LowerLayer, cand: LowerLayer) -> bool:
    """The backend changed, or the inputs the dispatcher chooses from changed (a GEMM turned non-contiguous or changed dtype)."""
    return backend_changed(base, cand) or bool(dispatch_cause(base.dispatch, cand.dispatch))


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


def change_text(base: LowerLayer, cand: LowerLayer) -> str:
    """``attention backend cudnn -> math`` style text, with the cause when the trace shows one."""
    parts = []
    b = base.dispatch.backend if base.dispatch else None
    c = cand.dispatch.backend if cand.dispatch else None
    if b is not None and c is not None and b != c:
        what = "attention" if cand.dispatch is not None and "attention" in cand.dispatch.op else "GEMM"
        parts.append(f"{what} backend {b} -> {c}")
    cause = dispatch_cause(base.dispatch, cand.dispatch)
    if cause:
        parts.append("cause seen in the trace: " + "; ".join(cause))
    return ", ".join(parts)


def fix_for(layer: str, causes: list[str]) -> str | None:
    """The smallest change that undoes the first cause, in words (None when no cause is known)."""
    for cause in causes:
        if "not contiguous" in cause:
            tensor = cause.split(" ", 1)[0]
            return f"make the {tensor} of {layer} contiguous (call .contiguous() on its producer's output) and re-trace"
        if "dtype" in cause:
            tensor, _word, change = cause.split(" ", 2)
            old = change.split(" -> ")[0]
            return f"cast the {tensor} of {layer} back to {old} and re-trace"
        if "attn_mask" in cause:
            return f"drop the attn_mask of {layer} (use is_causal=True for a causal mask) and re-trace"
        if "dropout" in cause:
            return f"set dropout_p=0 for {layer} at inference and re-trace"
        if "head dim" in cause:
            return f"restore the head dimension of {layer} (a multiple of 8, at most 256, keeps the fused kernels) and re-trace"
    return None


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def fix_for_group(code: CauseCode, layers: list[str], tensors: list[str], restore: str | None = None) -> str:
    """The change that undoes one cause on every layer that shares it, in words."""
    where = layers[0] if len(layers) == 1 else f"{_listed(layers)} ({len(layers)} layers)"
    roles = _listed(tensors) if tensors else "inputs"
    if code == "non_contiguous":
        return f"make the {roles} of {where} contiguous (call .contiguous() on their producers' outputs) and re-trace"
    if code == "dtype_change":
        return f"cast the {roles} of {where} back to {restore or 'their baseline dtype'} and re-trace"
    if code == "attn_mask":
        return f"drop the attn_mask of {where} (use is_causal=True for a causal mask) and re-trace"
    if code == "dropout":
        return f"set dropout_p=0 for {where} at inference and re-trace"
    return f"restore the head dimension of {where} (a multiple of 8, at most 256, keeps the fused kernels) and re-trace"
