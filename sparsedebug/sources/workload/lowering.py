"""Lowering: does a layer run on the sparse path or fall back to dense, and why.

A backend support profile answers, for one layer (op kind, weight shape, dtype,
intended pattern, whether the weights comply with it), ``sparse`` or ``dense``
with a :class:`~sparsedebug.records.run.FallbackReason`. Profiles:

``cpu-numpy``
    The built-in numpy kernels (``sparsedebug.kernels``): per-row ``N:M`` and
    blocked ``V:N:M`` for any ``M`` up to 16, fp32/fp16/bf16 inputs, linear
    layers only. Needs ``K`` divisible by ``M`` and weights that comply.
``h200-cusparselt``
    PyTorch 2.11 ``to_sparse_semi_structured`` with the cuSPARSELt backend on an
    H200 (compute capability 9.0): 2:4 only (blocked ``V:2:4`` complies with
    2:4 row by row), fp16/bf16/int8 (fp8 converts but its matmul raises), both
    weight dimensions at least and a multiple of 16 (fp16/bf16) or 32
    (int8/fp8). fp32 is refused. These rules reproduce every row of the real
    support probe in ``fixtures/h200/results.json``.
``h200-cutlass``
    The same API with the CUTLASS backend on the H200: weights convert (shape
    minimum 32x64 for fp16/bf16, 32x32 fp32, 16x128 int8) but every matmul
    raises, because PyTorch's CUTLASS 2:4 kernels run on compute capability 8.x
    only: every layer falls back to dense.

Non-linear ops never go sparse; they count toward the dense share of time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ConfigDict

from sparsedebug.core.dtypes import torch_dtype_name
from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import MAX_M, Pattern
from sparsedebug.records.base import Record
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath, LowerLayer
from sparsedebug.records.target import SlowerThanDense, TargetClock

# --------------------------------------------------------------------------- queries and decisions


@dataclass(frozen=True)
class LayerQuery:
    """What a profile needs to decide one layer."""

    name: str
    op: str
    out: int | None
    k: int | None
    dtype: str
    pattern: Pattern | None
    # Whether the weights comply with ``pattern`` (None: not checked, assumed).
    compliant: bool | None = None


class Decision(Record):
    """A lowering decision for one layer."""

    model_config = ConfigDict(frozen=True)

    path: KernelPath
    reason: FallbackReason | None = None
    detail: Note | None = None
    kernels: list[str] = []


def _dense(reason: FallbackReason, detail: Note | None, kernels: list[str]) -> Decision:
    return Decision(path=KernelPath.DENSE, reason=reason, detail=detail, kernels=kernels)


def kernel_class(op: str, path: KernelPath, dtype: str) -> KernelClass:
    """The kernel class a layer's work belongs to (used for per-class time and the dense share)."""
    if op == "linear":
        if path is KernelPath.SPARSE:
            return KernelClass.SPARSE_GEMM
        return KernelClass.FP32_GEMM if torch_dtype_name(dtype) == "float32" else KernelClass.DENSE_TC_GEMM
    return {
        "attention": KernelClass.ATTENTION,
        "norm": KernelClass.REDUCTION,
        "embedding": KernelClass.COPY,
    }.get(op, KernelClass.ELEMENTWISE)


@dataclass(frozen=True)
class Profile:
    """A backend support profile: a name, its decision rule, and its target's measurements (what it models:
    ``render.words.targets.PROFILE_WORDS``)."""

    name: str
    rule: Callable[[LayerQuery], Decision]
    # Target source (``fixtures/targets/<target>.yaml``) of the GPU this profile models; None for this machine.
    target: str | None = None

    def decide(self, query: LayerQuery) -> Decision:
        """Sparse or dense (with reason) for one layer."""
        if query.pattern is None:
            return _dense(FallbackReason.INTENDED_DENSE, None, self._dense_kernels(query))
        if query.op != "linear":
            return _dense(
                FallbackReason.OP_UNSUPPORTED,
                note("targets.profile_linear_only", profile=self.name, op=query.op),
                self._dense_kernels(query),
            )
        return self.rule(query)

    def _dense_kernels(self, query: LayerQuery) -> list[str]:
        return [f"{self.name}:dense:{query.op}"]


# --------------------------------------------------------------------------- cpu-numpy

CPU_DTYPES = ("float32", "float16", "bfloat16")


def _cpu_numpy(query: LayerQuery) -> Decision:
    pattern = query.pattern
    assert pattern is not None
    dense = ["numpy.matmul"]
    dtype = torch_dtype_name(query.dtype)
    if dtype not in CPU_DTYPES:
        return _dense(FallbackReason.DTYPE_UNSUPPORTED, note("targets.numpy_dtype", dtype=dtype), dense)
    if pattern.m > MAX_M:
        return _dense(FallbackReason.PATTERN_NOT_COMPLIANT, note("targets.m_above_max", m=pattern.m, max_m=MAX_M), dense)
    if query.k is not None and query.k % pattern.m != 0:
        return _dense(FallbackReason.SHAPE_NOT_ALIGNED, note("targets.k_not_multiple", k=query.k, m=pattern.m), dense)
    if query.compliant is False:
        return _dense(FallbackReason.PATTERN_NOT_COMPLIANT, note("targets.not_compliant", pattern=str(pattern)), dense)
    kernel = "sparsedebug.kernels.VNMWeight.matmul" if pattern.block is not None else "sparsedebug.kernels.NMWeight.matmul"
    return Decision(path=KernelPath.SPARSE, kernels=[kernel])


# --------------------------------------------------------------------------- torch semi-structured (H200)

TORCH_MIN_SHAPE: dict[str, dict[str, tuple[int, int]]] = {
    # torch 2.11 _SEMI_STRUCTURED_SPARSE_CONFIG sparse_min_rows / sparse_min_cols, per backend and dtype,
    # as printed in fixtures/h200/results.json env.constraints.
    "cusparselt": {
        "float8_e4m3fn": (32, 32),
        "int8": (32, 32),
        "float16": (16, 16),
        "bfloat16": (16, 16),
    },
    "cutlass": {
        "int8": (16, 128),
        "float16": (32, 64),
        "bfloat16": (32, 64),
        "float32": (32, 32),
    },
}
_TORCH_CLASS = {"cusparselt": "SparseSemiStructuredTensorCUSPARSELT", "cutlass": "SparseSemiStructuredTensorCUTLASS"}


class TorchSupport(Record):
    """Outcome of ``to_sparse_semi_structured`` then a matmul, as PyTorch 2.11 reports it."""

    model_config = ConfigDict(frozen=True)

    convert: bool
    convert_error: str | None = None
    matmul: bool | None = None
    """None when conversion already failed."""
    matmul_error: str | None = None
    reason: FallbackReason | None = None


# Where a quoted torch error comes from: the support matrix measured on an H200 (fixtures/h200/results.json),
# reproduced by the profile (no torch runs); the note ``targets.torch_raises`` says so in words.
SUPPORT_MATRIX_SOURCE = "fixtures/h200/results.json"


def torch_semi_structured(
    backend: str, dtype: str, out: int, k: int, *, capability: tuple[int, int] = (9, 0), tokens: int = 128
) -> TorchSupport:
    """Predict conversion and matmul of an ``(out, k)`` 2:4 weight through PyTorch 2.11.

    Errors are the exception PyTorch raises, as ``Type('message')``. Checks run
    in PyTorch's order: dtype, then shape (both dimensions at least and a
    multiple of the backend's minimum), then the matmul (CUTLASS kernels need
    compute capability 8.x; cuSPARSELt fp8 matmul is not implemented for ``mm``).
    """
    if backend not in TORCH_MIN_SHAPE:
        raise UserError(f"torch sparse backend {backend!r}: expected cusparselt or cutlass")
    name = torch_dtype_name(dtype)
    limits = TORCH_MIN_SHAPE[backend]
    cls = f"<class 'torch.sparse.semi_structured.{_TORCH_CLASS[backend]}'>"
    if name not in limits:
        msg = f"Error original_tensor.dtype torch.{name} is not a supported dtype for {cls}!"
        return TorchSupport(convert=False, convert_error=f"RuntimeError({msg!r})", reason=FallbackReason.DTYPE_UNSUPPORTED)
    min_rows, min_cols = limits[name]
    if out < min_rows or k < min_cols or out % min_rows or k % min_cols:
        msg = (
            f"Error original_tensor.shape torch.Size([{out}, {k}]) is not supported! "
            f"Both dimensions must be larger or equal than and a multiple of ({min_rows}, {min_cols})"
        )
        return TorchSupport(convert=False, convert_error=f"RuntimeError({msg!r})", reason=FallbackReason.SHAPE_NOT_ALIGNED)
    if backend == "cutlass" and capability[0] != 8:
        msg = "sparse_semi_structured_mad_op : Supported only on GPUs with compute capability 8.x"
        return TorchSupport(
            convert=True, matmul=False, matmul_error=f"RuntimeError({msg!r})", reason=FallbackReason.OP_UNSUPPORTED
        )
    if backend == "cusparselt" and name == "float8_e4m3fn":
        msg = (
            f"`{_TORCH_CLASS[backend]}` matmul: trying to do `A=({out}, {k}) @ B=({k}, {tokens})`, with "
            f"A.dtype=B.dtype=torch.{name}. mm is not supported for {name}, please use `torch._scaled_mm` instead."
        )
        return TorchSupport(
            convert=True, matmul=False, matmul_error=f"NotImplementedError({msg!r})", reason=FallbackReason.DTYPE_UNSUPPORTED
        )
    return TorchSupport(convert=True, matmul=True)


def _torch_rule(backend: str) -> Callable[[LayerQuery], Decision]:
    def rule(query: LayerQuery) -> Decision:
        pattern = query.pattern
        assert pattern is not None
        dense = ["aten::linear (dense)"]
        if (pattern.n, pattern.m) != (2, 4):
            return _dense(FallbackReason.PATTERN_NOT_COMPLIANT, note("targets.torch_2_4_only", pattern=str(pattern)), dense)
        if query.out is None or query.k is None:
            raise UserError(f"layer {query.name!r}: a linear layer needs its weight shape to be lowered")
        support = torch_semi_structured(backend, query.dtype, query.out, query.k)
        if not support.convert or not support.matmul:
            error = support.convert_error or support.matmul_error
            stage = "to_sparse_semi_structured" if not support.convert else "matmul"
            assert support.reason is not None
            raised = note("targets.torch_raises", stage=stage, error=error, source=SUPPORT_MATRIX_SOURCE)
            return _dense(support.reason, raised, dense)
        if query.compliant is False:
            return _dense(FallbackReason.PATTERN_NOT_COMPLIANT, note("targets.not_compliant", pattern="2:4"), dense)
        kernel = "cusparselt sm90_xmma_sparse_gemm" if backend == "cusparselt" else "cutlass sparse_semi_structured_mad_op"
        return Decision(path=KernelPath.SPARSE, kernels=[kernel])

    return rule


# Every backend support profile, by name.
PROFILES: dict[str, Profile] = {
    "cpu-numpy": Profile("cpu-numpy", _cpu_numpy),
    "h200-cusparselt": Profile("h200-cusparselt", _torch_rule("cusparselt"), target="h200"),
    "h200-cutlass": Profile("h200-cutlass", _torch_rule("cutlass"), target="h200"),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name``; ``UserError`` listing the known ones otherwise."""
    if name not in PROFILES:
        raise UserError(f"backend profile {name!r}: unknown; known: {', '.join(sorted(PROFILES))}")
    return PROFILES[name]


def flag_slower_than_dense(layers: list[LowerLayer], target: TargetClock) -> list[LowerLayer]:
    """Flag (``slower_on_target``) every sparse layer projected slower than dense on the target; returns those flagged.

    The layer keeps its sparse path (the backend accepts it): the flag says the
    sparsity costs time on that GPU, with both projected per-call times. It is a
    claim, so it is made only where the projection's verdict is ``sparse loses``
    (the speedup's 90% interval lies below 1.0), not where it is ``uncertain here``.
    """
    projected = {layer.name: layer for layer in target.layers}
    flagged = []
    for layer in layers:
        proj = projected.get(layer.name)
        if layer.path is not KernelPath.SPARSE or proj is None or proj.dense is None or proj.sparse is None:
            continue
        loses = proj.verdict == "sparse loses" if proj.verdict is not None else proj.sparse.per_call_ms > proj.dense.per_call_ms
        if loses:
            layer.slower_on_target = SlowerThanDense(
                backend=target.backend, launch=target.launch, tokens=target.tokens, dense_ms=proj.dense.per_call_ms,
                sparse_ms=proj.sparse.per_call_ms, basis=proj.basis,
            )
            flagged.append(layer)
    return flagged
