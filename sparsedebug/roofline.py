"""The machine roofline and each layer's arithmetic intensity.

For a replay the roofline is the one this machine achieved, measured by
``sparsedebug freeze --calibrate`` (fp32 GEMM GFLOP/s and copy GB/s). For a run
imported from a GPU it comes from the vendor's published peak figures, looked up
by GPU name in ``GPU_PEAKS``. A layer whose FLOPs per byte sit below the ridge
point (peak FLOP/s divided by bandwidth) is memory-bound on that machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from sparsedebug.records import Fingerprint, RunRecord
from sparsedebug.stats import median


class GpuPeak(BaseModel):
    """Published peak figures of one GPU model (dense, no sparsity factor)."""

    model_config = ConfigDict(frozen=True)

    name: str
    match: tuple[str, ...]
    tensor_16bit_tflops: float
    fp32_tflops: float
    bandwidth_tbps: float
    reference: str


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
"""Known GPUs, most specific match first (``H100 PCIe`` before ``H100``)."""

_FP32_NAMES = {"fp32", "float32", "float", "f32", "tf32", "fp64", "float64", "double"}


class Roofline(BaseModel):
    """A machine's compute and bandwidth ceilings, and where they came from."""

    device: str
    source: Literal["calibration", "peak_table"]
    detail: str
    peak_gflops: float
    bandwidth_gbps: float
    dtype: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte at which the machine turns from memory- to compute-bound."""
        return self.peak_gflops / self.bandwidth_gbps


class LayerIntensity(BaseModel):
    """One layer placed on the roofline."""

    name: str
    flops: float
    bytes: float
    intensity: float
    bound: Literal["memory", "compute"]
    attainable_ms: float
    measured_ms: float | None = None
    roofline_fraction: float | None = None


def find_gpu_peak(name: str) -> GpuPeak | None:
    """The peak-table entry whose match strings occur in ``name`` (case-insensitive), if any."""
    lowered = name.lower()
    for peak in GPU_PEAKS:
        if any(token in lowered for token in peak.match):
            return peak
    return None


def is_fp32(dtype: str) -> bool:
    """Whether ``dtype`` names a 32-bit (or wider) float, which runs off the 16-bit tensor path."""
    return dtype.lower() in _FP32_NAMES


def peak_roofline(gpu_name: str, dtype: str = "fp16") -> Roofline | None:
    """The roofline of a known GPU for ``dtype`` from the peak table, or None when unknown."""
    peak = find_gpu_peak(gpu_name)
    if peak is None:
        return None
    tflops = peak.fp32_tflops if is_fp32(dtype) else peak.tensor_16bit_tflops
    return Roofline(
        device=peak.name,
        source="peak_table",
        detail=f"{peak.reference} (GPU named '{gpu_name}')",
        peak_gflops=tflops * 1e3,
        bandwidth_gbps=peak.bandwidth_tbps * 1e3,
        dtype=dtype,
    )


def calibrated_roofline(fingerprint: Fingerprint) -> Roofline | None:
    """The roofline ``freeze --calibrate`` measured, or None when the fingerprint has no calibration."""
    cal = fingerprint.calibration
    if cal is None:
        return None
    return Roofline(
        device=fingerprint.cpu.model or fingerprint.platform.machine,
        source="calibration",
        detail=f"freeze --calibrate: {cal.method}",
        peak_gflops=cal.gemm_gflops,
        bandwidth_gbps=cal.copy_gbps,
        dtype="fp32",
    )


def run_dtype(run: RunRecord) -> str:
    """The dtype of the run's linear layers (the first one declared), or fp32 when none declare one."""
    for layer in run.graph.layers:
        if layer.op == "linear" and layer.dtype:
            return layer.dtype
    return "fp32"


def machine_roofline(
    run: RunRecord, fingerprint: Fingerprint | None = None, gpu: str | None = None
) -> Roofline | None:
    """The roofline that applies to ``run``.

    Replays use the calibration of ``fingerprint`` (or of the fingerprint embedded
    in the run). Imported GPU runs use the peak table, by the GPU name given, or
    the first GPU of either fingerprint. None when neither is available.
    """
    fingerprints = [fp for fp in (fingerprint, run.fingerprint) if fp is not None]
    if run.source.kind == "replay":
        for fp in fingerprints:
            calibrated = calibrated_roofline(fp)
            if calibrated is not None:
                return calibrated
        return None
    names = [gpu] if gpu else []
    names += [g.name for fp in fingerprints for g in fp.gpus]
    for name in names:
        roof = peak_roofline(name, run_dtype(run))
        if roof is not None:
            return roof
    return None


def _layer_ms(samples: Sequence[float]) -> float | None:
    return median(samples) if samples else None


def layer_intensities(run: RunRecord, roofline: Roofline) -> list[LayerIntensity]:
    """Each layer with FLOPs and bytes declared, placed on ``roofline``.

    Intensity is the graph's dense-equivalent FLOPs per byte; attainable time is
    ``max(flops / peak, bytes / bandwidth)``; where the kernel stage timed the
    layer, ``roofline_fraction`` is attainable over measured p50.
    """
    kernel_ms = {layer.name: _layer_ms(layer.samples_ms) for layer in run.kernel.layers}
    out: list[LayerIntensity] = []
    for layer in run.graph.layers:
        if layer.flops <= 0 or layer.bytes <= 0:
            continue
        intensity = layer.flops / layer.bytes
        attainable_ms = max(layer.flops / (roofline.peak_gflops * 1e9), layer.bytes / (roofline.bandwidth_gbps * 1e9)) * 1e3
        measured = kernel_ms.get(layer.name)
        out.append(
            LayerIntensity(
                name=layer.name,
                flops=layer.flops,
                bytes=layer.bytes,
                intensity=intensity,
                bound="memory" if intensity < roofline.ridge else "compute",
                attainable_ms=attainable_ms,
                measured_ms=measured,
                roofline_fraction=(attainable_ms / measured) if measured else None,
            )
        )
    return out
