"""Import Nsight Compute ``--csv`` output (details page): per-kernel Speed-of-Light figures.

The CSV has one row per (kernel launch, section, metric) with the columns ``ID``,
``Kernel Name``, ``Section Name``, ``Metric Name``, ``Metric Unit`` and
``Metric Value``; ncu prints banner lines (``==PROF==``, ``==WARNING==``) before the
header, which are skipped. Numbers carry thousands separators (``248,288``);
``n/a``/``no data`` mean absent.

The bound follows NVIDIA's Speed-of-Light rule: when both the SM (compute) and
the memory throughput are below 60% of peak the kernel is latency-bound;
otherwise the higher of the two wins when they differ by 10 points or more, and
the kernel is balanced when they are closer than that.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

from sparsedebug.core.bounds import MAX_TRACE_DURATION_US, check_bounded
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import read_text
from sparsedebug.core.kernel_names import classify_kernel
from sparsedebug.records.artifacts import Bound, NcuKernel, NcuReport

# Both SM and memory throughput below this: latency-bound.
LATENCY_THRESHOLD_PCT = 60.0
# SM and memory throughput closer than this: balanced.
BALANCE_MARGIN_PCT = 10.0

_TIME_UNITS_US = {
    "ns": 1e-3,
    "nsecond": 1e-3,
    "nsecond(s)": 1e-3,
    "us": 1.0,
    "usecond": 1.0,
    "usecond(s)": 1.0,
    "ms": 1e3,
    "msecond": 1e3,
    "msecond(s)": 1e3,
    "s": 1e6,
    "second": 1e6,
}
_REQUIRED = ("ID", "Kernel Name", "Metric Name", "Metric Value")
_SM_METRICS = ("Compute (SM) Throughput", "SM Throughput", "Compute (SM) [%]")
_MEM_METRICS = ("Memory Throughput",)


def sol_bound(sm_pct: float, memory_pct: float) -> Bound:
    """NVIDIA's Speed-of-Light rule for which unit bounds a kernel."""
    if sm_pct < LATENCY_THRESHOLD_PCT and memory_pct < LATENCY_THRESHOLD_PCT:
        return "latency"
    if abs(sm_pct - memory_pct) < BALANCE_MARGIN_PCT:
        return "balanced"
    return "compute" if sm_pct > memory_pct else "memory"


def _number(text: str) -> float | None:
    cleaned = text.strip().replace(",", "")
    if cleaned == "" or cleaned.lower() in ("n/a", "no data", "-"):  # no data; a "nan" is a number the bounds refuse
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def _header_index(lines: list[str]) -> int:
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith("==") or not stripped:
            continue
        if stripped.startswith('"ID"') or stripped.startswith("ID,"):
            return index
    raise UserError("no CSV header with an ID column (is this `ncu --csv` output?)")


def load_ncu(path: Path) -> NcuReport:
    """Parse an Nsight Compute ``--csv`` (details page) file into per-kernel figures."""
    text = read_text(path)
    lines = text.splitlines()
    try:
        start = _header_index(lines)
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])), restval="")
    fields = reader.fieldnames or []
    missing = [name for name in _REQUIRED if name not in fields]
    if missing:
        raise UserError(f"{path}: CSV header lacks column(s) {', '.join(missing)}"
                        + (" (a --page raw export? re-export with `ncu --csv --page details`)" if "Metric Name" in missing else ""))
    return NcuReport(file=str(path), **_collect(path, reader, start))


def _collect(path: Path, rows: Iterable[dict[str, str | None]], start: int) -> dict[str, object]:
    order: list[str] = []
    names: dict[str, str] = {}
    metrics: dict[str, dict[str, str]] = {}
    by_name: dict[str, dict[str, tuple[str, str]]] = {}
    sections: list[str] = []
    for line_no, row in enumerate(rows, start=start + 2):
        if None in row:
            raise UserError(f"{path}: line {line_no}: more fields than the header has")
        kid = row["ID"] or ""
        metric = row["Metric Name"] or ""
        if not kid.strip():
            raise UserError(f"{path}: line {line_no}: empty ID")
        if kid not in names:
            order.append(kid)
            names[kid] = row["Kernel Name"] or "<unnamed kernel>"
            metrics[kid] = {}
            by_name[kid] = {}
        section = row.get("Section Name") or ""
        if section and section not in sections:
            sections.append(section)
        if not metric:
            continue  # rule rows (SOLBottleneck, ...) carry no metric
        unit = row.get("Metric Unit") or ""
        value = row["Metric Value"] or ""
        metrics[kid][f"{section}/{metric}" + (f" [{unit}]" if unit else "")] = value
        by_name[kid].setdefault(metric, (unit, value))
    if not order:
        raise UserError(f"{path}: no metric rows after the CSV header")
    kernels = [_kernel(path, kid, names[kid], by_name[kid], metrics[kid]) for kid in order]
    return {"kernels": kernels, "sections": sections}


# What a metric this importer reads can be (``core.bounds.check_bounded``): a throughput share (Nsight's can pass 100
# a little), a clock below 100 GHz, a count, a kernel shorter than the longest profiled event.
_BOUNDS: dict[str, tuple[float, float, str]] = {
    "%": (0.0, 1000.0, "percent"), "hz": (0.0, 1e11, "Hz"), "count": (0.0, 1e18, "counts"), "Duration": (0.0, MAX_TRACE_DURATION_US, "us"),
}


def _kernel(path: Path, kid: str, name: str, by_name: dict[str, tuple[str, str]], metrics: dict[str, str]) -> NcuKernel:
    def bounded(metric: str, value: float | None, kind: str) -> float | None:
        if value is None:
            return None
        low, high, unit = _BOUNDS[kind]
        return check_bounded(value, f"{path}: kernel {kid} ({name[:60]}): {metric}", low, high, unit)

    def pick(candidates: Iterable[str], want_unit: str | None = None) -> float | None:
        for metric in candidates:
            if metric in by_name:
                unit, value = by_name[metric]
                if want_unit is None or unit.strip() == want_unit:
                    return bounded(metric, _number(value), want_unit if want_unit in _BOUNDS else "count")
        return None

    duration_us: float | None = None
    if "Duration" in by_name:
        unit, value = by_name["Duration"]
        scale = _TIME_UNITS_US.get(unit.strip().lower())
        number = _number(value)
        if number is not None:
            if scale is None:
                raise UserError(f"{path}: kernel {kid} ({name[:60]}): Duration has unknown unit {unit!r}")
            duration_us = bounded("Duration", number * scale, "Duration")
    sm = pick(_SM_METRICS)
    # 'Memory Throughput' appears in SpeedOfLight as % and in MemoryWorkloadAnalysis as byte/s
    mem = pick(_MEM_METRICS, "%")
    regs = pick(("Registers Per Thread",))
    spill = pick(("Local Memory Spilling Requests",))
    return NcuKernel(
        id=kid,
        name=name,
        kernel_class=classify_kernel(name),
        duration_us=duration_us,
        sm_throughput_pct=sm,
        memory_throughput_pct=mem,
        dram_throughput_pct=pick(("DRAM Throughput",), "%"),
        sm_frequency_hz=pick(("SM Frequency",), "hz"),
        bound=sol_bound(sm, mem) if sm is not None and mem is not None else None,
        registers_per_thread=int(regs) if regs is not None else None,
        local_spill_requests=spill,
        spills=None if spill is None else spill > 0,
        metrics=metrics,
    )
