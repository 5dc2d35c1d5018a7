"""Words for the frozen environment's facts: how GPUs were probed and how the roofline was calibrated."""

from __future__ import annotations

from sparsedebug.records.fingerprint import Calibration, GpuProbe


def gpu_probe_words(probe: GpuProbe) -> str:
    """How ``freeze`` looked for GPUs; when it found none, what stopped it."""
    if probe.status == "not_on_path":
        return "absent: nvidia-smi not found on PATH"
    if probe.status == "failed":
        return f"absent: nvidia-smi failed ({probe.error or 'no message'})"
    if probe.status == "exited":
        return f"absent: nvidia-smi exited {probe.exit_code}" + (f": {probe.error}" if probe.error else "")
    return probe.command or "nvidia-smi"


def calibration_words(cal: Calibration) -> str:
    """What ``freeze --calibrate`` timed to measure the machine's roofline."""
    shape = "x".join(str(n) for n in cal.gemm_shape)
    return (
        f"median of {cal.rounds} interleaved rounds: numpy.matmul fp32 {shape} (2*m*n*k FLOPs) and numpy.copyto of "
        f"{cal.copy_bytes / 2 / (1 << 20):g} MiB fp32 (read+write bytes)"
    )
