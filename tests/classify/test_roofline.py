"""Machine roofline (calibration or GPU peak table) and per-layer arithmetic intensity."""

from __future__ import annotations

import pytest

from sparsedebug.classify.roofline import (
    calibrated_roofline,
    find_gpu_peak,
    layer_intensities,
    machine_roofline,
    peak_roofline,
    sparse_density,
)
from sparsedebug.records.fingerprint import GpuInfo
from sparsedebug.records.run import KernelPath, RunSource
from tests.classify.test_score import TOKENS, make_fingerprint, make_run


def test_peak_table_lookup_is_most_specific_first() -> None:
    assert find_gpu_peak("NVIDIA H200") is not None and find_gpu_peak("NVIDIA H200").name == "NVIDIA H200 SXM"  # type: ignore[union-attr]
    pcie = find_gpu_peak("NVIDIA H100 PCIe")
    sxm = find_gpu_peak("NVIDIA H100 80GB HBM3")
    assert pcie is not None and sxm is not None and pcie.name != sxm.name
    assert pcie.bandwidth_tbps < sxm.bandwidth_tbps
    assert find_gpu_peak("Tesla T4") is None


def test_peak_roofline_ridge_depends_on_dtype() -> None:
    half = peak_roofline("NVIDIA H200", "fp16")
    single = peak_roofline("NVIDIA H200", "float32")
    assert half is not None and single is not None
    assert half.source == "peak_table" and "datasheet" in half.reference and half.named_as == "NVIDIA H200"
    assert half.ridge == pytest.approx(989e3 / 4.8e3)
    assert single.ridge == pytest.approx(67e3 / 4.8e3)
    assert peak_roofline("unknown gpu") is None


def test_calibrated_roofline_comes_from_freeze_calibration() -> None:
    fp = make_fingerprint(gemm_gflops=80.0, copy_gbps=8.0)
    roof = calibrated_roofline(fp)
    assert roof is not None and roof.source == "calibration" and roof.ridge == pytest.approx(10.0)
    fp.calibration = None
    assert calibrated_roofline(fp) is None


def test_machine_roofline_picks_the_right_source() -> None:
    replay = make_run()
    assert machine_roofline(replay) is None, "a replay without a calibrated fingerprint has no roofline"
    assert machine_roofline(replay, make_fingerprint()) is not None
    imported = make_run()
    imported.source = RunSource(kind="torch_trace")
    assert machine_roofline(imported) is None
    assert machine_roofline(imported, gpu="H100 PCIe").device == "NVIDIA H100 PCIe"  # type: ignore[union-attr]
    imported.lower.backend = "cuda:NVIDIA H200"
    assert machine_roofline(imported).device == "NVIDIA H200 SXM"  # type: ignore[union-attr]
    fp = make_fingerprint()
    fp.gpus = [GpuInfo(name="NVIDIA H100 80GB HBM3", driver=None, max_sm_clock_mhz=1980, max_mem_clock_mhz=None)]
    imported.lower.backend = "cuda"
    assert machine_roofline(imported, fp).device == "NVIDIA H100 SXM"  # type: ignore[union-attr]


def test_sparse_density() -> None:
    assert sparse_density("2:4") == 0.5
    assert sparse_density("32:2:4") == 0.5
    assert sparse_density("1:4") == 0.25
    assert sparse_density("dense") is None
    assert sparse_density("4:2") is None


def test_layer_intensity_matches_hand_computation() -> None:
    run = make_run()
    roof = calibrated_roofline(make_fingerprint(gemm_gflops=100.0, copy_gbps=10.0))
    assert roof is not None
    # l0 dense: weight 256x256 fp32 and activations in/out of 64 tokens
    lo = run.lower.layers[0]
    lo.path = KernelPath.DENSE
    layers = {li.name: li for li in layer_intensities(run, roof)}
    flops = 2.0 * TOKENS * 256 * 256
    nbytes = 4.0 * (256 * 256 + TOKENS * 512)
    assert layers["l0"].path == "dense"
    assert layers["l0"].intensity == pytest.approx(flops / nbytes)
    assert layers["l0"].attainable_ms == pytest.approx(max(flops / 100e9, nbytes / 10e9) * 1e3)
    assert layers["l0"].bound == ("memory" if flops / nbytes < 10.0 else "compute")
    # l1 sparse 2:4: half the FLOPs, compressed weights (values + metadata) instead of dense ones
    l1 = run.lower.layers[1]
    sparse_bytes = 4.0 * (1024 * 256 + TOKENS * 1280) - (l1.dense_bytes or 0) + (l1.value_bytes or 0) + (l1.metadata_bytes or 0)
    assert layers["l1"].path == "sparse"
    assert layers["l1"].flops == pytest.approx(TOKENS * 1024 * 256)
    assert layers["l1"].bytes == pytest.approx(sparse_bytes)
    measured = run.kernel.layers[1].samples_ms
    assert layers["l1"].measured_ms is not None and min(measured) <= layers["l1"].measured_ms <= max(measured)
    assert layers["l1"].roofline_fraction == pytest.approx(layers["l1"].attainable_ms / layers["l1"].measured_ms)


def test_layers_without_flops_are_skipped() -> None:
    run = make_run()
    run.graph.layers[0].flops = 0.0
    roof = calibrated_roofline(make_fingerprint())
    assert roof is not None
    assert [li.name for li in layer_intensities(run, roof)] == ["l1", "l2"]
