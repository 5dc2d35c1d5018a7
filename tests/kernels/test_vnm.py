"""Blocked V:N:M layout: exact round trips, products within the precision bound, footprint."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import check_compliance, vnm_mask
from sparsedebug.kernels.precision import error_bound
from sparsedebug.kernels.vnm import VNMWeight
from tests.kernels.strategies import PRECISIONS, Case, cases


@settings(max_examples=60, deadline=None)
@given(case=cases(max_rows=40), block=st.integers(1, 48), precision=st.sampled_from(PRECISIONS))
def test_round_trip_and_product(case: Case, block: int, precision: str) -> None:
    w = case.weight()
    x = case.x()
    packed = VNMWeight.compress(w, case.n, case.m, block)
    dense = packed.decompress()
    expected = np.where(vnm_mask(w, case.n, case.m, block), w, 0)
    assert np.array_equal(dense, expected)
    assert check_compliance(dense, case.n, case.m, block=block).compliant
    assert np.array_equal(VNMWeight.compress(dense, case.n, case.m, block).decompress(), dense)
    y = packed.matmul(x, precision)  # type: ignore[arg-type]
    reference = dense.astype(np.float64) @ x.astype(np.float64)
    assert (np.abs(y - reference) <= error_bound(dense, x, precision)).all()  # type: ignore[arg-type]


def test_block_covering_all_rows_is_one_block() -> None:
    w = np.random.default_rng(1).standard_normal((10, 16)).astype(np.float32)
    packed = VNMWeight.compress(w, 2, 4, 1000)
    assert packed.blocks == 1
    assert (packed.decompress() != 0).sum(axis=0).tolist().count(10) == 8


def test_footprint_and_runtime_indices() -> None:
    rows, k, block = 64, 32, 16
    w = np.random.default_rng(0).standard_normal((rows, k)).astype(np.float32)
    packed = VNMWeight.compress(w, 2, 4, block)
    fp = packed.footprint()
    assert fp.value_bytes == rows * k // 2 * 4
    assert fp.metadata_bytes == (rows // block) * (k // 2) * 2 // 8
    assert fp.dense_bytes == rows * k * 4
    assert packed.runtime_index_bytes() == (rows // block) * (k // 2) * np.dtype(np.intp).itemsize
    assert str(packed.pattern) == "16:2:4"


def test_bad_input() -> None:
    with pytest.raises(UserError, match="K=6 is not divisible by M=4"):
        VNMWeight.compress(np.ones((4, 6), np.float32), 2, 4, 2)
    with pytest.raises(UserError, match="V=0"):
        VNMWeight.compress(np.ones((4, 8), np.float32), 2, 4, 0)
    packed = VNMWeight.compress(np.ones((4, 8), np.float32), 2, 4, 2)
    with pytest.raises(UserError, match="K=8"):
        packed.matmul(np.ones((4, 2), np.float32))
