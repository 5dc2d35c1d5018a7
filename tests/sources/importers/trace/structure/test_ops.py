"""Op kinds, backends, shapes and slow-path triggers from CPU op names and inputs."""

from __future__ import annotations

import pytest

from sparsedebug.records.run import OpKind
from sparsedebug.render.words.dispatch import trigger_words
from sparsedebug.sources.importers.trace.read.events import HostRange
from sparsedebug.sources.importers.trace.structure.ops import (
    attention_backend,
    dispatch_evidence,
    layer_kind,
    linear_backend,
    op_kind,
    shape_text,
    strip_namespace,
    weight_shape,
)


def _op(name: str, dims: list[object] | None = None, types: list[object] | None = None, strides: list[object] | None = None,
        concrete: list[object] | None = None) -> HostRange:
    return HostRange("op", name, 0.0, 1.0, (1, 1), dims=dims, types=types, strides=strides, concrete=concrete)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("aten::linear", OpKind.LINEAR), ("aten::_cslt_sparse_mm", OpKind.LINEAR), ("aten::_sparse_semi_structured_linear", OpKind.LINEAR),
        ("aten::addmm", OpKind.LINEAR), ("triton_tem_fused_mm_0", OpKind.LINEAR),
        ("autograd::engine::evaluate_function: AddmmBackward0", OpKind.LINEAR),
        ("aten::scaled_dot_product_attention", OpKind.ATTENTION), ("aten::_scaled_dot_product_cudnn_attention", OpKind.ATTENTION),
        ("aten::_flash_attention_forward", OpKind.ATTENTION), ("flash_attn::_flash_attn_forward", OpKind.ATTENTION),
        ("autograd::engine::evaluate_function: ScaledDotProductEfficientAttentionBackward0", OpKind.ATTENTION),
        ("aten::native_layer_norm", OpKind.NORM), ("aten::rms_norm", OpKind.NORM), ("aten::cudnn_batch_norm", OpKind.NORM),
        ("aten::embedding", OpKind.EMBEDDING), ("aten::silu", OpKind.ACTIVATION), ("aten::gelu", OpKind.ACTIVATION),
        ("aten::relu_", OpKind.ACTIVATION), ("autograd::engine::evaluate_function: SiluBackward0", OpKind.ACTIVATION),
        ("aten::add", OpKind.ELEMENTWISE), ("aten::copy_", OpKind.ELEMENTWISE), ("aten::_foreach_add_", OpKind.ELEMENTWISE),
        ("triton_poi_fused_add_0", OpKind.ELEMENTWISE),
        ("aten::view", None), ("aten::mean", None), ("aten::norm", None), ("mystery::op", None),
    ],
)
def test_op_kind(name: str, kind: OpKind | None) -> None:
    assert op_kind(name) is kind


def test_layer_kind_from_ops_then_name() -> None:
    rmsnorm = ["aten::to", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul"]
    assert layer_kind(rmsnorm, "layers.0.input_layernorm") is OpKind.NORM
    assert layer_kind(rmsnorm, None) is OpKind.ELEMENTWISE
    assert layer_kind(["aten::linear", "aten::matmul", "aten::mm"], "layers.0.self_attn.q_proj") is OpKind.LINEAR
    assert layer_kind(["aten::linear", "aten::scaled_dot_product_attention"], "layers.0.self_attn") is OpKind.ATTENTION
    # GPT-2's c_attn is the qkv projection (addmm): the name does not override the op
    assert layer_kind(["aten::addmm"], "h.0.attn.c_attn") is OpKind.LINEAR
    # a hand-written attention: matmul, softmax, matmul under an attention-named layer
    assert layer_kind(["aten::matmul", "aten::bmm", "aten::_softmax", "aten::matmul"], "blocks.0.attention") is OpKind.ATTENTION
    assert layer_kind([], "mystery") is OpKind.OTHER


def test_backends() -> None:
    assert attention_backend(["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_cudnn_attention"]) == ("cudnn", "aten::_scaled_dot_product_cudnn_attention")
    assert attention_backend(["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention"])[0] == "flash"
    assert attention_backend(["aten::_scaled_dot_product_efficient_attention"])[0] == "efficient"
    assert attention_backend(["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math", "aten::bmm", "aten::_softmax"])[0] == "math"
    assert attention_backend(["aten::bmm", "aten::_softmax", "aten::bmm"]) == ("unfused", None)
    assert attention_backend(["flash_attn_3::fwd"])[0] == "flash3"
    assert attention_backend(["aten::_scaled_dot_product_fused_attention_overrideable"])[0] == "overrideable"
    assert attention_backend(["aten::scaled_dot_product_attention"]) == ("unknown", None)
    assert linear_backend(["aten::linear", "aten::_cslt_sparse_mm"]) == ("cusparselt", "aten::_cslt_sparse_mm")
    assert linear_backend(["aten::linear", "aten::_sparse_semi_structured_linear"])[0] == "cutlass_sparse"
    assert linear_backend(["aten::linear", "aten::matmul", "aten::mm"]) == ("cublas", "aten::linear")
    assert linear_backend(["aten::_scaled_mm"])[0] == "scaled_mm"


def test_weight_shapes_and_name_shapes() -> None:
    linear = _op("aten::linear", [[2048, 4096], [11008, 4096], []], ["c10::Half", "c10::Half", ""])
    addmm = _op("aten::addmm", [[32], [8, 16], [16, 32]], ["float"] * 3)
    mm = _op("aten::mm", [[8, 16], [16, 32]], ["float"] * 2)
    assert weight_shape(linear) == [11008, 4096] and shape_text(linear) == "11008x4096"
    assert weight_shape(addmm) == [32, 16] and weight_shape(mm) == [32, 16]
    assert shape_text(_op("aten::bmm", [[4, 8, 16], [4, 16, 8]])) == "4x8x16"  # batched: activations, not a weight
    assert shape_text(_op("aten::add", [[2048, 1], [], []])) == "2048x1"
    assert shape_text(_op("aten::empty", [[], []])) == ""
    assert strip_namespace("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad") == "AccumulateGrad"


def test_dispatch_evidence_and_triggers() -> None:
    sdpa = _op(
        "aten::scaled_dot_product_attention",
        dims=[[1, 8, 128, 72]] * 3 + [[1, 1, 128, 128], [], [], [], []],
        types=["float", "c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar", "", "Scalar"],
        strides=[[73728, 72, 576, 1], [73728, 9216, 1, 128], [73728, 9216, 72, 1], [16384, 16384, 128, 1], [], [], [], []],
        concrete=["", "", "", "", "0.1", "False", "", "False"],
    )
    e = dispatch_evidence(sdpa, [sdpa, _op("aten::_scaled_dot_product_attention_math")], OpKind.ATTENTION)
    assert e.backend == "math" and e.input_dtypes == ["fp32", "fp16", "fp16", "fp16"] and e.non_contiguous == [1]
    assert (e.attn_mask, e.dropout_p, e.is_causal, e.head_dim) == (True, 0.1, False, 72)
    assert [trigger_words(t) for t in e.triggers] == [
        "key not contiguous (last-dim stride 128)", "fp16/fp32 inputs", "mixed input dtypes fp16/fp32", "attn_mask passed", "dropout_p 0.1",
    ]
    fine = dispatch_evidence(_op("aten::linear", [[8, 16], [32, 16], []], ["c10::BFloat16"] * 2 + [""], [[16, 1], [16, 1], []]), [], OpKind.LINEAR)
    assert fine.triggers == [] and fine.backend == "unknown"


def test_a_transposed_gemm_operand_is_recorded_but_is_no_trigger() -> None:
    # grad.t() in a weight-gradient GEMM, or the column-major output of a cuSPARSELt GEMM fed to the next linear:
    # BLAS reads a column-major matrix as it is; a matrix strided any other way needs a copy first.
    half = ["c10::Half", "c10::Half"]
    column_major = dispatch_evidence(_op("aten::mm", [[128, 5], [5, 128]], half, [[1, 128], [128, 1]]), [], OpKind.LINEAR)
    assert column_major.non_contiguous == [0] and column_major.triggers == []
    strided = dispatch_evidence(_op("aten::mm", [[128, 5], [5, 128]], half, [[10, 2], [128, 1]]), [], OpKind.LINEAR)
    assert [trigger_words(t) for t in strided.triggers] == ["input not contiguous (last-dim stride 2)"]
    batched = dispatch_evidence(_op("aten::linear", [[2, 64, 16], [32, 16], []], half + [""], [[1024, 1, 64], [16, 1], []]), [], OpKind.LINEAR)
    assert [trigger_words(t) for t in batched.triggers] == ["input not contiguous (last-dim stride 64)"]  # a 3-D input is reshaped: that needs a copy
