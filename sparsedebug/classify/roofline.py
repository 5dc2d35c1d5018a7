"""The machine roofline and each layer's arithmetic intensity.

For a replay the roofline is the one this machine achieved, measured by
``sparsedebug freeze --calibrate`` (fp32 GEMM GFLOP/s and copy GB/s). For a run
imported from a GPU it comes from the vendor's published peak figures, looked up
by GPU name in ``core.gpus.GPU_PEAKS``. A layer whose FLOPs per byte sit below the ridge
point (peak FLOP/s divided by bandwidth) is memory-bound on that machine.
"""

from __future__ import annotations

import math
from typing import Literal

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.core.gpus import GPU_PEAKS as GPU_PEAKS
from sparsedebug.core.gpus import GpuPeak as GpuPeak
from sparsedebug.core.gpus import find_gpu_peak as find_gpu_peak
from sparsedebug.core.stats import median
from sparsedebug.kernels.masks import intent_pattern
from sparsedebug.records.base import Record
from sparsedebug.records.classification import LayerIntensity, Roofline
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.run import GraphLayer, KernelPath, LowerLayer, RunRecord
from sparsedebug.sources.registry import replayed


def is_fp32(dtype: str) -> bool:
    """Whether ``dtype`` names a 32-bit (or wider) float, which runs off the 16-bit tensor path."""
    return canonical_dtype(dtype) in ("fp32", "tf32", "fp64")


def peak_roofline(gpu_name: str, dtype: str = "fp16") -> Roofline | None:
    """The roofline of a known GPU for ``dtype`` from the peak table, or None when unknown."""
    peak = find_gpu_peak(gpu_name)
    if peak is None:
        return None
    tflops = peak.fp32_tflops if is_fp32(dtype) else peak.tensor_16bit_tflops
    return Roofline(
        device=peak.name,
        source="peak_table",
        reference=peak.reference,
        named_as=gpu_name,
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
        reference="freeze --calibrate",
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
    in the run). Imported GPU runs use the peak table, by the GPU name given, the
    GPUs of either fingerprint, or the device the trace importer recorded in the
    lower stage's backend (``cuda:NAME``). None when neither is available.
    """
    fingerprints = [fp for fp in (fingerprint, run.fingerprint) if fp is not None]
    if replayed(run):
        for fp in fingerprints:
            calibrated = calibrated_roofline(fp)
            if calibrated is not None:
                return calibrated
        return None
    names = [gpu] if gpu else []
    names += [g.name for fp in fingerprints for g in fp.gpus]
    if run.lower.backend.startswith("cuda:"):
        names.append(run.lower.backend.removeprefix("cuda:"))
    for name in names:
        roof = peak_roofline(name, run_dtype(run))
        if roof is not None:
            return roof
    return None


def sparse_density(intended: str) -> float | None:
    """N/M of an ``N:M`` or ``V:N:M`` pattern; None for ``dense`` or anything unreadable."""
    pattern = intent_pattern(intended)
    return None if pattern is None else pattern.density


# Bytes per gathered activation element: the built-in kernels compute in fp32 whatever the input precision.
GATHER_ITEMSIZE = 4


def gather_bytes(layer: GraphLayer, lower: LowerLayer | None, tokens: int | None) -> float | None:
    """Activation bytes the built-in blocked V:N:M kernel gathers per call, or None when it does not run it.

    The kernel gathers the ``K*N/M`` chosen activation rows once per block of
    ``V`` weight rows: ``ceil(out / V) * K*N/M * tokens * 4`` bytes.
    """
    if lower is None or lower.path != KernelPath.SPARSE or not any("VNMWeight" in k for k in lower.kernels):
        return None
    pattern = intent_pattern(layer.intended)
    if pattern is None or pattern.block is None or tokens is None:
        return None
    if not layer.weight_shape or len(layer.weight_shape) != 2:
        return None
    out, k = layer.weight_shape
    return float(math.ceil(out / pattern.block) * (k * pattern.density) * tokens * GATHER_ITEMSIZE)


class LayerWork(Record):
    """What one layer's chosen path executes and moves per call."""

    name: str
    path: Literal["dense", "sparse"]
    flops: float
    bytes: float


def layer_work(run: RunRecord) -> list[LayerWork]:
    """FLOPs and bytes per call of each layer that declares them, for the path it took.

    Dense layers use the graph's FLOPs and bytes. A layer that took the sparse
    path does ``N/M`` of the FLOPs and moves its compressed weights (values plus
    metadata, where the lower stage recorded them) instead of the dense ones,
    plus the activation rows the built-in blocked kernel gathers per block.
    """
    lower = {layer.name: layer for layer in run.lower.layers}
    out: list[LayerWork] = []
    for layer in run.graph.layers:
        if layer.flops <= 0 or layer.bytes <= 0:
            continue
        flops, nbytes = layer.flops, layer.bytes
        path: Literal["dense", "sparse"] = "dense"
        lo = lower.get(layer.name)
        density = sparse_density(layer.intended)
        if lo is not None and lo.path == KernelPath.SPARSE and density is not None:
            path = "sparse"
            flops = layer.flops * density
            if lo.dense_bytes and lo.value_bytes is not None:
                nbytes = max(layer.bytes - lo.dense_bytes + lo.value_bytes + (lo.metadata_bytes or 0), 1.0)
            nbytes += gather_bytes(layer, lo, run.graph.tokens) or 0.0
        out.append(LayerWork(name=layer.name, path=path, flops=flops, bytes=nbytes))
    return out


def layer_intensities(run: RunRecord, roofline: Roofline) -> list[LayerIntensity]:
    """Each layer with FLOPs and bytes declared (see ``layer_work``), placed on ``roofline``.

    Attainable time is ``max(flops / peak, bytes / bandwidth)``; where the kernel
    stage timed the layer, ``roofline_fraction`` is attainable over measured p50.
    """
    kernel_ms = {layer.name: median(layer.samples_ms) for layer in run.kernel.layers if layer.samples_ms}
    out: list[LayerIntensity] = []
    for work in layer_work(run):
        intensity = work.flops / work.bytes
        attainable_ms = max(work.flops / (roofline.peak_gflops * 1e9), work.bytes / (roofline.bandwidth_gbps * 1e9)) * 1e3
        measured = kernel_ms.get(work.name)
        out.append(
            LayerIntensity(
                name=work.name,
                path=work.path,
                flops=work.flops,
                bytes=work.bytes,
                intensity=intensity,
                bound="memory" if intensity < roofline.ridge else "compute",
                attainable_ms=attainable_ms,
                measured_ms=measured,
                roofline_fraction=(attainable_ms / measured) if measured else None,
            )
        )
    return out
