"""Kernel and tactic name families, one row each: the class, the input type the name states, and why.

Every row is (family, name, the dispatch's or format's dtype, expected class, the input type the name states,
why). Names marked *seen* come from real traces and exports (the H200 traces in fixtures/h200, the TREx
MobileNet-QAT export in fixtures/trt, public vLLM/SGLang profiles); the others follow the same library's naming
convention with the type field changed, to cover the letter or type the row is about.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.core.dtypes import DTYPES
from sparsedebug.core.kernel_names import BLAS_TYPE_LETTERS, classify_kernel, kernel_input_dtype
from sparsedebug.records.run import KernelClass

DENSE, FP32, SPARSE = KernelClass.DENSE_TC_GEMM, KernelClass.FP32_GEMM, KernelClass.SPARSE_GEMM
NVJET_BF16 = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"  # seen: aten::mm on c10::BFloat16 (B200 and H100 profiles)


class Row(NamedTuple):
    family: str
    name: str
    dtype: str | None
    expected: KernelClass
    states: str | None
    why: str


ROWS = [
    # cuBLAS nvjet (Hopper/Blackwell): the letters cuBLAS documents (cublas<t>gemm: s, d, c, z; cublasHgemm: h) are read;
    # every other letter says nothing; the dispatch's dtype overrules any letter.
    Row("nvjet", "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT", None, DENSE, "fp16",
        "seen (H200): h is cuBLAS's half letter, a tensor-core GEMM"),
    Row("nvjet", "nvjet_sm90_sss_128x64_64x6_2x1_v_bz_TNT", None, FP32, "fp32", "s is cuBLAS's single letter: an fp32 GEMM"),
    Row("nvjet", "nvjet_sm90_dsd_128x64_64x6_2x1_v_bz_TNT", None, FP32, "fp64", "d is cuBLAS's double letter: not a half GEMM"),
    Row("nvjet", "nvjet_sm90_csc_128x64_64x6_2x1_v_bz_TNT", None, FP32, "complex64", "c is cuBLAS's cuComplex letter: fp32 arithmetic"),
    Row("nvjet", "nvjet_sm90_zdz_128x64_64x6_2x1_v_bz_TNT", None, FP32, "complex128", "z is cuBLAS's cuDoubleComplex letter: fp64 arithmetic"),
    Row("nvjet", "nvjet_sm90_bsb_128x64_64x5_1x1_v_bz_TNT", None, DENSE, None,
        "b is no cuBLAS type letter: no type read; nvjet is cuBLAS's tensor-core family"),
    Row("nvjet", NVJET_BF16, None, DENSE, None, "seen: t is no cuBLAS type letter (these run bf16): nothing read, tensor-core family"),
    Row("nvjet", NVJET_BF16, "bf16", DENSE, None, "seen (B200 eager trace, 109 layers): the dispatch's bf16 decides, never fp32"),
    Row("nvjet", NVJET_BF16, "fp32", FP32, None, "the dispatch's fp32 decides"),
    Row("nvjet", "nvjet_sm90_sss_128x64_64x6_2x1_v_bz_TNT", "bf16", DENSE, "fp32", "the dispatch's dtype wins over the name's letter"),
    Row("nvjet", "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT", "fp32", FP32, "fp16", "the dispatch's dtype wins over the name's letter"),
    # cuBLASLt and CUTLASS on sm90/sm100: the type fields name A first; tf32 is a math mode on fp32 data.
    Row("cublaslt", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "bf16", DENSE, "bf16", "seen (vLLM lm_head): bf16 A/B on tensor cores, fp32 accumulate"),
    Row("cublaslt", "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4", None, FP32, "fp32",
        "fp32 data, tf32 math: the fp32 class (precision of an fp32 run)"),
    Row("cublaslt", "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4", "fp16", FP32, "fp32",
        "the name's type field states fp32 data; an explicit type field is not a heuristic"),
    Row("cutlass", "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_cooperative_epi_tma",
        None, DENSE, "fp16", "CUTLASS 3 sm90 tensorop, f16 A and B"),
    Row("cutlass", "cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue4m3xf4_ue4m3xf4_f32_bf16_bf16_256x128x256_1x1x1_0_tnt_align32_2sm",
        None, DENSE, None, "NVFP4: ue4m3 scales on f4 elements (no fp4 in core.dtypes), a tensor-core GEMM"),
    Row("cutlass", "cutlass3x_sm100_bstensorop_s128x128x128bmm_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_128x128x128_0_tnt_align16_1sm",
        None, DENSE, "fp8_e4m3", "MXFP8: ue8m0 scales on e4m3 elements"),
    Row("cutlass", "cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_128x128x16_1x1x1_3_tnn_align1_bias_f32_relu", None, FP32, "fp32",
        "SIMT sgemm: CUDA cores, fp32"),
    Row("trtllm-gen", "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_bA32_bB32_bC32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedS_sm100f",
        None, DENSE, "fp8_e4m3", "MX e4m3 activations on Blackwell tensor cores"),
    # cuSPARSELt and sparse CUTLASS/TensorRT: 2:4 is the class whatever the precision.
    Row("cusparselt", "sm90_xmma_sparse_gemm_f16f16_f16f32_f32_tn_t_tilesize128x256x64_cgasize4x1x1_warpgroupsize2x1x1_execute_segment_k_off_kernel_5x_cusparselt",
        "fp16", SPARSE, "fp16", "seen (H200): cuSPARSELt's 2:4 GEMM"),
    Row("cusparselt", "sm80_xmma_fprop_sparse_conv_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_"
        "tilesize128x128x128_stage4_warpsize2x2x1_g1_sptensor16x8x64_t1r1s1", "int8", SPARSE, "int8", "INT8 sparse tensor-core conv (sptensor)"),
    Row("cutlass", "cutlass3x_sm100_bssptensorop_bsspgemm_ue8m0xe2m3_ue8m0xe4m3_f32_f16_f16_128x128x256_0_vs64_tnt_align32_q_1sm",
        None, SPARSE, None, "block-scaled sparse tensorop: 2:4 first; e2m3 (fp6) has no core.dtypes entry"),
    # cuDNN convolution tactics (also TensorRT's): <arch>_[<out>_]<mma>cudnn_<in>; the mma letter is the input type.
    Row("cudnn", "volta_scudnn_128x64_relu_interior_nn_v1", None, FP32, "fp32", "s: single-precision cuDNN, CUDA cores"),
    Row("cudnn", "ampere_h16816cudnn_256x128_ldg8_relu_exp_small_nhwc_tn_v1", "fp16", DENSE, "fp16",
        "h16816: HMMA m16n8k16, an fp16 tensor-core implicit GEMM (was 'other')"),
    Row("cudnn", "ampere_h16816cudnn_256x128_ldg8_relu_exp_small_nhwc_tn_v1", None, DENSE, "fp16", "the name alone says HMMA"),
    Row("cudnn", "volta_h884cudnn_256x128_ldg8_relu_exp_medium_nhwc_tn_v1", None, DENSE, "fp16", "h884: Volta HMMA m8n8k4"),
    Row("cudnn", "turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1", "int8", DENSE, "int8",
        "seen (TREx QAT): IMMA m8n8k16 on int8 inputs; fp16 is the output"),
    Row("cudnn", "volta_fp32_i8816cudnn_int8_256x64_ldg16_relu_singleBuffer_interior_nt_v1", "int8", DENSE, "int8",
        "seen (TREx QAT): IMMA on int8 inputs; fp32 is the output, not the math"),
    Row("cudnn", "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1", "int8", DENSE, "int8",
        "seen (TREx QAT): DP4A on int8x4 vectors, a narrow-input GEMM, not fp32"),
    Row("cudnn", "ampere_fp32_icudnn_int8x4_128x128_relu_xregs_large_c32_nn_v1", "int8", DENSE, "int8",
        "a QAT ResNet's first conv: int8x4 inputs; fp32 is the output"),
    # TensorRT xmma tactics: the type field i8i8_i8i32 / i8f32_i8i32 is int8 in, int32 accumulate.
    Row("tensorrt", "sm75_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_"
        "tilesize64x32x64_stage1_warpsize2x1x1_g1_tensor8x8x16_simple_t1r1s1", "int8", DENSE, "int8", "seen (TREx QAT): int8 tensor-core implicit GEMM"),
    Row("tensorrt", "sm80_xmma_gemm_i8f32_i8i32_f32_tn_n_tilesize128x128x64_stage3_warpsize2x2x1_tensor16x8x32", "int8", DENSE, "int8",
        "a QAT fc GEMM: int8 in (i8), f32 out, int8 math with int32 accumulate"),
    Row("tensorrt", "sm80_xmma_gemm_i8f32_i8i32_f32_tn_n_tilesize128x128x64_stage3_warpsize2x2x1_tensor16x8x32", "fp32", DENSE, "int8",
        "an fp32 output format does not make it an fp32 GEMM: the type field says int8 math"),
    Row("tensorrt", "sm70_xmma_fprop_conv1x1_i8f32_f32_f32_nchw_vect_c_4kcrs_vect_c_4_nchw_simt_small_batch_bias_relu", "int8", FP32, "int8",
        "seen (TREx QAT classifier): int8 stored, f32 math on SIMT cores: an fp32 path"),
]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.family}-{r.name[:40]}-{r.dtype}" for r in ROWS])
def test_family_class_and_stated_type(row: Row) -> None:
    assert classify_kernel(row.name, row.dtype) is row.expected, row.why
    assert kernel_input_dtype(row.name) == row.states, row.why


def test_every_family_of_the_issue_has_rows() -> None:
    families = {r.family for r in ROWS}
    assert {"nvjet", "cublaslt", "cutlass", "cusparselt", "cudnn", "tensorrt"} <= families
    letters = {r.name.removeprefix("nvjet_").removeprefix("sm90_")[0] for r in ROWS if r.family == "nvjet"}
    assert set(BLAS_TYPE_LETTERS) <= letters  # every documented letter has a row, and undocumented ones too
    assert letters - set(BLAS_TYPE_LETTERS) == {"b", "t"}


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp8_e4m3", "int8"])
def test_a_narrow_dispatch_never_makes_an_nvjet_gemm_fp32(dtype: str) -> None:
    for letter in "abcdefghijklmnopqrstuvwxyz":
        assert classify_kernel(f"nvjet_{letter}s{letter}_64x8_64x16_2x1_v_bz_splitK_TNT", dtype) is DENSE


def test_names_that_state_no_type_state_none() -> None:
    assert kernel_input_dtype("my_custom_kernel_v2") is None and kernel_input_dtype("") is None
    assert kernel_input_dtype("triton_tem_fused_mm_0") is None


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", max_size=80))
def test_any_name_states_a_known_dtype_or_none(name: str) -> None:
    stated = kernel_input_dtype(name)
    assert stated is None or stated in DTYPES
