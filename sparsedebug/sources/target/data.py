"""The measured data behind a target cost model, read from the shipped artifacts.

A target source (``fixtures/targets/<name>.yaml``, shipped in the wheel as
``sparsedebug/_data/targets``) names the measured files of one GPU and what each
holds; :func:`load_calibration` reads them into plain observations, each with a
label naming its file and row or trace layer so every projection can cite it:

``gemm`` (``results.json``)
    Per-call p50 of dense and 2:4 sparse ``F.linear`` per weight shape, token
    count and dtype, timed call after call with CUDA events: each figure is
    max(host time, GPU time) of one call (the host prepares a call while the GPU
    runs the previous one). Rows with an ``error`` (CUTLASS on this GPU) are kept
    as the reason that backend has no sparse path.
``ncu``
    GPU-only duration of one dense and one sparse GEMM of a named shape.
``traces``
    PyTorch profiler traces of a model that the paired workload describes. From
    an eager trace: per linear layer its GEMM kernel time per call (GPU only);
    per non-linear op kind the GPU time per forward (for effective rates); per
    op kind the host time of one call (annotation CPU durations, aten op CPU
    durations; the profiler inflates these, so they bound the host cost from
    above); the GPU idle between dependent kernels per layer. From a CUDA-graph
    trace: the idle per layer inside the graph and the host cost of one
    ``cudaGraphLaunch``.
``forwards``
    Whole-forward latencies, for validation only (never fitted).

The sparse kernel's tile comes from the sparse GEMM kernel names in the traces
(``..._tilesize128x256x64_...``), the SM count from ``results.json`` ``env``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from sparsedebug.core.dtypes import torch_dtype_name
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, validate
from sparsedebug.core.resources import data_file
from sparsedebug.core.stats import median
from sparsedebug.records.base import Record
from sparsedebug.records.basis import per_iteration
from sparsedebug.records.run import KernelClass, OpKind, RunRecord
from sparsedebug.records.target import Launch
from sparsedebug.sources.target.sparse import Tile
from sparsedebug.sources.workload.inventory import inventory
from sparsedebug.sources.workload.load import load_workload

# Non-linear op families with one effective rate each (activation and elementwise ops are ``pointwise``).
Kind = Literal["norm", "attention", "pointwise"]

_GEMM = (KernelClass.DENSE_TC_GEMM.value, KernelClass.SPARSE_GEMM.value, KernelClass.FP32_GEMM.value)
# A cuSPARSELt 2:4 GEMM kernel name and its tile (weight rows x tokens x reduction).
_SPARSE_TILE = re.compile(r"xmma_sparse_gemm.*?tilesize(\d+)x(\d+)x(\d+)")
_HOST_OPS: dict[str, tuple[str, ...]] = {
    "activation": ("aten::silu", "aten::gelu", "aten::relu"),
    "elementwise": ("aten::add", "aten::mul"),
}


class NcuSpec(Record):
    """The shape an Nsight Compute file profiled (the CSV itself does not say)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file: str
    out: int
    in_: int = Field(alias="in")
    tokens: int
    dtype: str


class TraceSpec(Record):
    """A profiler trace and the workload that describes the traced model."""

    file: str
    launch: Launch
    workload: str


class ForwardSpec(Record):
    """A measured whole forward: from ``results.json`` ``model`` (``results_key``) or quoted with its source."""

    workload: str
    launch: Launch
    results_key: str | None = None
    p50_ms: float | None = None
    source: str | None = None


class PowerSpec(Record):
    """An nvidia-smi log taken on the target under load: the board power an energy estimate multiplies by."""

    model_config = ConfigDict(extra="forbid")

    file: str
    busy_utilization_pct: float = Field(description="Samples at or above this utilization.gpu count as under load.")
    limit_w: float | None = Field(None, description="The enforced power limit when the log does not record it.")
    limit_source: str | None = Field(None, description="Where limit_w is quoted from.")


class TargetSource(Record):
    """``fixtures/targets/<name>.yaml``: which measured files describe one GPU."""

    schema_version: int = 1
    kind: Literal["target_source"] = "target_source"
    name: str
    device: str
    software: str | None = None
    description: str | None = None
    data: Literal["h200"]
    profiles: dict[str, str]
    gemm: str
    ncu: NcuSpec | None = None
    traces: list[TraceSpec] = []
    forwards: list[ForwardSpec] = []
    power: PowerSpec | None = None


@dataclass(frozen=True)
class GemmRow:
    """One ``results.json`` gemm row: per-call p50 (ms) of dense and sparse ``F.linear``."""

    index: int
    out: int
    k: int
    tokens: int
    dtype: str
    backend: str
    dense_ms: float | None
    sparse_ms: float | None
    convert_ms: float | None
    error: str | None

    def label(self, path: str) -> str:
        """How a projection cites this row."""
        value = self.dense_ms if path == "dense" else self.sparse_ms
        return f"results.json gemm[{self.index}] {self.out}x{self.k} T={self.tokens} {self.dtype} {self.backend} {path} p50 {value:.4f} ms"


@dataclass(frozen=True)
class KernelPoint:
    """A GPU-only kernel time of one linear layer (trace or ncu)."""

    out: int
    k: int
    tokens: int
    dtype: str
    path: Literal["dense", "sparse"]
    ms: float
    label: str


@dataclass(frozen=True)
class Rate:
    """An effective rate of one op family on the target: units (bytes or FLOPs) per ms of GPU time."""

    unit: Literal["bytes", "flops"]
    per_ms: float
    label: str


@dataclass(frozen=True)
class Cost:
    """A measured per-call or per-layer time (ms) and where it came from."""

    ms: float
    label: str


@dataclass
class Calibration:
    """Everything a target cost model is built from, for one GPU."""

    source: TargetSource
    gemm: list[GemmRow]
    kernels: list[KernelPoint] = field(default_factory=list)
    rates: dict[Kind, Rate] = field(default_factory=dict)
    host: dict[str, Cost] = field(default_factory=dict)
    gaps: dict[str, Cost] = field(default_factory=dict)
    # Eager host time per layer outside the ops themselves (module-call overhead), from the dense eager trace.
    host_between: Cost | None = None
    graph_launch: Cost | None = None
    # SMs of the GPU (``results.json`` ``env.sm_count``), as a count in ``ms``'s place.
    sm_count: Cost | None = None
    # Tiles (m, n, k) of the sparse GEMM kernels seen in the traces, with the kernel name and file that showed each.
    sparse_tiles: dict[tuple[int, int, int], str] = field(default_factory=dict)
    forwards: list[tuple[ForwardSpec, Path, float, str]] = field(default_factory=list)


def _gemm_rows(path: Path) -> tuple[list[GemmRow], dict[str, Any]]:
    data = load_data(path)
    if not isinstance(data, dict) or not isinstance(data.get("gemm"), list):
        raise UserError(f"{path}: expected an object with a 'gemm' list")
    rows: list[GemmRow] = []
    for index, row in enumerate(data["gemm"]):
        try:
            dense = row.get("dense") or {}
            sparse = row.get("sparse") or {}
            rows.append(
                GemmRow(
                    index=index,
                    out=int(row["out"]),
                    k=int(row["in"]),
                    tokens=int(row["tokens"]),
                    dtype=torch_dtype_name(str(row["dtype"])),
                    backend=str(row["backend"]),
                    dense_ms=float(dense["p50"]) if "p50" in dense else None,
                    sparse_ms=float(sparse["p50"]) if "p50" in sparse else None,
                    convert_ms=float(row["convert_ms"]) if row.get("convert_ms") is not None else None,
                    error=str(row["error"]) if row.get("error") else None,
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{path}: gemm[{index}]: malformed row ({exc})") from None
    model = data.get("model")
    env = data.get("env")
    return rows, {"model": model if isinstance(model, dict) else {}, "env": env if isinstance(env, dict) else {}}


def _ncu_points(spec: NcuSpec, path: Path) -> list[KernelPoint]:
    from sparsedebug.sources.importers.ncu import load_ncu

    points = []
    for kernel in load_ncu(path).kernels:
        if kernel.duration_us is None or kernel.kernel_class.value not in _GEMM:
            continue
        kind: Literal["dense", "sparse"] = "sparse" if kernel.kernel_class is KernelClass.SPARSE_GEMM else "dense"
        label = f"{spec.file} kernel {kernel.id} ({kind}, {spec.out}x{spec.in_} T={spec.tokens}): {kernel.duration_us:.1f} us"
        points.append(KernelPoint(spec.out, spec.in_, spec.tokens, torch_dtype_name(spec.dtype), kind, kernel.duration_us / 1e3, label))
    return points


@dataclass
class _TraceHost:
    """CPU durations (ms) of annotations by name and of aten ops by op name, graph launches, host time between layers."""

    annotations: dict[str, list[float]]
    ops: dict[str, list[float]]
    graph_launches: list[float]
    sparse_kernels: dict[tuple[int, int, int], str]
    # Host time per forward outside every layer annotation (module-call overhead), summed within forwards.
    between_ms: float
    forwards: int


def _between(spans: list[tuple[str, float, float]]) -> tuple[float, int]:
    """Host time between consecutive annotations, per forward; a forward starts where the first annotation repeats."""
    spans.sort(key=lambda item: item[1])
    if not spans:
        return 0.0, 0
    first = spans[0][0]
    total, forwards = 0.0, 1
    for (_, _, prev_end), (name, start, _) in zip(spans, spans[1:], strict=False):
        if name == first:
            forwards += 1
            continue
        total += max(start - prev_end, 0.0)
    return total / forwards, forwards


def _trace_host(path: Path) -> _TraceHost:
    from sparsedebug.sources.importers.trace.read.stream import iter_trace

    annotations: dict[str, list[float]] = defaultdict(list)
    ops: dict[str, list[float]] = defaultdict(list)
    launches: list[float] = []
    tiles: dict[tuple[int, int, int], str] = {}
    spans: list[tuple[str, float, float]] = []
    for event in iter_trace(path, {}):
        if not isinstance(event, dict) or not isinstance(event.get("dur"), int | float):
            continue
        cat, name = event.get("cat"), str(event.get("name", ""))
        if cat == "user_annotation":
            annotations[name].append(float(event["dur"]) / 1e3)
            if isinstance(event.get("ts"), int | float):
                start = float(event["ts"]) / 1e3
                spans.append((name, start, start + float(event["dur"]) / 1e3))
        elif cat == "cpu_op":
            ops[name].append(float(event["dur"]) / 1e3)
        elif cat == "cuda_runtime" and name == "cudaGraphLaunch":
            launches.append(float(event["dur"]) / 1e3)
        elif cat == "kernel" and (match := _SPARSE_TILE.search(name)):
            tiles.setdefault((int(match[1]), int(match[2]), int(match[3])), name)
    between, forwards = _between(spans)
    return _TraceHost(dict(annotations), dict(ops), launches, tiles, between, forwards)


def _iterations(record: RunRecord) -> int:
    return max(len(record.schedule.span_samples_ms), 1)


def _linear_points(record: RunRecord, spec: TraceSpec) -> list[KernelPoint]:
    """GEMM-class GPU time per call of each annotated linear layer with a known weight shape."""
    points = []
    tokens = record.graph.tokens
    for graph, kernel, lower in zip(record.graph.layers, record.kernel.layers, record.lower.layers, strict=True):
        if graph.op is not OpKind.LINEAR or graph.weight_shape is None or tokens is None or not kernel.samples_ms:
            continue
        gemm = sum(kernel.by_class_ms.get(cls, 0.0) for cls in _GEMM)
        if gemm <= 0:
            continue
        path: Literal["dense", "sparse"] = "sparse" if lower.path.value == "sparse" else "dense"
        per_call = gemm / len(kernel.samples_ms)
        out, k = graph.weight_shape
        label = f"{spec.file} {graph.name} ({path} GEMM kernels, {out}x{k} T={tokens}): {per_call * 1e3:.1f} us per call"
        points.append(KernelPoint(out, k, tokens, torch_dtype_name(graph.dtype), path, per_call, label))
    return points


_FAMILIES: dict[str, Kind] = {
    "norm": "norm",
    "attention": "attention",
    "activation": "pointwise",
    "elementwise": "pointwise",
    "embedding": "pointwise",
}


def family_of(op: str) -> Kind | None:
    """The op family whose effective rate estimates ``op`` (None for linear layers, which are measured)."""
    return _FAMILIES.get(op)


def _rates(record: RunRecord, spec: TraceSpec, workload_path: Path) -> dict[Kind, Rate]:
    """Effective GPU rates per op family: the traced model's bytes (FLOPs for attention) over the traced time."""
    per_iter = 1.0 / _iterations(record)
    time: dict[Kind, float] = defaultdict(float)
    for graph, kernel in zip(record.graph.layers, record.kernel.layers, strict=True):
        if graph.op is OpKind.LINEAR:
            time["pointwise"] += sum(v for cls, v in kernel.by_class_ms.items() if cls not in _GEMM) * per_iter
            continue
        family = family_of(graph.op.value)
        if family is not None:
            time[family] += sum(kernel.samples_ms) * per_iter
    amount: dict[Kind, float] = defaultdict(float)
    for layer in inventory(load_workload(workload_path)):
        family = family_of(layer.op.value)
        if family is not None:
            amount[family] += layer.flops if family == "attention" else layer.bytes
    rates: dict[Kind, Rate] = {}
    for family, ms in time.items():
        if ms <= 0 or amount.get(family, 0.0) <= 0:
            continue
        unit: Literal["bytes", "flops"] = "flops" if family == "attention" else "bytes"
        per_ms = amount[family] / ms
        shown = f"{per_ms / 1e9:.1f} TFLOP/s" if unit == "flops" else f"{per_ms / 1e6:.0f} GB/s"
        label = (
            f"{spec.file}: {family} kernels {ms:.3f} ms per forward for the {unit} of {workload_path.name}'s "
            f"{family} layers: effective {shown}"
        )
        rates[family] = Rate(unit, per_ms, label)
    return rates


def _host_costs(host: _TraceHost, record: RunRecord, spec: TraceSpec) -> dict[str, Cost]:
    """Host time of one call per non-linear op kind: annotation CPU time (norm, attention) or aten op CPU time."""
    costs: dict[str, Cost] = {}
    for op in (OpKind.NORM, OpKind.ATTENTION):
        durations = [d for g in record.graph.layers if g.op is op for d in host.annotations.get(g.name, [])]
        if durations:
            costs[op.value] = Cost(median(durations), f"{spec.file}: median CPU time of {len(durations)} {op.value} annotations (profiled)")
    for kind, names in _HOST_OPS.items():
        durations = [d for name in names for d in host.ops.get(name, [])]
        if durations:
            costs[kind] = Cost(median(durations), f"{spec.file}: median CPU time of {len(durations)} {'/'.join(names)} ops (profiled)")
    return costs


def _gap(record: RunRecord, spec: TraceSpec, workload_path: Path) -> Cost:
    """GPU idle per layer: the traced idle per forward (span - busy) over the traced model's layer count."""
    layers = len(load_workload(workload_path).layers)
    idle = median([s - b for s, b in zip(record.schedule.span_samples_ms, record.schedule.busy_samples_ms, strict=True)])
    if spec.launch == "eager":
        # eager idle is mostly host wait; only the kernel-to-kernel part is a launch gap
        idle = per_iteration(record.schedule, record.schedule.kernel_wait_ms) or 0.0
    per_layer = max(idle, 0.0) / layers
    what = "kernel-to-kernel wait" if spec.launch == "eager" else "span - busy"
    return Cost(per_layer, f"{spec.file}: {what} {idle:.3f} ms per forward over {layers} layers of {workload_path.name}: {per_layer * 1e3:.2f} us per layer")


def _read_traces(cal: Calibration) -> None:
    from sparsedebug.sources.importers.trace.importer import import_trace

    for spec in cal.source.traces:
        path = data_file(cal.source.data, spec.file)
        workload_path = data_file("targets", spec.workload)
        record = import_trace(path)
        host = _trace_host(path)
        for tile, kernel in host.sparse_kernels.items():
            cal.sparse_tiles.setdefault(tile, f"{spec.file}: {kernel}")
        if spec.launch == "eager":
            cal.kernels.extend(_linear_points(record, spec))
            if not any(p.path == "sparse" for p in _linear_points(record, spec)):
                # the dense model calibrates the non-linear rates and host costs
                cal.rates.update(_rates(record, spec, workload_path))
                for kind, cost in _host_costs(host, record, spec).items():
                    cal.host.setdefault(kind, cost)
                cal.gaps.setdefault("eager", _gap(record, spec, workload_path))
                if host.forwards and cal.host_between is None:
                    layers = len(load_workload(workload_path).layers)
                    cal.host_between = Cost(
                        host.between_ms / layers,
                        f"{spec.file}: {host.between_ms:.3f} ms of host time per forward between layer annotations, "
                        f"over {layers} layers of {workload_path.name}: {host.between_ms / layers * 1e3:.2f} us per layer",
                    )
        else:
            if not any(lo.path.value == "sparse" for lo in record.lower.layers):
                cal.gaps.setdefault("cuda_graph", _gap(record, spec, workload_path))
            if host.graph_launches and cal.graph_launch is None:
                ms = median(host.graph_launches)
                cal.graph_launch = Cost(ms, f"{spec.file}: median CPU time of {len(host.graph_launches)} cudaGraphLaunch calls")


def sparse_tile(cal: Calibration) -> Tile | None:
    """The sparse kernel's tile over the GPU's SMs, from the traced sparse kernel names (the first in order when they differ)."""
    if not cal.sparse_tiles or cal.sm_count is None:
        return None
    (m, n, k), label = sorted(cal.sparse_tiles.items())[0]
    return Tile(m, n, k, int(cal.sm_count.ms), f"{label}; {cal.sm_count.label}")


def _read_forwards(cal: Calibration, model: dict[str, Any]) -> None:
    for spec in cal.source.forwards:
        path = data_file("targets", spec.workload)
        if spec.results_key is not None:
            entry = model.get(spec.results_key)
            if not isinstance(entry, dict) or "p50" not in entry:
                raise UserError(f"{cal.source.gemm}: model.{spec.results_key}.p50 missing (named by target source {cal.source.name})")
            cal.forwards.append((spec, path, float(entry["p50"]), f"results.json model.{spec.results_key} p50"))
        elif spec.p50_ms is not None:
            cal.forwards.append((spec, path, spec.p50_ms, spec.source or "target source"))


@lru_cache(maxsize=4)
def load_calibration(name: str) -> Calibration:
    """Read target source ``name`` (``fixtures/targets/<name>.yaml``) and everything it names."""
    source_path = data_file("targets", f"{name}.yaml")
    source = validate(TargetSource, load_data(source_path), str(source_path))
    rows, extra = _gemm_rows(data_file(source.data, source.gemm))
    model, env = extra["model"], extra["env"]
    cal = Calibration(source=source, gemm=rows)
    if isinstance(env.get("sm_count"), int) and env["sm_count"] > 0:
        cal.sm_count = Cost(float(env["sm_count"]), f"{source.gemm} env.sm_count {env['sm_count']}")
    if source.ncu is not None:
        cal.kernels.extend(_ncu_points(source.ncu, data_file(source.data, source.ncu.file)))
    _read_traces(cal)
    _read_forwards(cal, model)
    return cal
