"""Kernel-name classifier: real names from the H200 traces and common library names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.records.run import KernelClass
from sparsedebug.sources.importers.kernel_names import classify_kernel, primary_class, short_kernel_name

CASES = [
    # H200 traces (PyTorch 2.11, cuSPARSELt 0.8)
    ("sm90_xmma_sparse_gemm_f16f16_f16f32_f32_tn_t_tilesize128x256x64_cgasize4x1x1_warpgroupsize2x1x1_execute_segment_k_off_kernel_5x_cusparselt", KernelClass.SPARSE_GEMM),
    ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT", KernelClass.DENSE_TC_GEMM),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0", KernelClass.ATTENTION),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float>)", KernelClass.REDUCTION),
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>", KernelClass.COPY),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)>", KernelClass.ELEMENTWISE),
    ("Memset (Device)", KernelClass.COPY),
    # other libraries
    ("void cutlass::Kernel<cutlass_80_tensorop_s16816gemm_f16_sparse_128x128_64x3_tn_align8>(Params)", KernelClass.SPARSE_GEMM),
    ("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", KernelClass.DENSE_TC_GEMM),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4", KernelClass.FP32_GEMM),
    ("ampere_sgemm_128x64_nn", KernelClass.FP32_GEMM),
    ("cutlass_80_simt_sgemm_128x128_8x4_nn_align1", KernelClass.FP32_GEMM),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_nn", KernelClass.DENSE_TC_GEMM),
    ("void gemv2T_kernel_val<int, int, __half, __half, float, 128, 16, 4, 4, false, false>(...)", KernelClass.DENSE_TC_GEMM),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", KernelClass.ATTENTION),
    ("triton_poi_fused_add_0", KernelClass.ELEMENTWISE),
    ("triton_red_fused_mean_pow_1", KernelClass.REDUCTION),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", KernelClass.REDUCTION),
    ("my_custom_kernel_v2", KernelClass.OTHER),
    ("", KernelClass.OTHER),
]


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_classify(name: str, expected: KernelClass) -> None:
    assert classify_kernel(name) is expected


@given(st.text(max_size=200))
def test_any_name_gets_a_class(name: str) -> None:
    assert classify_kernel(name) in set(KernelClass)


def test_primary_class_prefers_sparse_then_fp32_over_dense() -> None:
    assert primary_class({KernelClass.COPY, KernelClass.SPARSE_GEMM}) is KernelClass.SPARSE_GEMM
    assert primary_class({KernelClass.DENSE_TC_GEMM, KernelClass.FP32_GEMM}) is KernelClass.FP32_GEMM
    assert primary_class({KernelClass.ELEMENTWISE, KernelClass.REDUCTION}) is KernelClass.REDUCTION
    assert primary_class(set()) is KernelClass.OTHER


def test_short_name_keeps_template_and_drops_arguments() -> None:
    name = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_kernel<float> >(int, float)"
    assert short_kernel_name(name, 200) == "vectorized_elementwise_kernel<4, pow_kernel<float> >"
    assert short_kernel_name("Memset (Device)") == "Memset"
    assert len(short_kernel_name("x" * 100, 20)) == 20
