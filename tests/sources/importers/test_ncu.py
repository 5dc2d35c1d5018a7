"""Nsight Compute CSV: the H200 dense vs 2:4 GEMM, the Speed-of-Light rule, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.records.run import KernelClass
from sparsedebug.sources.importers.ncu import load_ncu, sol_bound
from tests.conftest import FIXTURES

NCU = FIXTURES / "h200" / "ncu_dense_vs_sparse_11008x4096x2048.csv"


def test_h200_dense_vs_sparse_gemm() -> None:
    report = load_ncu(NCU)
    dense, sparse = report.kernels
    assert dense.kernel_class is KernelClass.DENSE_TC_GEMM and dense.name.startswith("nvjet_sm90_hsh")
    assert sparse.kernel_class is KernelClass.SPARSE_GEMM
    assert dense.duration_us == pytest.approx(248.288)
    assert sparse.duration_us == pytest.approx(174.016)
    assert dense.duration_us is not None and sparse.duration_us is not None
    assert dense.duration_us / sparse.duration_us == pytest.approx(1.43, abs=0.01)
    assert (dense.sm_throughput_pct, dense.memory_throughput_pct, dense.bound) == (90.26, 77.26, "compute")
    assert (sparse.sm_throughput_pct, sparse.memory_throughput_pct, sparse.bound) == (64.91, 74.33, "balanced")
    assert dense.spills is False and sparse.spills is True and sparse.local_spill_requests == 77144
    assert "SpeedOfLight" in report.sections and "Memory Workload Analysis" in report.sections
    # the byte/s 'Memory Throughput' of MemoryWorkloadAnalysis did not shadow the SOL percentage
    assert any(key.endswith("Memory Throughput [byte/s]") for key in dense.metrics)


@pytest.mark.parametrize(
    ("sm", "mem", "bound"),
    [(59.9, 59.9, "latency"), (10.0, 59.0, "latency"), (90.0, 79.9, "compute"), (60.0, 70.0, "memory"), (65.0, 74.9, "balanced"), (61.0, 40.0, "compute"), (70.0, 60.0, "compute"), (70.0, 60.01, "balanced")],
)
def test_speed_of_light_rule(sm: float, mem: float, bound: str) -> None:
    assert sol_bound(sm, mem) == bound


def test_units_and_missing_values(tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    path.write_text(
        '"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","ampere_sgemm_128x64_nn","GPU Speed Of Light Throughput","Duration","usecond","1.5"\n'
        '"0","ampere_sgemm_128x64_nn","GPU Speed Of Light Throughput","Memory Throughput","%","n/a"\n'
        '"0","ampere_sgemm_128x64_nn","Launch Statistics","Registers Per Thread","register/thread","128"\n'
    )
    (kernel,) = load_ncu(path).kernels
    assert kernel.duration_us == 1.5 and kernel.memory_throughput_pct is None and kernel.bound is None
    assert kernel.registers_per_thread == 128 and kernel.kernel_class is KernelClass.FP32_GEMM


@pytest.mark.parametrize(
    ("name", "needle"),
    [("ncu_no_header.csv", "no CSV header"), ("ncu_raw_page.csv", "--page details")],
)
def test_bad_files(name: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        load_ncu(FIXTURES / "artifacts" / name)


def test_unknown_duration_unit(tmp_path: Path) -> None:
    path = tmp_path / "u.csv"
    path.write_text('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","k","Duration","fortnight","3"\n')
    with pytest.raises(UserError, match="unknown unit 'fortnight'"):
        load_ncu(path)
