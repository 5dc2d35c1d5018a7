"""Spreading kernel pieces over worker threads: spans, coverage, BLAS limit restored."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.kernels.nm import NMWeight
from sparsedebug.kernels.precision import error_bound
from sparsedebug.kernels.vnm import VNMWeight
from sparsedebug.kernels.workers import blas_threads, run_pieces, split


@given(count=st.integers(1, 200), workers=st.integers(1, 9))
def test_split_covers_range_contiguously(count: int, workers: int) -> None:
    spans = split(count, workers)
    assert len(spans) == min(count, workers)
    assert spans[0][0] == 0 and spans[-1][1] == count
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    sizes = [stop - start for start, stop in spans]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_run_pieces_visits_every_piece_once_and_restores_blas() -> None:
    before = blas_threads()
    seen: list[int] = []
    names: set[str] = set()
    lock = threading.Lock()

    def body(worker: int, start: int, stop: int) -> None:
        with lock:
            seen.extend(range(start, stop))
            names.add(threading.current_thread().name)

    run_pieces(10, body, workers=3)
    assert sorted(seen) == list(range(10))
    assert all(name.startswith("sparsedebug-kernel") for name in names)
    assert blas_threads() == before


def test_worker_errors_propagate_and_restore_blas() -> None:
    before = blas_threads()

    def body(worker: int, start: int, stop: int) -> None:
        if worker == 1:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_pieces(4, body, workers=2)
    assert blas_threads() == before


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_products_agree_for_any_worker_count(workers: int) -> None:
    rng = np.random.default_rng(workers)
    w = rng.standard_normal((50, 64)).astype(np.float32)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    for kernel in (NMWeight.compress(w, 2, 4), VNMWeight.compress(w, 2, 4, 8)):
        dense = kernel.decompress()
        reference = dense.astype(np.float64) @ x.astype(np.float64)
        got = kernel.matmul(x, workers=workers)
        assert (np.abs(got - reference) <= error_bound(dense, x, "fp32")).all()
