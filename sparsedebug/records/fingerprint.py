"""The frozen environment (playbook step 1): workload and model digests, platform, BLAS, GPU, git."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import SCHEMA_VERSION, Record


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


class Calibration(Record):
    """This machine's achieved roofline, measured by ``freeze --calibrate``."""

    gemm_gflops: float
    copy_gbps: float
    method: str
    gemm_shape: list[int]
    copy_bytes: int
    rounds: int
    gemm_samples_ms: list[float]
    copy_samples_ms: list[float]


class Fingerprint(Record):
    """Step 1 of the playbook: seed, model revision and execution environment."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["fingerprint"] = "fingerprint"
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
    gpu_probe: str = Field(description="How GPUs were probed, or why none were recorded.")
    git: GitInfo | None = None
    calibration: Calibration | None = None
    utc_offset_h: float | None = Field(
        None, ge=-12.0, le=14.0, allow_inf_nan=False,
        description="The machine's local clock ahead of UTC, in hours, when it was frozen: what zone-less timestamps "
        "written on it (nvidia-smi's) are in, so a clock log from that machine aligns to its traces.",
    )
