"""Kernel-name classifier: real names from the H200 traces and common library names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.core.kernel_names import (
    classify_kernel,
    hta_kernel_type,
    primary_class,
    short_kernel_name,
)
from sparsedebug.records.run import KernelClass

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
    # in the wild (HTA test traces, FlashAttention, Inductor, NCCL, rocBLAS)
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelClass.COMMUNICATION),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", KernelClass.COMMUNICATION),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", KernelClass.COMMUNICATION),
    ("Memcpy HtoD (Pageable -> Device)", KernelClass.COPY),
    ("Memcpy DtoD (Device -> Device)", KernelClass.COPY),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nt_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x6_nt_align4::Params)", KernelClass.FP32_GEMM),
    ("void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x3_nn_align8>(Params)", KernelClass.DENSE_TC_GEMM),
    ("volta_sgemm_128x32_nt", KernelClass.FP32_GEMM),
    ("nvjet_sm90_sss_128x64_64x6_2x1_v_bz_TNT", KernelClass.FP32_GEMM),
    ("nvjet_sm90_bsb_128x64_64x5_1x1_v_bz_TNT", KernelClass.DENSE_TC_GEMM),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x64x16_MI16x16x4x1", KernelClass.FP32_GEMM),
    ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", KernelClass.DENSE_TC_GEMM),
    ("void fbgemm_gpu::_block_bucketize_sparse_features_cuda_kernel1<int, int>(int, ...)", KernelClass.OTHER),
    ("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, ...)", KernelClass.COPY),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t> >(Flash_fwd_params)", KernelClass.ATTENTION),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...> > >(...)", KernelClass.ATTENTION),
    ("void PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params", KernelClass.ATTENTION),
    ("triton_poi_fused__to_copy_add_mul_0", KernelClass.ELEMENTWISE),
    ("triton_per_fused_native_layer_norm_1", KernelClass.REDUCTION),
    ("cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>", KernelClass.REDUCTION),
    ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(...)", KernelClass.COPY),
    ("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", KernelClass.FP32_GEMM),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float> >", KernelClass.ELEMENTWISE),
    # Blackwell (sm100) microscaling and narrow-float GEMMs: TensorRT-LLM's trtllm-gen bmm, CUTLASS 3 block-scaled, cuBLASLt
    ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_bA32_bB32_bC32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedS_sm100f",
     KernelClass.DENSE_TC_GEMM),
    ("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_rM_TN_transOut_schedS_sm100f", KernelClass.DENSE_TC_GEMM),
    ("bmm_E2m1_E2m1E2m1_Fp32_t128x128x256u2_s4_et128x64_m256x128x64_cga2x1x1_16dp256b_TN_schedS_sm100a", KernelClass.DENSE_TC_GEMM),
    ("bmm_E4m3_E4m3E4m3_Fp32_t128x64x128u2_s3_et64x64_m64x64x32_cga1x1x1_16dp256b_TN_schedS_sm100a", KernelClass.DENSE_TC_GEMM),
    ("cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue4m3xf4_ue4m3xf4_f32_bf16_bf16_256x128x256_1x1x1_0_tnt_align32_2sm",
     KernelClass.DENSE_TC_GEMM),
    ("cutlass3x_sm100_bstensorop_s128x128x128bmm_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_128x128x128_0_tnt_align16_1sm", KernelClass.DENSE_TC_GEMM),
    ("cutlass3x_sm100_bssptensorop_bsspgemm_ue8m0xe2m3_ue8m0xe4m3_f32_f16_f16_128x128x256_0_vs64_tnt_align32_q_1sm", KernelClass.SPARSE_GEMM),
    ("cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_128x128x16_1x1x1_3_tnn_align1_bias_f32_relu", KernelClass.FP32_GEMM),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::"
     "CollectiveMma<cutlass::gemm::MainloopSm100TmaUmmaWarpSpecializedBlockScaled<3, 2, 1>, cute::tuple<cutlass::mx_float4_t<"
     "cutlass::float_e2m1_t>, float> > > >(...)", KernelClass.DENSE_TC_GEMM),
]


@pytest.mark.parametrize(
    ("name", "dtype", "expected"),
    [
        ("triton_tem_fused_mm_0", "bf16", KernelClass.DENSE_TC_GEMM),
        ("triton_tem_fused_mm_0", "fp32", KernelClass.FP32_GEMM),
        ("triton_tem_fused_mm_0", None, KernelClass.OTHER),
        ("ampere_sgemm_128x64_nn", "fp16", KernelClass.FP32_GEMM),  # the name wins over the op's dtype
    ],
)
def test_unnamed_gemm_precision_comes_from_the_op_dtype(name: str, dtype: str | None, expected: KernelClass) -> None:
    assert classify_kernel(name, dtype) is expected


def test_hta_kernel_types_are_htas_regexes() -> None:
    assert hta_kernel_type("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "communication"
    assert hta_kernel_type("Memcpy HtoD (Pageable -> Device)") == "memory" and hta_kernel_type("Memset (Device)") == "memory"
    assert hta_kernel_type("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT") == "computation"
    assert hta_kernel_type("Stream Sync") == "other" and hta_kernel_type("void fooMemcpyKernel") == "other"
    assert hta_kernel_type("memcpy_lowercase_kernel") == "computation"  # HTA's regexes are case-sensitive


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
