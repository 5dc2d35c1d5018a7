"""Render fingerprints and their drift as rich tables."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text

from sparsedebug.records.fingerprint import Drift, Fingerprint
from sparsedebug.render.words.fingerprint import calibration_words, gpu_probe_words


def _short(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def fingerprint_table(record: Fingerprint) -> Table:
    """The facts a fingerprint pins, one row each."""
    table = Table(title="environment fingerprint", show_header=True)
    table.add_column("field")
    table.add_column("value", overflow="fold")
    table.add_row("seed", _short(record.seed))
    for label, digest in (("workload", record.workload), ("model", record.model)):
        if digest is not None:
            table.add_row(label, f"{digest.path} sha256:{digest.sha256[:16]}…")
    table.add_row("python", f"{record.python.implementation} {record.python.version}")
    table.add_row("platform", f"{record.platform.system} {record.platform.release} {record.platform.machine}")
    table.add_row("cpu", f"{record.cpu.model or '-'} ({record.cpu.logical_cores} logical cores)")
    table.add_row("cpu flags", " ".join(record.cpu.flags) or "-")
    table.add_row("numpy", record.numpy.version)
    for lib in record.numpy.blas:
        table.add_row(lib.user_api, f"{lib.internal_api} {lib.version or '?'} threads={lib.num_threads}")
    table.add_row("thread env", " ".join(f"{k}={v}" for k, v in record.thread_env.items() if v is not None) or "(none set)")
    table.add_row("torch", f"{record.torch.version} cuda={record.torch.cuda}" if record.torch else "not installed")
    if record.gpus:
        for i, gpu in enumerate(record.gpus):
            table.add_row(
                f"gpu {i}",
                f"{gpu.name} driver {gpu.driver} max sm {gpu.max_sm_clock_mhz} MHz mem {gpu.max_mem_clock_mhz} MHz",
            )
    else:
        table.add_row("gpu", gpu_probe_words(record.gpu_probe))
    table.add_row("git", f"{record.git.revision[:12]}{' (dirty)' if record.git.dirty else ''}" if record.git else "-")
    if record.calibration is not None:
        cal = record.calibration
        table.add_row("gemm", f"{cal.gemm_gflops:.1f} GFLOP/s")
        table.add_row("copy", f"{cal.copy_gbps:.1f} GB/s")
        table.add_row("method", calibration_words(cal))
    return table


def drift_table(drifts: list[Drift]) -> Table:
    """Drifted fields, result-affecting ones marked."""
    table = Table(title="fingerprint drift")
    table.add_column("field")
    table.add_column("frozen", overflow="fold")
    table.add_column("current", overflow="fold")
    table.add_column("affects results")
    for drift in drifts:
        table.add_row(
            drift.field,
            _short(drift.frozen),
            _short(drift.current),
            Text("yes", style="red") if drift.affects_results else "no",
        )
    return table
