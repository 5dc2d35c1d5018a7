"""Sort GPU kernel names into classes: sparse GEMM, dense tensor-core GEMM, fp32 GEMM, ...

Kernel names are what a profiler trace or Nsight Compute reports; they tell
which *path* a layer took (never which op the model called: that comes from the
CPU ops, see ``sparsedebug.sources.importers.trace.structure.ops``). The rules are substring tests
on the lower-cased name, checked in a fixed order (first match wins):

1. communication: NCCL/RCCL kernels (``ncclDevKernel_*``, ``ncclKernel_*``) and
   collective kernels named after their collective (``all_reduce``, ``all_gather``,
   ``reduce_scatter``, ``all_to_all``, ``sendrecv``, NVSHMEM).
2. copy: ``Memcpy ...``/``Memset ...`` activities and DMA.
3. sparse GEMM: cuSPARSELt and CUTLASS 2:4 kernels (``xmma_sparse_gemm``,
   ``*cusparselt*``, ``sparse`` together with ``gemm``/``mma``, ``spgemm``), and hipSPARSELt's
   Tensile ``Cijk_*`` kernels with a ``_SPA_``/``_SPB_`` token (``core.kernel_names_rocm``: inferred from the name).
4. attention: fused attention kernels (FlashAttention 2/3 ``flash_fwd_*``,
   ``flash::FlashAttnFwdSm90``, ``fmha*``, cuDNN ``*sdpa*``, ``*attention*``).
5. GEMMs (``gemm``, ``gemv``, ``matmul``, ``bmm``, cuBLAS ``nvjet_*``, Inductor
   ``triton_tem_*`` templates, rocBLAS/Tensile ``Cijk_*``, xmma ``fprop``/``dgrad``/``wgrad`` convolutions, cuDNN
   and TensorRT convolution tactics named ``<arch>_[<out>_]<mma>cudnn_*``: ``scudnn``,
   ``h884cudnn``/``h1688cudnn``/``h16816cudnn`` (HMMA), ``i8816cudnn`` (IMMA), ``icudnn_int8x4``
   (DP4A), which are implicit GEMMs): fp32
   when the name says so (``sgemm``, ``f32f32``, ``tf32``, ``simt``, CUTLASS
   ``s1688gemm`` without ``f16``, a ``float`` template argument, Tensile ``_SB_``/``_SS_``),
   a dense tensor-core GEMM when it says half/bf16/fp8/int8, or a Blackwell microscaled or
   narrow float (MXFP8/6/4 and NVFP4: ``e2m1``, ``ue8m0``, ``ue4m3``, CUTLASS ``float_e2m1_t``;
   trtllm-gen ``bmm_MxE4m3_MxE2m1...``, ``cutlass3x_sm100_bstensorop_...``). A GEMM whose name
   says neither is resolved by the dtype of the op that launched it (``dtype=``), else ``other``.
   cuBLAS ``nvjet_*`` kernels are the exception: the dispatch's dtype decides them, and their
   type letters are read only as far as cuBLAS documents type letters (see :data:`BLAS_TYPE_LETTERS`).
6. Inductor: ``triton_poi_*`` elementwise, ``triton_red_*``/``triton_per_*`` reduction.
   Then copy: copies, casts, layout transforms, concatenation, gathers.
7. reduction: reductions, norms (batch/layer/RMS), softmax, scans.
8. elementwise: elementwise/pointwise kernels, multi-tensor (optimizer) kernels.
9. anything else: ``other`` (never an error).

The library prefix ``fbgemm`` (FBGEMM-GPU embedding kernels) is not a GEMM.
``hta_kernel_type`` is Holistic Trace Analysis's own (different) split into
communication / memory / computation, used for its temporal breakdown.
"""

from __future__ import annotations

import re

from sparsedebug.core.kernel_names_rocm import rocm_sparse_gemm
from sparsedebug.records.run import KernelClass

# Which class names a layer that ran kernels of several classes: the first one present.
PRECEDENCE: tuple[KernelClass, ...] = (
    KernelClass.SPARSE_GEMM,
    KernelClass.FP32_GEMM,
    KernelClass.DENSE_TC_GEMM,
    KernelClass.ATTENTION,
    KernelClass.COMMUNICATION,
    KernelClass.REDUCTION,
    KernelClass.ELEMENTWISE,
    KernelClass.COPY,
    KernelClass.OTHER,
)

GEMM_CLASSES = frozenset({KernelClass.SPARSE_GEMM, KernelClass.DENSE_TC_GEMM, KernelClass.FP32_GEMM})

_HALF_MARKERS = (
    "f16", "fp16", "bf16", "half", "hsh", "hgemm", "bfloat16", "e4m3", "e5m2", "fp8", "i8i8", "int8", "h16816", "h1688", "hcudnn",
    # Blackwell microscaling and narrow floats: MXFP8/MXFP6/MXFP4/NVFP4 (E8M0/UE4M3 block scales), CUTLASS's float4/6 types
    "e2m1", "e2m3", "e3m2", "ue8m0", "ue4m3", "fp4", "fp6", "mxf", "nvf4", "float4", "float6", "float_e",
)
_FP32_MARKERS = ("sgemm", "f32f32", "tf32", "fp32_gemm", "gemm_f32", "gemmsn", "simt", "scudnn", "float", "double", "dgemm")
_COMM_MARKERS = ("all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "reducescatter", "all_to_all", "alltoall", "sendrecv", "nvshmem")
_ATTENTION_MARKERS = ("flash", "fmha", "sdpa", "attention", "attn")
_COPY_MARKERS = (
    "copy", "memcpy", "memset", "catarray", "cat_", "fill_kernel", "nchwtonhwc", "nhwctonchw", "transpose",
    "permute", "indexselect", "index_select", "gather",
)
_REDUCTION_MARKERS = (
    "reduce", "reduction", "norm", "softmax", "triton_red", "triton_per", "argmax", "argmin", "bn_fw", "bn_bw",
    "moments", "welford", "gammabeta", "scan", "cumsum", "topk",
)
_ELEMENTWISE_MARKERS = ("elementwise", "pointwise", "triton_poi", "vectorized", "functor", "multi_tensor_apply", "epilogue")
_NVJET_TYPE = re.compile(r"^nvjet_(?:sm\d+_)?([a-z])[a-z]{2}_")
# cuBLAS's documented type letters, from its function names (cuBLAS Library guide, "cublas<t>gemm()": S float, D double,
# C cuComplex, Z cuDoubleComplex; "cublasHgemm": H __half). cuBLAS does not document the letters of its nvjet kernel
# names: ``nvjet_tst_*`` runs bf16 GEMMs (aten::mm on c10::BFloat16 in public SGLang and vLLM profiles, B200 and H100),
# so a letter outside this table says nothing, and a letter inside it yields to the dispatch's dtype.
BLAS_TYPE_LETTERS: dict[str, str] = {"s": "fp32", "d": "fp64", "c": "complex64", "z": "complex128", "h": "fp16"}
# cuDNN's (and TensorRT's cuDNN-derived) convolution tactics: ``<arch>_[<out type>_]<mma><"cudnn">_...``, where the mma
# part's letter is the input type: ``s`` single (``scudnn``), ``h`` half (HMMA shapes h884/h1688/h16816, ``hcudnn``),
# ``i`` integer (IMMA i8816, DP4A ``icudnn_int8x4``). E.g. ``turing_fp16_i8816cudnn_int8_*`` reads int8 and writes fp16.
_CUDNN_MMA = re.compile(r"(?:^|_)([ihsd])\d*cudnn(?:_|$)")
# xmma convolutions, implicit GEMMs whatever their name's tail (``sm70_xmma_fprop_conv1x1_i8f32_f32_f32_...``).
_XMMA_CONV = re.compile(r"xmma_(?:fprop|dgrad|wgrad)")
# Explicit element-type tokens of xmma/CUTLASS/cuBLASLt/trtllm-gen names (``i8i8_i8i32_f32``, ``f16f16_f16f32_f32``,
# ``bf16bf16_bf16f32``, ``f32f32_tf32f32``, ``bmm_MxE4m3_...``, ``cutlass3x_..._f16_f16_f32_...``): the first one
# names the A operand, the input. A block scale is not an element type: CUTLASS's ``ue4m3xf4`` is ue4m3 scales on f4
# elements, ``ue8m0xe4m3`` ue8m0 scales on e4m3 ones.
_TYPE_TOKEN = re.compile(
    r"(?<![a-z0-9])(?:mx|ue\dm\dx)?(bfloat16|bf16|fp16|f16|half|tf32|fp32|f32|fp64|f64|int8|i8|s8|u8|e4m3|e5m2|e2m1|e2m3|e3m2"
    r"|fp4|fp6|f4|f6|nvf4)(?![a-z]{2})"
)
_TOKEN_DTYPES: dict[str, str | None] = {
    "bfloat16": "bf16", "bf16": "bf16", "fp16": "fp16", "f16": "fp16", "half": "fp16", "tf32": "fp32", "fp32": "fp32",
    "f32": "fp32", "fp64": "fp64", "f64": "fp64", "int8": "int8", "i8": "int8", "s8": "int8", "u8": "uint8",
    "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2",
    # four- and six-bit floats: no entry in core.dtypes, so no dtype (the dispatch or the format tells it)
    "e2m1": None, "e2m3": None, "e3m2": None, "fp4": None, "fp6": None, "f4": None, "f6": None, "nvf4": None,
}
# cuBLAS's pre-Hopper kernel names: ``<arch>_[<type>_]<letter>[<mma shape>]gemm`` (``ampere_sgemm``, ``volta_h884gemm``,
# ``ampere_fp16_s16816gemm_fp16`` where the explicit ``fp16`` token comes first and wins).
_BLAS_GEMM = re.compile(r"(?:^|_)([hsdcz])\d*gemm(?:_|$)")
_TENSILE_FP32 = ("_sb_", "_ss_", "_sx_", "_db_", "_dd_")
_TENSILE_HALF = ("_hb_", "_hh_", "_hs_", "_bb_", "_bs_", "_bbs_", "_hhs_", "_f8", "_i8")
_HALF_DTYPES = frozenset({"fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8"})
_FP32_DTYPES = frozenset({"fp32", "fp64", "tf32"})


# A batched GEMM named ``bmm``: TensorRT-LLM's trtllm-gen kernels (``bmm_MxE4m3_MxE2m1...``), CUTLASS 3
# ``..._bmm_...``.
_BMM = re.compile(r"(?:^|[^a-z])bmm(?:_|$)")


def _is_gemm_like(name: str) -> bool:
    return (
        "gemm" in name or "gemv" in name or name.startswith(("nvjet", "cijk_", "triton_tem")) or "matmul" in name
        or _XMMA_CONV.search(name) is not None or _CUDNN_MMA.search(name) is not None or _BMM.search(name) is not None
    )


def kernel_input_dtype(name: str) -> str | None:
    """The input element type a kernel or tactic name states (canonical, ``core.dtypes``); None when it states none.

    Read in this order: a cuDNN convolution tactic's mma letter (``turing_fp16_i8816cudnn_int8`` -> int8: the
    ``fp16`` before it is the output), the first explicit type token of xmma/CUTLASS/cuBLASLt names (``i8f32_i8i32``
    -> int8, ``f32f32_tf32f32`` -> fp32: tf32 is a math mode on fp32 data), the ``nvjet`` letter where cuBLAS documents
    it (:data:`BLAS_TYPE_LETTERS`), the letter of a pre-Hopper cuBLAS ``<letter>gemm`` name.
    """
    n = name.lower()
    cudnn = _CUDNN_MMA.search(n)
    if cudnn is not None:
        return BLAS_TYPE_LETTERS.get(cudnn.group(1)) if cudnn.group(1) != "i" else "int8"
    token = _TYPE_TOKEN.search(n)
    if token is not None:
        return _TOKEN_DTYPES[token.group(1)]
    nvjet = _NVJET_TYPE.match(n)
    if nvjet is not None:
        return BLAS_TYPE_LETTERS.get(nvjet.group(1))
    blas = _BLAS_GEMM.search(n)
    return BLAS_TYPE_LETTERS.get(blas.group(1)) if blas is not None else None


def _nvjet_class(n: str, dtype: str | None) -> KernelClass:
    """A cuBLAS nvjet GEMM: the dispatch's dtype decides; else a documented type letter; else a tensor-core GEMM."""
    if dtype in _FP32_DTYPES:
        return KernelClass.FP32_GEMM
    if dtype in _HALF_DTYPES:
        return KernelClass.DENSE_TC_GEMM
    code = _NVJET_TYPE.match(n)
    letter = BLAS_TYPE_LETTERS.get(code.group(1)) if code is not None else None
    if any(marker in n for marker in ("tf32", "f32f32", "sgemm")) or letter in ("fp32", "fp64", "complex64", "complex128"):
        return KernelClass.FP32_GEMM
    return KernelClass.DENSE_TC_GEMM  # nvjet is cuBLAS's Hopper/Blackwell tensor-core kernel family


def is_communication_kernel(name: str) -> bool:
    """A collective-communication kernel (NCCL, RCCL, NVSHMEM or a named collective)."""
    n = name.lower()
    return n.startswith(("nccl", "rccl")) or "ncclkernel" in n or "nccldevkernel" in n or any(m in n for m in _COMM_MARKERS)


def _gemm_class(n: str, dtype: str | None) -> KernelClass:
    """Precision class of a GEMM-like kernel name (``n`` lower-cased)."""
    if n.startswith("nvjet"):
        return _nvjet_class(n, dtype)
    if n.startswith("cijk_"):
        if any(marker in n for marker in _TENSILE_FP32):
            return KernelClass.FP32_GEMM
        if any(marker in n for marker in _TENSILE_HALF):
            return KernelClass.DENSE_TC_GEMM
    cudnn = _CUDNN_MMA.search(n)
    if cudnn is not None:  # the mma letter: s/d CUDA-core fp32/fp64, h HMMA, i IMMA or DP4A
        return KernelClass.FP32_GEMM if cudnn.group(1) in "sd" else KernelClass.DENSE_TC_GEMM
    if "s1688gemm" in n and not any(marker in n for marker in ("f16", "bf16", "fp16")):
        return KernelClass.FP32_GEMM  # Ampere CUTLASS 1688 tensor-op GEMM on fp32 data: TF32
    if "xmma_gemm" in n or "tensorop" in n and "simt" not in n:
        # xmma/tensorop names still say fp32 when they are tf32 or f32f32 GEMMs.
        if any(marker in n for marker in ("tf32", "f32f32", "sgemm")):
            return KernelClass.FP32_GEMM
        return KernelClass.DENSE_TC_GEMM
    half = any(marker in n for marker in _HALF_MARKERS) or "wgmma" in n or "hmma" in n or "16816" in n
    if any(marker in n for marker in _FP32_MARKERS) and not (half and "float" in n and "sgemm" not in n):
        return KernelClass.FP32_GEMM
    if half:
        return KernelClass.DENSE_TC_GEMM
    if dtype in _FP32_DTYPES:
        return KernelClass.FP32_GEMM
    if dtype in _HALF_DTYPES:
        return KernelClass.DENSE_TC_GEMM
    return KernelClass.OTHER


def classify_kernel(name: str, dtype: str | None = None) -> KernelClass:
    """Class of one kernel from its (possibly demangled, possibly templated) name.

    ``dtype`` (canonical: ``fp16``, ``bf16``, ``fp32``...) is the input dtype of
    the op that launched the kernel (or a TensorRT layer's precision), when known: it
    decides GEMMs whose name does not tell their precision (Inductor templates, unnamed
    library GEMMs) and every cuBLAS ``nvjet`` GEMM, whose type letters are undocumented.
    """
    n = name.lower().replace("fbgemm", "fb_lib")
    if is_communication_kernel(n):
        return KernelClass.COMMUNICATION
    if n.startswith(("memcpy", "memset", "dma")):
        return KernelClass.COPY
    if "cusparselt" in n or "spgemm" in n or "sparse" in n and ("gemm" in n or "mma" in n) or rocm_sparse_gemm(n):
        return KernelClass.SPARSE_GEMM
    if any(marker in n for marker in _ATTENTION_MARKERS):
        return KernelClass.ATTENTION
    if _is_gemm_like(n):
        return _gemm_class(n, dtype)
    if n.startswith("triton_poi"):
        return KernelClass.ELEMENTWISE  # Inductor pointwise, even when fused with a _to_copy
    if n.startswith(("triton_red", "triton_per")):
        return KernelClass.REDUCTION
    if any(marker in n for marker in _COPY_MARKERS):
        return KernelClass.COPY
    if any(marker in n for marker in _REDUCTION_MARKERS):
        return KernelClass.REDUCTION
    if any(marker in n for marker in _ELEMENTWISE_MARKERS):
        return KernelClass.ELEMENTWISE
    return KernelClass.OTHER


def primary_class(classes: set[KernelClass] | frozenset[KernelClass]) -> KernelClass:
    """The class that names a layer: the first of ``PRECEDENCE`` among ``classes``."""
    for cls in PRECEDENCE:
        if cls in classes:
            return cls
    return KernelClass.OTHER


# HTA 0.5 (hta/utils/utils.py): is_comm_kernel, is_memory_kernel, is_compute_kernel, verbatim.
_HTA_COMM = re.compile(r"^nccl.*Kernel")
_HTA_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_HTA_NON_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def hta_kernel_type(name: str) -> str:
    """Holistic Trace Analysis's kernel type: ``communication``, ``memory``, ``computation`` or ``other``.

    HTA's regular expressions, applied to the raw (case-sensitive) name: NCCL
    ``nccl*Kernel`` is communication, ``Memcpy*``/``Memset*``/``dma*`` memory, and
    every name that matches neither nor contains ``Memcpy`` or ``Sync`` is
    computation.
    """
    if _HTA_COMM.match(name):
        return "communication"
    if _HTA_MEMORY.match(name):
        return "memory"
    if not _HTA_NON_COMPUTE.match(name):
        return "computation"
    return "other"


def short_kernel_name(name: str, limit: int | None = 60) -> str:
    """A readable short form of a templated kernel name (for tables only, never for matching).

    Drops ``void``, the ``at::native::`` and anonymous namespaces and the argument
    list, keeps the template arguments that tell kernels apart, then truncates to ``limit``
    characters (``None``: never; terminal tables fold the whole name instead).
    """
    text = name.removeprefix("void ").replace("at::native::", "").replace("(anonymous namespace)::", "")
    depth = 0
    for index, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and index > 0:
            text = text[:index]
            break
    text = text.strip()
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"
