"""Compare how one layer was dispatched in two runs: backend changes, their cause in the trace, and the fix that tests it.

A layer whose op stayed the same but whose backend changed (SDPA from cudnn or
flash to efficient or math, a GEMM from cuBLAS to another path) took a different
*lowering*: the model did not change. What the dispatcher chose from is in the
trace (``DispatchEvidence``): input layout, dtypes, mask, dropout, head dim. The
cause of a change is what differs there between the two runs; the fix undoes it
(make the producer's output contiguous, cast back, drop the mask).
"""

from __future__ import annotations

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


def dispatch_cause(base: DispatchEvidence | None, cand: DispatchEvidence | None) -> list[str]:
    """What the dispatcher saw differently in the candidate: layout, dtype, mask, dropout, head dim."""
    if base is None or cand is None:
        return []
    causes: list[str] = []
    for k in cand.non_contiguous:
        if k not in base.non_contiguous:
            stride = cand.input_strides[k] if k < len(cand.input_strides) else None
            causes.append(f"{_role(cand, k)} not contiguous (last-dim stride {stride[-1] if stride else '?'}, was 1)")
    for k, (before, after) in enumerate(zip(base.input_dtypes[:3], cand.input_dtypes[:3], strict=False)):
        if before is not None and after is not None and before != after:
            causes.append(f"{_role(cand, k)} dtype {before} -> {after}")
    if cand.attn_mask and not base.attn_mask:
        causes.append("an attn_mask is now passed")
    if (cand.dropout_p or 0.0) > 0.0 and not (base.dropout_p or 0.0) > 0.0:
        causes.append(f"dropout_p {cand.dropout_p:g} (was 0)")
    if cand.head_dim is not None and base.head_dim is not None and cand.head_dim != base.head_dim:
        causes.append(f"head dim {base.head_dim} -> {cand.head_dim}")
    return causes


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
