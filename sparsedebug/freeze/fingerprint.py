"""Step 1 of the playbook: freeze the seed, the model revision and the environment, and diff it later.

``collect`` probes this machine; ``diff`` compares two fingerprints field by field
and marks which drifted fields can change results (those fail ``freeze --check``).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.core.stats import median
from sparsedebug.records.fingerprint import (
    BlasLibrary,
    Calibration,
    CpuInfo,
    Drift,
    FileDigest,
    Fingerprint,
    GitInfo,
    GpuInfo,
    GpuProbe,
    NumpyInfo,
    PlatformInfo,
    PythonInfo,
    TorchInfo,
)

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE")

_KERNEL_FLAG = re.compile(r"^(avx2|avx512\w*|fma|f16c|amx\w*|avx_vnni|neon|asimd\w*|sve\w*|bf16|fphp)$")

# Dotted field prefixes whose drift can change numerics or timings: they fail the check.
RESULT_CRITICAL_PREFIXES = (
    "seed",
    "workload.sha256",
    "model.sha256",
    "numpy.version",
    "numpy.blas",
    "thread_env",
    "cpu.model",
    "gpus",
    "torch",
)


def _cpu_info() -> CpuInfo:
    model: str | None = None
    flags: set[str] = set()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and model is None:
            model = value.strip()
        elif key in ("flags", "features"):
            flags.update(f for f in value.split() if _KERNEL_FLAG.match(f))
    if model is None:
        model = platform.processor() or None
    return CpuInfo(model=model, logical_cores=os.cpu_count(), flags=sorted(flags))


def _blas_libraries() -> list[BlasLibrary]:
    from threadpoolctl import threadpool_info

    libs = []
    for info in threadpool_info():
        libs.append(
            BlasLibrary(
                user_api=str(info.get("user_api")),
                internal_api=str(info.get("internal_api")),
                version=info.get("version"),
                num_threads=int(info.get("num_threads", 0)),
                filepath=info.get("filepath"),
            )
        )
    return libs


def _torch_info() -> TorchInfo | None:
    """torch and CUDA versions without importing torch (reads torch/version.py)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    cuda: str | None = None
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin is not None:
        version_file = Path(spec.origin).parent / "version.py"
        try:
            match = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", version_file.read_text(), re.MULTILINE)
        except OSError:
            match = None
        cuda = match.group(1) if match else None
    return TorchInfo(version=version, cuda=cuda, cusparselt=_cusparselt_version())


def _cusparselt_version() -> str | None:
    """The installed cuSPARSELt wheel's version (torch's CUDA wheels depend on ``nvidia-cusparselt-cu12``/``-cu13``)."""
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("nvidia-cusparselt"):
            return str(dist.version)
    return None


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _gpus() -> tuple[list[GpuInfo], GpuProbe]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return [], GpuProbe(status="not_on_path")
    query = "name,driver_version,clocks.max.sm,clocks.max.mem,power.limit"
    args = [f"--query-gpu={query}", "--format=csv,noheader,nounits"]
    command = " ".join(["nvidia-smi", *args])
    try:
        proc = subprocess.run(
            [exe, *args],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], GpuProbe(status="failed", command=command, error=str(exc)[:200])
    if proc.returncode != 0:
        return [], GpuProbe(status="exited", command=command, exit_code=proc.returncode, error=proc.stderr.strip()[:200] or None)
    gpus = []
    for line in proc.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        gpus.append(
            GpuInfo(
                name=parts[0],
                driver=parts[1] or None,
                max_sm_clock_mhz=_float_or_none(parts[2]),
                max_mem_clock_mhz=_float_or_none(parts[3]),
                power_limit_w=_float_or_none(parts[4]),
            )
        )
    return gpus, GpuProbe(status="listed", command=command)


def _git_info(cwd: Path) -> GitInfo | None:
    exe = shutil.which("git")
    if exe is None:
        return None
    try:
        rev = subprocess.run([exe, "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=False)
        if rev.returncode != 0:
            return None
        status = subprocess.run(
            [exe, "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return GitInfo(revision=rev.stdout.strip(), dirty=bool(status.stdout.strip()))


def calibrate(rounds: int = 7, gemm_n: int = 1024, copy_mib: int = 64) -> Calibration:
    """Measure achieved fp32 GEMM GFLOP/s and memory copy GB/s on this machine (medians)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((gemm_n, gemm_n), dtype=np.float32)
    b = rng.standard_normal((gemm_n, gemm_n), dtype=np.float32)
    out = np.empty((gemm_n, gemm_n), dtype=np.float32)
    n_floats = copy_mib * (1 << 20) // 4
    src = rng.standard_normal(n_floats, dtype=np.float32)
    dst = np.empty_like(src)
    np.matmul(a, b, out=out)
    np.copyto(dst, src)
    gemm_ms: list[float] = []
    copy_ms: list[float] = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        t1 = time.perf_counter()
        np.copyto(dst, src)
        t2 = time.perf_counter()
        gemm_ms.append((t1 - t0) * 1e3)
        copy_ms.append((t2 - t1) * 1e3)
    gemm_med = median(gemm_ms)
    copy_med = median(copy_ms)
    flops = 2.0 * gemm_n**3
    copy_bytes = 2 * src.nbytes  # read + write
    return Calibration(
        gemm_gflops=flops / (gemm_med * 1e-3) / 1e9,
        copy_gbps=copy_bytes / (copy_med * 1e-3) / 1e9,
        gemm_shape=[gemm_n, gemm_n, gemm_n],
        copy_bytes=copy_bytes,
        rounds=rounds,
        gemm_samples_ms=gemm_ms,
        copy_samples_ms=copy_ms,
    )


def collect(
    seed: int | None = None,
    workload: Path | FileDigest | None = None,
    model: Path | None = None,
    calibrate_machine: bool = False,
    cwd: Path | None = None,
) -> Fingerprint:
    """Probe this machine and pin the given files by sha256 (``workload`` may be given as the digest of the file
    already read)."""
    gpus, gpu_probe = _gpus()
    return Fingerprint(
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        seed=seed,
        workload=workload if isinstance(workload, FileDigest) or workload is None else file_digest(workload),
        model=file_digest(model) if model else None,
        python=PythonInfo(version=platform.python_version(), implementation=platform.python_implementation()),
        platform=PlatformInfo(system=platform.system(), release=platform.release(), machine=platform.machine()),
        cpu=_cpu_info(),
        numpy=NumpyInfo(version=np.__version__, blas=_blas_libraries()),
        thread_env={name: os.environ.get(name) for name in THREAD_ENV_VARS},
        torch=_torch_info(),
        gpus=gpus,
        gpu_probe=gpu_probe,
        git=_git_info(cwd or Path.cwd()),
        calibration=calibrate() if calibrate_machine else None,
        utc_offset_h=_utc_offset_h(),
    )


def _utc_offset_h() -> float | None:
    """This machine's local clock ahead of UTC now, in hours (None when the platform does not say)."""
    offset = _dt.datetime.now().astimezone().utcoffset()
    return offset.total_seconds() / 3600.0 if offset is not None else None


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            _flatten(sub, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, sub in enumerate(value):
            _flatten(sub, f"{prefix}.{i}", out)
    else:
        out[prefix] = value


def _matches(field: str, prefixes: tuple[str, ...]) -> bool:
    return any(field == p or field.startswith(p + ".") for p in prefixes)


def diff(frozen: Fingerprint, current: Fingerprint) -> list[Drift]:
    """Fields that differ, each marked whether its drift can change results.

    Paths of files, the creation time, the calibration figures and the git revision
    are reported only when they matter: creation time and calibration never do;
    the git revision drifts as information (it does not fail the check).
    """
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    _flatten(frozen.model_dump(mode="json"), "", old)
    _flatten(current.model_dump(mode="json"), "", new)
    drifts = []
    for field in sorted(set(old) | set(new)):
        if _matches(field, ("created_at", "calibration", "workload.path", "model.path")):
            continue
        if field.endswith(".filepath"):
            continue
        before, after = old.get(field), new.get(field)
        if before != after:
            drifts.append(
                Drift(
                    field=field,
                    frozen=before,
                    current=after,
                    affects_results=_matches(field, RESULT_CRITICAL_PREFIXES),
                )
            )
    return drifts


def relative_to(record: Fingerprint, directory: Path) -> Fingerprint:
    """``record`` with its workload and model paths relative to ``directory`` (where the fingerprint is written).

    ``check`` resolves them from the fingerprint file's folder, so the pair can be
    checked from any working directory and moved together.
    """
    update = {}
    for field in ("workload", "model"):
        pinned = getattr(record, field)
        if pinned is not None:
            rel = os.path.relpath(Path(pinned.path).resolve(), directory.resolve())
            update[field] = pinned.model_copy(update={"path": rel})
    return record.model_copy(update=update) if update else record


def pinned_path(path: str, base_dir: Path | None) -> Path:
    """A pinned file's path as stored, resolved from the fingerprint's folder when it is relative."""
    stored = Path(path)
    return stored if stored.is_absolute() or base_dir is None else base_dir / stored


def check(
    frozen: Fingerprint,
    seed: int | None = None,
    workload: Path | None = None,
    model: Path | None = None,
    base_dir: Path | None = None,
) -> tuple[Fingerprint, list[Drift]]:
    """Re-probe the environment and diff it against ``frozen``.

    The seed and files default to the frozen ones (relative paths resolved from
    ``base_dir``, the fingerprint file's folder); pass them to check a run that is
    about to use others.
    """
    workload_path = workload or (pinned_path(frozen.workload.path, base_dir) if frozen.workload else None)
    model_path = model or (pinned_path(frozen.model.path, base_dir) if frozen.model else None)
    for what, path in (("workload", workload_path), ("model", model_path)):
        if path is not None and not path.is_file() and (workload if what == "workload" else model) is None:
            where = f" (resolved from the fingerprint's folder {base_dir})" if base_dir is not None else ""
            raise UserError(f"{what}.path: {path}{where}: pinned file not found; pass --{what} to check another")
    current = collect(seed=frozen.seed if seed is None else seed, workload=workload_path, model=model_path)
    return current, diff(frozen, current)
