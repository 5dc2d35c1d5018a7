"""Precision emulation for the built-in kernels, and the error bounds that follow from it.

Sparse tensor cores read fp16/bf16 inputs and accumulate in fp32. The kernels
emulate that by rounding both operands to the input format, then computing the
product in fp32. ``fp32`` computes in fp32 throughout, ``fp64`` in fp64.

Error bound (Higham, inner products): with input unit roundoff ``u_in``,
accumulation unit roundoff ``u_acc`` and reduction length ``k``, every output
element satisfies::

    |Y - Y_ref| <= rtol * (|W| @ |X|) + atol * (rowsum|W| + colsum|X|)

where ``Y_ref`` is the fp64 product of the unrounded operands,
``rtol = 2*u_in + u_in**2 + gamma_k(u_acc) + gamma_k(2**-53)`` (both operands
rounded, then ``k``-term accumulation; the last term covers the fp64 reference
itself), ``gamma_k(u) = k*u / (1 - k*u)``, and ``atol`` covers inputs that round
into the subnormal range (half the smallest subnormal step of the input format,
times ``1 + rtol``). The bound holds for any summation order BLAS picks.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, get_args

import numpy as np
import numpy.typing as npt

from sparsedebug.core.dtypes import unit_roundoff as format_unit_roundoff
from sparsedebug.core.errors import InternalError, UserError

Precision = Literal["fp64", "fp32", "fp16", "bf16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)

# Half the spacing of subnormals: the largest absolute rounding error of a tiny input.
_SUBNORMAL_HALF_STEP: dict[str, float] = {
    "fp64": 2.0**-1075,
    "fp32": 2.0**-150,
    "fp16": 2.0**-25,
    "bf16": 2.0**-134,
}


def _roundoff(precision: Precision) -> float:
    """Unit roundoff of a precision mode's input format, from the one dtype table (core.dtypes)."""
    value = format_unit_roundoff(precision)
    if value is None:
        raise InternalError(f"no unit roundoff for {precision}")
    return value


def check_precision(precision: str) -> Precision:
    """Return ``precision`` if it is one of fp64/fp32/fp16/bf16, else raise ``UserError``."""
    if precision not in PRECISIONS:
        raise UserError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    return precision  # type: ignore[return-value]


def compute_dtype(precision: Precision) -> type[np.floating[Any]]:
    """The numpy dtype products are accumulated in: float64 for fp64, else float32."""
    return np.float64 if precision == "fp64" else np.float32


def unit_roundoff(precision: Precision) -> float:
    """Unit roundoff of the input format (fp64: 2^-53, fp32: 2^-24, fp16: 2^-11, bf16: 2^-8)."""
    return _roundoff(check_precision(precision))


def round_bf16(x: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Round to bfloat16 (round to nearest, ties to even, on the fp32 bit pattern); return fp32.

    Finite values that round past the bf16 maximum become inf, as in hardware;
    NaN stays NaN.
    """
    f32 = np.ascontiguousarray(x, dtype=np.float32)
    bits = f32.view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + (np.uint32(0x7FFF) + lsb)) & np.uint32(0xFFFF0000)
    out = rounded.view(np.float32)
    nan = np.isnan(f32)
    if nan.any():
        out = np.where(nan, np.float32(np.nan), out)
    return out


# The largest finite fp16: below it in magnitude, rounding to fp16 stays finite (the bit-pattern path).
FP16_FAST_LIMIT = 65504.0
FP16_MIN_NORMAL = 2.0**-14
FP16_SUBNORMAL_STEP = 2.0**-24


def round_fp16(x: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Round to fp16 (round to nearest, ties to even) and back, as ``x.astype(float16).astype(float32)``
    bit for bit, 5-10x faster (numpy's conversions run one element at a time).

    On the fp32 bit pattern for fp16's normal range: add the rounding bias under the 10 kept fraction
    bits (ties to even) and clear the 13 dropped ones. fp16 subnormals (``|x| < 2^-14``) are
    multiples of ``2^-24``: ``rint(x * 2^24) * 2^-24``. An array holding anything at or past the
    largest finite fp16 (overflow to inf), inf or NaN goes through numpy's own conversion.
    """
    f32 = np.ascontiguousarray(x, dtype=np.float32)
    magnitude = np.abs(f32)
    if not (f32.size and np.max(magnitude) < np.float32(FP16_FAST_LIMIT)):
        with np.errstate(over="ignore"):
            slow: npt.NDArray[np.float32] = f32.astype(np.float16).astype(np.float32)
        return slow
    bits = f32.view(np.uint32)
    rounded = bits >> np.uint32(13)
    rounded &= np.uint32(1)
    rounded += np.uint32(0x0FFF)
    rounded += bits
    rounded &= np.uint32(0xFFFFE000)
    out: npt.NDArray[np.float32] = rounded.view(np.float32)
    small = magnitude < np.float32(FP16_MIN_NORMAL)
    if small.any():
        out[small] = np.rint(f32[small] * np.float32(1.0 / FP16_SUBNORMAL_STEP)) * np.float32(FP16_SUBNORMAL_STEP)
    return out


def round_input(x: npt.ArrayLike, precision: Precision) -> npt.NDArray[Any]:
    """Round an operand to the input format of ``precision``, returned in the compute dtype.

    fp16 and bf16 come back as float32 holding exactly representable fp16/bf16
    values (ready for fp32 accumulation); fp32 as float32; fp64 as float64.
    """
    check_precision(precision)
    if precision == "fp64":
        return np.asarray(x, dtype=np.float64)
    if precision == "fp32":
        return np.asarray(x, dtype=np.float32)
    if precision == "fp16":
        return round_fp16(x)
    return round_bf16(x)


def gamma(k: int, u: float) -> float:
    """``gamma_k = k*u / (1 - k*u)``, the classic bound factor for a k-term sum."""
    ku = k * u
    if ku >= 1.0:
        return float("inf")
    return ku / (1.0 - ku)


class Tolerance(NamedTuple):
    """Error bound factors: ``|Y - Y_ref| <= rtol*(|W|@|X|) + atol*(rowsum|W| + colsum|X|)``."""

    rtol: float
    atol: float


def matmul_tolerance(precision: Precision, k: int) -> Tolerance:
    """Bound factors for a product with reduction length ``k`` under ``precision`` (see module doc)."""
    u_in = unit_roundoff(precision)
    if precision == "fp64":
        u_in = 0.0  # inputs are already fp64 (fp32/fp16 inputs convert exactly)
    u_acc = _roundoff("fp64" if precision == "fp64" else "fp32")
    rtol = 2.0 * u_in + u_in * u_in + gamma(k, u_acc) + gamma(k, _roundoff("fp64"))
    atol = _SUBNORMAL_HALF_STEP[precision] * (1.0 + rtol) * 2.0
    return Tolerance(rtol=rtol, atol=atol)


def error_bound(weight: npt.ArrayLike, x: npt.ArrayLike, precision: Precision) -> npt.NDArray[np.float64]:
    """Elementwise bound on ``|W @ X - fp64 reference|`` for ``precision`` (shape ``(out, T)``)."""
    w = np.abs(np.asarray(weight, dtype=np.float64))
    a = np.abs(np.asarray(x, dtype=np.float64))
    tol = matmul_tolerance(precision, w.shape[1])
    bound: npt.NDArray[np.float64] = tol.rtol * (w @ a) + tol.atol * (w.sum(axis=1)[:, None] + a.sum(axis=0)[None, :])
    return bound
