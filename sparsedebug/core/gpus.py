"""Published peak figures of the GPUs the tool knows, looked up by device name.

The roofline of an imported GPU run (``classify.roofline``) and the target cost model's
device (``sources.target``) both read this one table.
"""

from __future__ import annotations

from pydantic import ConfigDict

from sparsedebug.records.base import Record


class GpuPeak(Record):
    """Published peak figures of one GPU model (dense, no sparsity factor)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    match: tuple[str, ...]
    tensor_16bit_tflops: float
    fp32_tflops: float
    bandwidth_tbps: float
    reference: str


# Known GPUs, most specific match first (``H100 PCIe`` before ``H100``).
GPU_PEAKS: tuple[GpuPeak, ...] = (
    GpuPeak(
        name="NVIDIA H200 SXM",
        match=("h200",),
        tensor_16bit_tflops=989.0,
        fp32_tflops=67.0,
        bandwidth_tbps=4.8,
        reference="NVIDIA H200 datasheet: FP16/BF16 tensor 1,979 TFLOPS with 2:4 sparsity (989 dense), FP32 67 TFLOPS, HBM3e 4.8 TB/s",
    ),
    GpuPeak(
        name="NVIDIA H100 PCIe",
        match=("h100 pcie", "h100-pcie"),
        tensor_16bit_tflops=756.0,
        fp32_tflops=51.0,
        bandwidth_tbps=2.0,
        reference="NVIDIA H100 datasheet (PCIe): FP16/BF16 tensor 1,513 TFLOPS with sparsity (756 dense), FP32 51 TFLOPS, HBM2e 2.0 TB/s",
    ),
    GpuPeak(
        name="NVIDIA H100 SXM",
        match=("h100",),
        tensor_16bit_tflops=989.0,
        fp32_tflops=67.0,
        bandwidth_tbps=3.35,
        reference="NVIDIA H100 datasheet (SXM): FP16/BF16 tensor 1,979 TFLOPS with sparsity (989 dense), FP32 67 TFLOPS, HBM3 3.35 TB/s",
    ),
)

def find_gpu_peak(name: str) -> GpuPeak | None:
    """The peak-table entry whose match strings occur in ``name`` (case-insensitive), if any."""
    lowered = name.lower()
    for peak in GPU_PEAKS:
        if any(token in lowered for token in peak.match):
            return peak
    return None
