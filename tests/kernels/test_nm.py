"""Per-row N:M layout: exact round trips, products within the precision bound, metadata size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.kernels import nm as nm_module
from sparsedebug.kernels.masks import nm_mask
from sparsedebug.kernels.nm import NMWeight, index_bits, pack_indices, unpack_indices
from sparsedebug.kernels.precision import error_bound
from tests.kernels.strategies import PRECISIONS, Case, cases


@settings(max_examples=60, deadline=None)
@given(case=cases(), dtype=st.sampled_from([np.float16, np.float32, np.float64]))
def test_round_trip_is_exact(case: Case, dtype: type[np.floating]) -> None:
    w = case.weight(dtype)
    packed = NMWeight.compress(w, case.n, case.m)
    masked = np.where(nm_mask(w, case.n, case.m), w, 0)
    dense = packed.decompress()
    assert dense.shape == w.shape == packed.shape
    assert np.array_equal(dense, masked.astype(dense.dtype))
    assert np.array_equal(dense.astype(dtype), masked)
    # a compliant weight compresses to itself
    again = NMWeight.compress(dense, case.n, case.m)
    assert np.array_equal(again.decompress(), dense)


@settings(max_examples=80, deadline=None)
@given(case=cases(), precision=st.sampled_from(PRECISIONS))
def test_product_within_precision_bound(case: Case, precision: str) -> None:
    w = case.weight()
    x = case.x()
    packed = NMWeight.compress(w, case.n, case.m)
    masked = packed.decompress().astype(np.float64)
    reference = masked @ x.astype(np.float64)
    y = packed.matmul(x, precision)  # type: ignore[arg-type]
    assert y.shape == (case.rows, case.tokens)
    assert y.dtype == (np.float64 if precision == "fp64" else np.float32)
    assert (np.abs(y - reference) <= error_bound(masked, x, precision)).all()  # type: ignore[arg-type]


def test_product_uses_several_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nm_module, "TILE_ELEMENTS", 64)  # 2 rows per tile
    rng = np.random.default_rng(3)
    w = rng.standard_normal((37, 32)).astype(np.float32)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    packed = NMWeight.compress(w, 2, 4)
    ref = packed.decompress().astype(np.float64) @ x
    assert np.allclose(packed.matmul(x), ref, rtol=1e-5, atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(2, 16), rows=st.integers(1, 5), count=st.integers(1, 40), seed=st.integers(0, 1000))
def test_pack_unpack_round_trip(m: int, rows: int, count: int, seed: int) -> None:
    idx = np.random.default_rng(seed).integers(0, m, size=(rows, count)).astype(np.uint8)
    bits = index_bits(m)
    packed = pack_indices(idx, bits)
    assert packed.dtype == np.uint8 and packed.shape == (rows, -(-count * bits // 8))
    assert np.array_equal(unpack_indices(packed, bits, count), idx)


@pytest.mark.parametrize(("n", "m", "meta_bits"), [(2, 4, 2), (1, 4, 2), (1, 2, 1), (4, 8, 4), (8, 16, 4)])
def test_footprint(n: int, m: int, meta_bits: int) -> None:
    rows, k = 8, 64
    w = np.random.default_rng(0).standard_normal((rows, k)).astype(np.float32)
    fp = NMWeight.compress(w, n, m).footprint()
    kept = rows * k // m * n
    assert fp.value_bytes == kept * 4
    assert fp.metadata_bytes == kept * meta_bits // 8
    assert fp.dense_bytes == rows * k * 4
    if (n, m) == (2, 4):
        assert fp.ratio == pytest.approx(0.5 + 1 / 32)  # 2 bits per kept fp32 value


@pytest.mark.parametrize(
    ("x", "needle"),
    [
        (np.ones((12, 2), np.float32), "12 rows but the weight has K=8"),
        (np.ones(8, np.float32), "1-D"),
        (np.ones((8, 2), np.int64), "int64 is not a floating type"),
        (np.full((8, 2), np.nan, np.float32), "NaN or inf"),
        (np.ones((8, 0), np.float32), "no tokens"),
    ],
)
def test_bad_activations(x: np.ndarray, needle: str) -> None:
    packed = NMWeight.compress(np.ones((4, 8), np.float32), 2, 4)
    with pytest.raises(UserError, match=needle):
        packed.matmul(x)


def test_bad_weight_and_precision() -> None:
    with pytest.raises(UserError, match="K=10 is not divisible by M=4"):
        NMWeight.compress(np.ones((4, 10), np.float32), 2, 4)
    with pytest.raises(UserError, match="N=4"):
        NMWeight.compress(np.ones((4, 8), np.float32), 4, 4)
    packed = NMWeight.compress(np.ones((4, 8), np.float32), 2, 4)
    with pytest.raises(UserError, match="precision 'int8'"):
        packed.matmul(np.ones((8, 1), np.float32), "int8")  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "m", "groups"), [(2, 4, 6), (1, 4, 8), (1, 2, 16), (2, 8, 3), (3, 4, 4), (4, 8, 5), (2, 4, 3)])
def test_byte_table_columns_match_unpacked_positions(n: int, m: int, groups: int) -> None:
    """The lookup-table fast path and the generic unpacking give the same columns."""
    w = np.random.default_rng(n * 100 + m).standard_normal((5, groups * m)).astype(np.float32)
    packed = NMWeight.compress(w, n, m)
    pos = packed.positions().astype(np.intp)
    expected = (pos + (np.arange(groups) * m)[None, :, None]).reshape(5, groups * n)
    assert np.array_equal(packed._columns(0, 5), expected)
    assert np.array_equal(packed._columns(2, 4), expected[2:4])


def test_huge_finite_activations_are_accepted() -> None:
    """A sum that overflows is not mistaken for an inf input."""
    packed = NMWeight.compress(np.ones((2, 8), np.float32), 2, 4)
    x = np.full((8, 2), 3e38, np.float32)
    expected = 4 * float(np.float32(3e38))  # four kept ones per row, exact in fp64
    assert packed.matmul(x, "fp64").tolist() == [[expected] * 2] * 2
    x[3, 1] = -np.inf
    with pytest.raises(UserError, match="NaN or inf"):
        packed.matmul(x)
