"""Sort GPU kernel names into classes: sparse GEMM, dense tensor-core GEMM, fp32 GEMM, ...

Kernel names are what a profiler trace or Nsight Compute reports; they are the
only ground truth of which path a layer took. The rules are substring tests on
the lower-cased name, checked in a fixed order (first match wins):

1. sparse GEMM: cuSPARSELt and CUTLASS 2:4 kernels (``xmma_sparse_gemm``,
   ``*cusparselt*``, ``sparse`` together with ``gemm``/``mma``, ``spgemm``).
2. attention: fused attention kernels (flash, fmha, sdpa, ``attention``).
3. fp32 / SIMT GEMM: ``sgemm``, ``f32f32`` GEMMs, ``simt`` GEMMs, tf32 GEMMs.
4. dense tensor-core GEMM: ``nvjet_*``, ``*xmma_gemm*``, ``hgemm``, CUTLASS
   ``tensorop`` GEMMs, half/bf16 GEMMs and GEMVs, ``wgmma``/``hmma`` GEMMs.
5. copy: copies, casts, memset/memcpy, concatenation.
6. reduction: reductions, norms, softmax.
7. elementwise: elementwise/pointwise kernels.
8. anything else: ``other`` (never an error).
"""

from __future__ import annotations

from sparsedebug.records.run import KernelClass

PRECEDENCE: tuple[KernelClass, ...] = (
    KernelClass.SPARSE_GEMM,
    KernelClass.FP32_GEMM,
    KernelClass.DENSE_TC_GEMM,
    KernelClass.ATTENTION,
    KernelClass.REDUCTION,
    KernelClass.ELEMENTWISE,
    KernelClass.COPY,
    KernelClass.OTHER,
)
"""Which class names a layer that ran kernels of several classes: the first one present."""

GEMM_CLASSES = frozenset({KernelClass.SPARSE_GEMM, KernelClass.DENSE_TC_GEMM, KernelClass.FP32_GEMM})

_HALF_MARKERS = ("f16", "fp16", "bf16", "half", "hsh", "hgemm", "bfloat16", "e4m3", "e5m2", "fp8", "i8i8", "int8")
_FP32_MARKERS = ("sgemm", "f32f32", "tf32", "fp32_gemm", "gemm_f32", "gemmsn", "simt")


def _is_gemm_like(name: str) -> bool:
    return "gemm" in name or "gemv" in name or name.startswith("nvjet") or "matmul" in name


def classify_kernel(name: str) -> KernelClass:
    """Class of one kernel from its (possibly demangled, possibly templated) name."""
    n = name.lower()
    if "cusparselt" in n or "spgemm" in n or "sparse" in n and ("gemm" in n or "mma" in n):
        return KernelClass.SPARSE_GEMM
    if any(marker in n for marker in ("flash", "fmha", "sdpa", "attention", "attn")):
        return KernelClass.ATTENTION
    if _is_gemm_like(n):
        if n.startswith("nvjet") or "xmma_gemm" in n or "tensorop" in n and "simt" not in n:
            # nvjet/xmma/tensorop names still say fp32 when they are tf32 or f32f32 GEMMs.
            if any(marker in n for marker in ("tf32", "f32f32", "sgemm")):
                return KernelClass.FP32_GEMM
            return KernelClass.DENSE_TC_GEMM
        if any(marker in n for marker in _FP32_MARKERS):
            return KernelClass.FP32_GEMM
        if any(marker in n for marker in _HALF_MARKERS) or "wgmma" in n or "hmma" in n or "16816" in n:
            return KernelClass.DENSE_TC_GEMM
        if "float" in n:
            return KernelClass.FP32_GEMM
        return KernelClass.OTHER
    if any(marker in n for marker in ("copy", "memcpy", "memset", "catarray", "cat_", "fill_kernel")):
        return KernelClass.COPY
    if any(marker in n for marker in ("reduce", "reduction", "norm", "softmax", "triton_red", "triton_per", "argmax")):
        return KernelClass.REDUCTION
    if any(marker in n for marker in ("elementwise", "pointwise", "triton_poi", "vectorized", "functor")):
        return KernelClass.ELEMENTWISE
    return KernelClass.OTHER


def primary_class(classes: set[KernelClass] | frozenset[KernelClass]) -> KernelClass:
    """The class that names a layer: the first of ``PRECEDENCE`` among ``classes``."""
    for cls in PRECEDENCE:
        if cls in classes:
            return cls
    return KernelClass.OTHER


def short_kernel_name(name: str, limit: int = 60) -> str:
    """A readable short form of a templated kernel name (for tables only, never for matching).

    Drops ``void``, the ``at::native::`` and anonymous namespaces and the argument
    list, keeps the template arguments that tell kernels apart, then truncates.
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
    return text if len(text) <= limit else text[: limit - 1] + "…"
