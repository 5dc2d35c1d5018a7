"""The frozen environment (playbook step 1): workload and model digests, platform, BLAS, GPU, git."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record


class FileDigest(Record):
    """A file pinned by content: the workload or the model revision."""

    path: str
    sha256: str
    size_bytes: int


class PythonInfo(Record):
    version: str
    implementation: str


class PlatformInfo(Record):
    system: str
    release: str
    machine: str


class CpuInfo(Record):
    model: str | None
    logical_cores: int | None
    flags: list[str] = Field(description="Kernel-relevant ISA flags only (avx2, avx512*, fma, neon, sve, ...).")


class BlasLibrary(Record):
    """One BLAS/OpenMP library loaded by numpy, as threadpoolctl reports it."""

    user_api: str
    internal_api: str
    version: str | None
    num_threads: int
    filepath: str | None = None


class NumpyInfo(Record):
    version: str
    blas: list[BlasLibrary]


class TorchInfo(Record):
    version: str
    cuda: str | None
    cusparselt: str | None = Field(None, description="Version of the installed cuSPARSELt wheel (nvidia-cusparselt-cu*), when there is one.")


class GpuInfo(Record):
    name: str
    driver: str | None
    max_sm_clock_mhz: float | None
    max_mem_clock_mhz: float | None
    power_limit_w: float | None = None


class GitInfo(Record):
    revision: str
    dirty: bool


# How GPUs were probed: nvidia-smi listed them (possibly none), is not on PATH, could not be run, or exited non-zero.
GpuProbeStatus = Literal["listed", "not_on_path", "failed", "exited"]


class GpuProbe(Record):
    """How ``freeze`` looked for GPUs, and what stopped it when it found none."""

    status: GpuProbeStatus
    command: str | None = Field(None, description="The nvidia-smi command line run (None when nvidia-smi is not on PATH).")
    exit_code: int | None = Field(None, description="nvidia-smi's exit code when it exited non-zero.")
    error: str | None = Field(None, description="What the OS or nvidia-smi's stderr said (its first 200 characters).")


class Calibration(Record):
    """This machine's achieved roofline, measured by ``freeze --calibrate``: the median of ``rounds`` interleaved
    rounds of an fp32 numpy.matmul of ``gemm_shape`` (2*m*n*k FLOPs) and a numpy.copyto of ``copy_bytes`` / 2 bytes
    (``copy_bytes`` counts the read and the write)."""

    gemm_gflops: float
    copy_gbps: float
    gemm_shape: list[int]
    copy_bytes: int
    rounds: int
    gemm_samples_ms: list[float]
    copy_samples_ms: list[float]


class Fingerprint(Record):
    """Step 1 of the playbook: seed, model revision and execution environment."""

    schema_version: int = FACTS_SCHEMA_VERSION
    kind: Literal["fingerprint"] = "fingerprint"
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    created_at: str
    seed: int | None
    workload: FileDigest | None = None
    model: FileDigest | None = None
    python: PythonInfo
    platform: PlatformInfo
    cpu: CpuInfo
    numpy: NumpyInfo
    thread_env: dict[str, str | None]
    torch: TorchInfo | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu_probe: GpuProbe = Field(description="How GPUs were probed, or why none were recorded.")
    git: GitInfo | None = None
    calibration: Calibration | None = None
    utc_offset_h: float | None = Field(
        None, ge=-12.0, le=14.0, allow_inf_nan=False,
        description="The machine's local clock ahead of UTC, in hours, when it was frozen: what zone-less timestamps "
        "written on it (nvidia-smi's) are in, so a clock log from that machine aligns to its traces.",
    )


class Drift(Record):
    """One field that differs between the frozen and the current fingerprint."""

    field: str
    frozen: Any
    current: Any
    affects_results: bool
