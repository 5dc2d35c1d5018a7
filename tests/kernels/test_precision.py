"""Input rounding (fp16, bf16 round-to-nearest-even) and the derived error bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.precision import error_bound, matmul_tolerance, round_bf16, round_fp16, round_input


def test_bf16_ties_go_to_even() -> None:
    one = 1.0
    values = np.array([one + 2.0**-8, one + 3 * 2.0**-8, one + 2.0**-8 + 2.0**-20, -(one + 2.0**-8)], dtype=np.float32)
    assert round_bf16(values).tolist() == [1.0, 1.0 + 2.0**-6, 1.0 + 2.0**-7, -1.0]


def test_bf16_overflow_and_nan() -> None:
    big = np.float32(np.finfo(np.float32).max)
    out = round_bf16(np.array([big, -big, np.nan, 0.0, -0.0], dtype=np.float32))
    assert np.isinf(out[0]) and out[0] > 0 and np.isinf(out[1]) and out[1] < 0
    assert np.isnan(out[2])
    assert out[3] == 0.0 and np.signbit(out[4])


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_bf16_is_nearest_representable(value: float) -> None:
    x = np.float32(value)
    r = round_bf16(np.array([x]))[0]
    bits = np.array([r], dtype=np.float32).view(np.uint32)[0]
    if np.isfinite(r):
        assert bits & 0xFFFF == 0
        # neighbours: truncation toward zero and the next bf16 away from zero
        down = (np.array([x], dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)[0]
        up_bits = np.array([down], dtype=np.float32).view(np.uint32) + np.uint32(0x10000)
        up = up_bits.view(np.float32)[0]
        err = abs(float(r) - float(x))
        assert err <= abs(float(down) - float(x)) and (not np.isfinite(up) or err <= abs(float(up) - float(x)))


def _numpy_fp16(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x.astype(np.float16).astype(np.float32)


@settings(max_examples=300, deadline=None)
@given(bits=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64), scale_exponent=st.integers(-30, 20))
def test_fp16_rounding_equals_numpys_conversion_bit_for_bit(bits: list[int], scale_exponent: int) -> None:
    """Any fp32 bit pattern (NaN, inf, fp32 and fp16 subnormals, past the fp16 range), and finite values
    squeezed into one binade range so the fast path runs: the same bits as astype(float16), signed zeros too."""
    raw = np.array(bits, dtype=np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.where(np.isfinite(raw), raw, np.float32(1.0))
        squeezed = (np.sign(finite) * np.abs(finite) / np.maximum(np.max(np.abs(finite)), np.float32(1e-38))
                    * np.float32(2.0**scale_exponent)).astype(np.float32)
    for x in (raw, squeezed):
        got, want = round_fp16(x), _numpy_fp16(x)
        assert got.dtype == np.float32
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_fp16_rounding_ties_subnormals_and_the_edge_of_the_range() -> None:
    tie = 1.0 + 2.0**-11  # halfway between 1 and the next fp16: ties to even (1.0)
    values = np.array([tie, 1.0 + 3 * 2.0**-11, 2.0**-25, 3 * 2.0**-25, 2.0**-14 - 2.0**-26, 65503.0, -0.0], dtype=np.float32)
    assert round_fp16(values).tolist() == [1.0, 1.0 + 2.0**-9, 0.0, 2.0**-23, 2.0**-14, 65504.0, -0.0]
    assert np.signbit(round_fp16(values)[-1])
    assert np.isinf(round_fp16(np.array([65520.0], dtype=np.float32))[0])


def test_round_input_formats() -> None:
    x = np.array([1.0 + 2.0**-12, 70000.0, 1e-8], dtype=np.float64)
    fp16 = round_input(x, "fp16")
    assert fp16.dtype == np.float32
    assert fp16[0] == 1.0 and np.isinf(fp16[1]) and fp16[2] == np.float32(np.float16(1e-8))
    assert round_input(x, "fp32").dtype == np.float32
    assert round_input(x, "fp64").dtype == np.float64
    assert round_input(x, "bf16").dtype == np.float32
    with pytest.raises(UserError, match="precision 'fp8'"):
        round_input(x, "fp8")  # type: ignore[arg-type]


def test_tolerances_are_ordered_and_grow_with_k() -> None:
    by_precision = [matmul_tolerance(p, 256).rtol for p in ("fp64", "fp32", "fp16", "bf16")]
    assert by_precision == sorted(by_precision)
    assert matmul_tolerance("fp32", 4096).rtol > matmul_tolerance("fp32", 64).rtol
    # bf16: two input roundings dominate
    assert matmul_tolerance("bf16", 16).rtol == pytest.approx(2 * 2.0**-8, rel=0.01)


def test_bound_detects_the_wrong_precision() -> None:
    """The bound is tight enough that bf16 results fail the fp32 bound: the check can fail."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 64))
    x = rng.standard_normal((64, 8))
    ref = w @ x
    bf16 = round_input(w, "bf16") @ round_input(x, "bf16")
    err = np.abs(bf16 - ref)
    assert (err <= error_bound(w, x, "bf16")).all()
    assert (err > error_bound(w, x, "fp32")).any()
