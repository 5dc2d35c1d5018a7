"""The kernel bench without scipy: the CSR anchor is left out, said so, and every other variant is timed as before."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from rich.console import Console

from sparsedebug.kernels import bench
from sparsedebug.kernels.masks import Pattern
from sparsedebug.render.terminal.bench import kernel_bench_table


def test_without_scipy_the_csr_anchor_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)  # import scipy.sparse now raises ImportError
    assert bench.csr_anchor(np.eye(4, dtype=np.float32)) is None
    rows = bench.run_kernel_bench((64, 64), [4], Pattern(n=2, m=4), 16, rounds=3)
    row = rows[0]
    assert row.csr_ms is None and row.nm_vs_csr is None and row.csr_vs_dense is None
    assert set(row.percentiles_ms) == {"dense", "limit", "nm", "vnm"} and row.rounds == 3
    assert row.nm_vs_dense == pytest.approx(row.dense_ms / row.nm_ms)
    console = Console(width=200, record=True)
    console.print(kernel_bench_table(rows))
    text = console.export_text()
    assert "csr: not timed, scipy is not installed (pip install 'sparsedebug[anchors]')" in " ".join(text.split())


def test_with_scipy_the_anchor_is_timed() -> None:
    pytest.importorskip("scipy.sparse")
    row = bench.run_kernel_bench((64, 64), [4], Pattern(n=2, m=4), 16, rounds=2)[0]
    assert row.csr_ms is not None and row.nm_vs_csr == pytest.approx(row.csr_ms / row.nm_ms)
    assert list(row.percentiles_ms) == ["dense", "limit", "csr", "nm", "vnm"]
