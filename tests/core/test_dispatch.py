"""Dispatch comparisons: backend changes, their typed causes, fp32 moves; the words for a cause and its fix."""

from __future__ import annotations

from sparsedebug.core.dispatch import FIX_ACTION, backend_changed, dispatch_causes, dispatch_changed, moved_to_fp32
from sparsedebug.records.run import DispatchCause, DispatchEvidence, KernelClass, KernelPath, LowerLayer, cause_values
from sparsedebug.render.words.dispatch import cause_words, causes_from_values, fix_for_group

SDPA = "aten::scaled_dot_product_attention"


def _layer(cls: KernelClass, evidence: DispatchEvidence | None) -> LowerLayer:
    return LowerLayer(name="attn", path=KernelPath.DENSE, kernel_class=cls, dispatch=evidence)


def _sdpa(backend: str, dtype: str = "fp16", strides: list[int] | None = None, **extra: object) -> DispatchEvidence:
    q = strides or [4096, 128, 4096, 1]
    return DispatchEvidence(
        op=SDPA, backend=backend, input_dtypes=[dtype] * 3, input_shapes=[[1, 32, 2048, 128]] * 3,
        input_strides=[q, [4096, 128, 4096, 1], [4096, 128, 4096, 1]], non_contiguous=[0] if q[-1] != 1 else [], head_dim=128, **extra,
    )


def test_backend_change_with_its_cause() -> None:
    base, cand = _layer(KernelClass.ATTENTION, _sdpa("cudnn")), _layer(KernelClass.ATTENTION, _sdpa("efficient", strides=[8388608, 262144, 1, 2048]))
    assert backend_changed(base, cand) and dispatch_changed(base, cand) and not moved_to_fp32(base, cand)
    [cause] = dispatch_causes(base.dispatch, cand.dispatch)
    assert cause == DispatchCause(code="non_contiguous", tensor="query", was="1", now="2048")
    assert cause_words(cause) == "query not contiguous (last-dim stride 2048, was 1)"
    assert fix_for_group(cause.code, ["layers.2.self_attn.sdpa"], ["query"]).startswith("make the query of layers.2.self_attn.sdpa contiguous")


def test_move_to_fp32_by_kernel_class_or_by_dtype() -> None:
    base = _layer(KernelClass.ATTENTION, _sdpa("cudnn"))
    assert moved_to_fp32(base, _layer(KernelClass.FP32_GEMM, _sdpa("math", dtype="fp32")))
    assert moved_to_fp32(base, _layer(KernelClass.ATTENTION, _sdpa("efficient", dtype="fp32")))
    assert not moved_to_fp32(_layer(KernelClass.FP32_GEMM, _sdpa("math", dtype="fp32")), _layer(KernelClass.FP32_GEMM, _sdpa("math", dtype="fp32")))
    causes = dispatch_causes(base.dispatch, _sdpa("math", dtype="fp32"))
    assert [(c.code, c.tensor, c.was, c.now) for c in causes] == [("dtype_change", t, "fp16", "fp32") for t in ("query", "key", "value")]
    assert [cause_words(c) for c in causes] == ["query dtype fp16 -> fp32", "key dtype fp16 -> fp32", "value dtype fp16 -> fp32"]
    assert FIX_ACTION[causes[0].code] == "cast_back"
    assert fix_for_group("dtype_change", ["attn"], ["query"], "fp16") == "cast the query of attn back to fp16 and re-trace"


def test_mask_dropout_head_dim_causes_and_no_evidence() -> None:
    base = _sdpa("flash", attn_mask=False, dropout_p=0.0)
    cand = _sdpa("efficient", attn_mask=True, dropout_p=0.1)
    cand.head_dim = 72
    causes = dispatch_causes(base, cand)
    assert [cause_words(c) for c in causes] == ["an attn_mask is now passed", "dropout_p 0.1 (was 0)", "head dim 128 -> 72"]
    assert causes_from_values(cause_values(causes)) == [cause_words(c) for c in causes]  # through a note's values
    assert "drop the attn_mask" in fix_for_group("attn_mask", ["attn"], [])
    assert dispatch_causes(None, cand) == []
    plain = LowerLayer(name="x", path=KernelPath.DENSE)
    assert not backend_changed(plain, plain) and not dispatch_changed(plain, plain)
