"""Step 3 of the playbook: classify the dominant mechanism of a run's symptom.

``classify_run`` computes the metrics the rule table (``sparsedebug.classify.rules``)
names, from the run record, its baseline and any attached evidence (Nsight
Compute report, nvidia-smi log, calibrated fingerprint), scores all five
mechanisms, ranks them, and names the winner, the artifact that proves it and the
smallest reversible change that would test it (a ``Fix`` that maps onto workload
knobs where it can). A metric that cannot be computed is never scored as absent:
it becomes a ``MissingEvidence`` entry naming the artifact that would settle it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sparsedebug.classify.roofline import gather_bytes, layer_intensities, layer_work, machine_roofline
from sparsedebug.classify.rules import RULES, Rule
from sparsedebug.core.errors import UserError
from sparsedebug.core.stats import median, percentiles
from sparsedebug.records.classification import (
    Classification,
    Evidence,
    Fix,
    LayerIntensity,
    Mechanism,
    MechanismScore,
    MissingEvidence,
    NcuEvidence,
    Roofline,
    SmiEvidence,
)
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.run import FallbackReason, GraphLayer, KernelClass, KernelPath, LowerLayer, RunRecord

if TYPE_CHECKING:
    from sparsedebug.sources.importers.ncu import NcuReport
    from sparsedebug.sources.importers.nvidia_smi import SmiReport


# --------------------------------------------------------------------------- facts


@dataclass
class _Fact:
    """A metric value with provenance; ``gate`` set means it must not fire (and says why)."""

    value: float | None
    source: str
    detail: str
    gate: str | None = None
    context: dict[str, object] = field(default_factory=dict)


@dataclass
class _Missing:
    reason: str
    capture: str


_Result = _Fact | _Missing

CAPTURE_SMI = (
    "capture `nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,"
    "clocks_event_reasons.active --format=csv -lms 250` during the run and pass it with --smi"
)
CAPTURE_NCU = (
    "profile the sparse GEMM with `ncu --section SpeedOfLight --section ComputeWorkloadAnalysis "
    "--section MemoryWorkloadAnalysis --csv` and pass it with --ncu"
)
CAPTURE_CALIBRATION = "run `sparsedebug freeze --calibrate -o fp.yaml` on the replay machine and pass --fingerprint fp.yaml"
CAPTURE_TRACE = "import a PyTorch profiler trace with CUDA activities (`sparsedebug import trace`)"
CAPTURE_BASELINE = "pass the baseline run with --baseline"
CAPTURE_CPU_FREQ = (
    "sample CPU frequency during the replay (`/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq`, "
    "or `perf stat -e cycles`) and pin the governor to performance"
)

# Mantissa bits (with the implicit one) per precision name: larger is more precise.
_MANTISSA_BITS: dict[str, int] = {
    "fp64": 53, "float64": 53, "double": 53,
    "fp32": 24, "float32": 24, "float": 24, "f32": 24,
    "tf32": 11,
    "fp16": 11, "float16": 11, "half": 11, "f16": 11,
    "bf16": 8, "bfloat16": 8,
    "fp8": 4, "float8_e4m3fn": 4, "e4m3": 4, "float8_e5m2": 3, "e5m2": 3,
}
_CANONICAL = {"float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "f32": "fp32",
              "float16": "fp16", "half": "fp16", "f16": "fp16", "bfloat16": "bf16"}
_U_FP32 = 2.0**-24
_DRIFT_MIN_SAMPLES = 9
_TAIL_MIN_SAMPLES = 20


def canonical_precision(name: str | None) -> str | None:
    """fp64/fp32/fp16/bf16/... for the many spellings of a dtype; None when unknown."""
    if name is None:
        return None
    key = name.lower().removeprefix("torch.")
    if key not in _MANTISSA_BITS:
        return None
    return _CANONICAL.get(key, key)


def unit_roundoff(precision: str) -> float | None:
    """2**-p for a precision with p mantissa bits; None when unknown."""
    bits = _MANTISSA_BITS.get(precision.lower().removeprefix("torch."))
    return None if bits is None else 2.0**-bits


def _p50(samples: Sequence[float]) -> float | None:
    return median(samples) if samples else None


@dataclass
class _Context:
    run: RunRecord
    baseline: RunRecord | None
    ncu: list[NcuEvidence] | None
    ncu_source: str | None
    smi: SmiEvidence | None
    fingerprint: Fingerprint | None
    roofline: Roofline | None
    intensities: list[LayerIntensity]
    run_artifact: str

    @property
    def imported(self) -> bool:
        return self.run.source.kind != "replay"

    def graph(self, run: RunRecord | None = None) -> dict[str, GraphLayer]:
        return {layer.name: layer for layer in (run or self.run).graph.layers}

    def lower(self, run: RunRecord | None = None) -> dict[str, LowerLayer]:
        return {layer.name: layer for layer in (run or self.run).lower.layers}

    def kernel_p50(self, run: RunRecord | None = None) -> dict[str, float]:
        out: dict[str, float] = {}
        for layer in (run or self.run).kernel.layers:
            value = _p50(layer.samples_ms)
            if value is not None:
                out[layer.name] = value
        return out

    def cores(self) -> int | None:
        for fp in (self.fingerprint, self.run.fingerprint):
            if fp is not None and fp.cpu.logical_cores:
                return fp.cpu.logical_cores
        return None


def _is_fallback(graph: GraphLayer | None, lower: LowerLayer) -> bool:
    intended_sparse = graph is not None and graph.intended != "dense"
    return (
        intended_sparse
        and lower.path == KernelPath.DENSE
        and lower.reason is not None
        and lower.reason != FallbackReason.INTENDED_DENSE
    )


def _fallbacks(ctx: _Context) -> list[tuple[GraphLayer, LowerLayer]]:
    graph = ctx.graph()
    return [(graph[lo.name], lo) for lo in ctx.run.lower.layers if lo.name in graph and _is_fallback(graph[lo.name], lo)]


# ---- compute


def _fallback_flop_share(ctx: _Context) -> _Result:
    intended = [layer for layer in ctx.run.graph.layers if layer.intended != "dense"]
    if not intended:
        return _Fact(None, "graph.layers[].intended", "no layer is declared sparse: nothing can fall back")
    fallbacks = _fallbacks(ctx)
    names = ", ".join(f"{g.name} ({lo.reason})" for g, lo in fallbacks) or "none"
    total_flops = sum(layer.flops for layer in intended)
    if total_flops > 0:
        lost = sum(g.flops for g, _ in fallbacks)
        share = lost / total_flops
        detail = f"{lost:.3g} of {total_flops:.3g} FLOPs declared sparse run dense; fallback layers: {names}"
    else:
        share = len(fallbacks) / len(intended)
        detail = f"{len(fallbacks)} of {len(intended)} layers declared sparse run dense (no FLOPs declared); fallback layers: {names}"
    biggest = max(fallbacks, key=lambda pair: (pair[0].flops, pair[0].name), default=None)
    ctx_data: dict[str, object] = {}
    if biggest is not None:
        ctx_data = {"layer": biggest[0].name, "reason": biggest[1].reason}
    return _Fact(share, "lower.layers[].path + graph.layers[].flops", detail, context=ctx_data)


def _fallback_time_share(ctx: _Context) -> _Result:
    times = ctx.kernel_p50()
    if not times:
        return _Missing("no per-layer kernel samples in the run", CAPTURE_TRACE if ctx.imported else "replay the workload")
    fallbacks = [(g, lo) for g, lo in _fallbacks(ctx) if g.name in times]
    total = sum(times.values())
    lost = sum(times[g.name] for g, _ in fallbacks)
    worst = max(fallbacks, key=lambda pair: times[pair[0].name], default=None)
    detail = f"{lost:.3f} of {total:.3f} ms summed kernel p50 in fallback layers"
    data: dict[str, object] = {}
    if worst is not None:
        detail += f"; largest {worst[0].name} {times[worst[0].name]:.3f} ms ({worst[1].reason})"
        data = {"layer": worst[0].name, "reason": worst[1].reason}
    return _Fact(lost / total if total > 0 else 0.0, "kernel.layers[].samples_ms (fallback layers)", detail, context=data)


def _compute_bound_sparse_slowdown(ctx: _Context) -> _Result:
    if ctx.roofline is None:
        return _roofline_missing(ctx)
    bound = {li.name: li for li in ctx.intensities}
    lower = ctx.lower()
    pairs: list[tuple[str, float, float]] = []
    for layer in ctx.run.kernel.layers:
        lo = lower.get(layer.name)
        li = bound.get(layer.name)
        if lo is None or lo.path != KernelPath.SPARSE or li is None or li.bound != "compute":
            continue
        sparse = _p50(layer.samples_ms)
        dense = _p50(layer.dense_samples_ms or [])
        if sparse is not None and dense is not None and dense > 0:
            pairs.append((layer.name, sparse, dense))
    if not pairs:
        return _Fact(None, "kernel.layers[].dense_samples_ms", f"no compute-bound sparse layer with dense reference timings (ridge {ctx.roofline.ridge:.1f} FLOP/B)")
    sparse_total = sum(p[1] for p in pairs)
    dense_total = sum(p[2] for p in pairs)
    worst = max(pairs, key=lambda p: p[1] / p[2])
    return _Fact(
        sparse_total / dense_total,
        "kernel.layers[].samples_ms vs dense_samples_ms",
        f"{len(pairs)} compute-bound sparse layers: sparse {sparse_total:.3f} ms vs dense {dense_total:.3f} ms (p50 sums); "
        f"worst {worst[0]} {worst[1]:.3f} vs {worst[2]:.3f} ms",
        context={"layer": worst[0]},
    )


def _sparse_ncu(ctx: _Context) -> NcuEvidence | _Missing | None:
    if ctx.ncu is None:
        if ctx.imported:
            return _Missing("no Nsight Compute report", CAPTURE_NCU)
        return None
    sparse = [k for k in ctx.ncu if k.kernel_class == KernelClass.SPARSE_GEMM]
    if not sparse:
        return _Missing(f"{ctx.ncu_source}: no sparse GEMM kernel in the report", CAPTURE_NCU)
    return max(sparse, key=lambda k: k.duration_us or 0.0)


def _ncu_sparse_sm_pct(ctx: _Context) -> _Result:
    kernel = _sparse_ncu(ctx)
    if kernel is None:
        return _Fact(None, "ncu", "replay on the built-in CPU kernel: Nsight Compute does not apply")
    if isinstance(kernel, _Missing):
        return kernel
    if kernel.sm_pct is None:
        return _Missing(f"{ctx.ncu_source}: no Compute (SM) Throughput for {kernel.name}", CAPTURE_NCU)
    return _Fact(kernel.sm_pct, f"{ctx.ncu_source}: SpeedOfLight", _ncu_detail(kernel))


def _ncu_detail(kernel: NcuEvidence) -> str:
    parts = [kernel.name[:60]]
    if kernel.duration_us is not None:
        parts.append(f"{kernel.duration_us:.1f} us")
    if kernel.sm_pct is not None:
        parts.append(f"SM {kernel.sm_pct:.1f}%")
    if kernel.mem_pct is not None:
        parts.append(f"memory {kernel.mem_pct:.1f}%")
    if kernel.spill_requests is not None:
        parts.append(f"spill requests {kernel.spill_requests:.0f}")
    return ", ".join(parts)


# ---- memory


def _metadata_value_ratio(ctx: _Context) -> _Result:
    lower = [lo for lo in ctx.run.lower.layers if lo.path == KernelPath.SPARSE]
    if not lower:
        return _Fact(None, "lower.layers[].metadata_bytes", "no layer runs sparse: no metadata traffic")
    rows = [lo for lo in lower if lo.metadata_bytes is not None and lo.value_bytes]
    if not rows:
        capture = (
            "replay an equivalent workload (`sparsedebug replay`): it records value and metadata bytes per layer"
            if ctx.imported
            else "replay the workload again with this sparsedebug (it records value and metadata bytes per layer)"
        )
        return _Missing("metadata and value bytes of the sparse layers are not recorded", capture)
    meta = sum(lo.metadata_bytes or 0 for lo in rows)
    values = sum(lo.value_bytes or 0 for lo in rows)
    worst = max(rows, key=lambda lo: (lo.metadata_bytes or 0) / (lo.value_bytes or 1))
    return _Fact(
        meta / values,
        "lower.layers[].metadata_bytes / value_bytes",
        f"{meta} metadata bytes for {values} value bytes over {len(rows)} sparse layers; "
        f"worst {worst.name} {(worst.metadata_bytes or 0) / (worst.value_bytes or 1):.3f}",
        context={"layer": worst.name},
    )


def _gather_traffic_ratio(ctx: _Context) -> _Result:
    lower = ctx.lower()
    rows = [(g, gather_bytes(g, lower.get(g.name), ctx.run.graph.tokens)) for g in ctx.run.graph.layers]
    blocked = [(g, b) for g, b in rows if b is not None and g.bytes > 0]
    if not blocked:
        if any(any("VNMWeight" in k for k in lo.kernels) for lo in ctx.run.lower.layers) and ctx.run.graph.tokens is None:
            return _Missing("token count not recorded in the graph stage", "replay the workload")
        where = "imported run" if ctx.imported else "no layer runs the built-in blocked V:N:M kernel"
        return _Fact(None, "lower.layers[].kernels", f"{where}: no activation gathers to count")
    gathered = sum(b for _, b in blocked)
    dense = sum(g.bytes for g, _ in blocked)
    worst_layer, worst_bytes = max(blocked, key=lambda pair: pair[1] / pair[0].bytes)
    return _Fact(
        gathered / dense,
        "graph.layers[] (shape, V:N:M, tokens) for lower.layers[].kernels = VNMWeight",
        f"{gathered:.3g} gathered activation bytes per call vs {dense:.3g} dense-GEMM bytes over {len(blocked)} blocked layers; "
        f"worst {worst_layer.name} ({worst_layer.intended}) {worst_bytes / worst_layer.bytes:.2f}x",
        context={"layer": worst_layer.name},
    )


def _bytes_moved_growth(ctx: _Context) -> _Result:
    if ctx.baseline is None:
        return _Missing("no baseline to compare bytes moved with", CAPTURE_BASELINE)
    cand, base = layer_work(ctx.run), layer_work(ctx.baseline)
    if not cand or not base:
        return _Missing("FLOPs and bytes per layer not recorded in the run or the baseline", "replay the workload or import a trace with record_shapes")
    c_bytes, b_bytes = sum(w.bytes for w in cand), sum(w.bytes for w in base)
    base_by = {w.name: w.bytes for w in base}
    grown = max(cand, key=lambda w: w.bytes / base_by.get(w.name, w.bytes))
    return _Fact(
        c_bytes / b_bytes,
        "roofline.layer_work bytes per call, candidate vs baseline",
        f"{c_bytes:.3g} bytes per call vs baseline {b_bytes:.3g}; most grown {grown.name} "
        f"{base_by.get(grown.name, grown.bytes):.3g} -> {grown.bytes:.3g}",
        context={"layer": grown.name},
    )


def _conversion_traffic_ratio(ctx: _Context) -> _Result:
    graph_bytes = sum(layer.bytes for layer in ctx.run.graph.layers)
    converting = [lo for lo in ctx.run.lower.layers if lo.conversions_per_call > 0]
    if not converting:
        return _Fact(0.0, "lower.layers[].conversions_per_call", "no layer converts its weights on every call")
    if graph_bytes <= 0:
        return _Missing("graph bytes per layer not recorded", "replay the workload or import a trace with record_shapes")
    moved = sum(
        lo.conversions_per_call * ((lo.dense_bytes or 0) + (lo.value_bytes or 0) + (lo.metadata_bytes or 0)) for lo in converting
    )
    return _Fact(
        moved / graph_bytes,
        "lower.layers[].conversions_per_call x bytes / graph.layers[].bytes",
        f"{moved:.3g} conversion bytes per call ({len(converting)} layers) vs {graph_bytes:.3g} forward bytes",
    )


def _low_intensity_time_share(ctx: _Context) -> _Result:
    if ctx.roofline is None:
        return _roofline_missing(ctx)
    if not ctx.intensities:
        return _Missing("no layer declares FLOPs and bytes", "replay the workload or import a trace with record_shapes")
    weights: dict[str, float] = {}
    times = ctx.kernel_p50()
    for li in ctx.intensities:
        weights[li.name] = times.get(li.name, li.attainable_ms)
    total = sum(weights.values())
    low = [li for li in ctx.intensities if li.bound == "memory"]
    share = sum(weights[li.name] for li in low) / total if total > 0 else 0.0
    ai = sorted(li.intensity for li in ctx.intensities)
    return _Fact(
        share,
        "graph.layers[].flops/bytes vs roofline ridge",
        f"{len(low)} of {len(ctx.intensities)} layers below the ridge {ctx.roofline.ridge:.1f} FLOP/B "
        f"({ctx.roofline.device}, {ctx.roofline.source}); intensity {ai[0]:.1f} to {ai[-1]:.1f} FLOP/B",
    )


def _copy_time_share(ctx: _Context) -> _Result:
    by_class = ctx.run.kernel.by_class_ms
    if not by_class:
        if ctx.imported:
            return _Missing("no per-class kernel time in the run", CAPTURE_TRACE)
        return _Fact(None, "kernel.by_class_ms", "replay: copies are part of the layer times, not timed apart")
    total = sum(by_class.values())
    copy = by_class.get(KernelClass.COPY.value, 0.0)
    return _Fact(copy / total if total > 0 else 0.0, "kernel.by_class_ms['copy']", f"{copy:.3f} of {total:.3f} ms in copy kernels")


def _ncu_mem_minus_sm(ctx: _Context) -> _Result:
    kernel = _sparse_ncu(ctx)
    if kernel is None:
        return _Fact(None, "ncu", "replay on the built-in CPU kernel: Nsight Compute does not apply")
    if isinstance(kernel, _Missing):
        return kernel
    if kernel.sm_pct is None or kernel.mem_pct is None:
        return _Missing(f"{ctx.ncu_source}: SpeedOfLight throughputs missing for {kernel.name}", CAPTURE_NCU)
    gate = None
    if kernel.sm_pct < 60 and kernel.mem_pct < 60:
        gate = "both throughputs below 60%: latency-bound, not memory-bound"
    return _Fact(kernel.mem_pct - kernel.sm_pct, f"{ctx.ncu_source}: SpeedOfLight", _ncu_detail(kernel), gate=gate)


def _ncu_spills(ctx: _Context) -> _Result:
    kernel = _sparse_ncu(ctx)
    if kernel is None:
        return _Fact(None, "ncu", "replay on the built-in CPU kernel: Nsight Compute does not apply")
    if isinstance(kernel, _Missing):
        return kernel
    if kernel.spill_requests is None:
        return _Missing(f"{ctx.ncu_source}: no Local Memory Spilling Requests for {kernel.name}", CAPTURE_NCU)
    return _Fact(kernel.spill_requests, f"{ctx.ncu_source}: MemoryWorkloadAnalysis", _ncu_detail(kernel))


# ---- scheduling


def _overhead_samples(run: RunRecord) -> list[float]:
    spans, busy = run.schedule.span_samples_ms, run.schedule.busy_samples_ms
    if spans and len(spans) == len(busy):
        return [s - b for s, b in zip(spans, busy, strict=True)]
    if spans and busy:
        return [median(spans) - median(busy)]
    return []


def _span_busy_ratio(ctx: _Context) -> _Result:
    spans, busy = ctx.run.schedule.span_samples_ms, ctx.run.schedule.busy_samples_ms
    if not spans or not busy:
        return _Missing("no span or busy samples in the schedule stage", CAPTURE_TRACE)
    s, b = median(spans), median(busy)
    if b <= 0:
        return _Missing("busy time is zero", CAPTURE_TRACE)
    detail = f"span p50 {s:.3f} ms vs busy p50 {b:.3f} ms over {len(spans)} iterations"
    if ctx.baseline is not None and ctx.baseline.schedule.span_samples_ms and ctx.baseline.schedule.busy_samples_ms:
        bs, bb = median(ctx.baseline.schedule.span_samples_ms), median(ctx.baseline.schedule.busy_samples_ms)
        if bb > 0:
            detail += f"; baseline {bs:.3f} vs {bb:.3f} ms ({bs / bb:.2f}x)"
    return _Fact(s / b, "schedule.span_samples_ms / busy_samples_ms", detail)


def _host_wait_share(ctx: _Context) -> _Result:
    host, kern = ctx.run.schedule.host_wait_ms, ctx.run.schedule.kernel_wait_ms
    if host is None or kern is None:
        if ctx.imported:
            return _Missing("idle time not split into host wait and kernel wait", CAPTURE_TRACE)
        return _Fact(None, "schedule.host_wait_ms", "replay: the CPU is host and device, no idle split")
    if host + kern <= 0:
        return _Fact(0.0, "schedule.host_wait_ms", "no idle time between kernels")
    return _Fact(
        host / (host + kern),
        "schedule.host_wait_ms / (host_wait_ms + kernel_wait_ms)",
        f"host wait {host:.3f} ms vs kernel wait {kern:.3f} ms",
    )


def _overhead_per_launch_ms(ctx: _Context) -> _Result:
    launches = ctx.run.schedule.launches_per_iteration
    overhead = _overhead_samples(ctx.run)
    if not overhead:
        return _Missing("no span or busy samples in the schedule stage", CAPTURE_TRACE)
    if not launches:
        return _Missing("launches per iteration not recorded", CAPTURE_TRACE if ctx.imported else "replay the workload")
    per = median(overhead) / launches
    return _Fact(
        per,
        "(schedule.span - busy) p50 / launches_per_iteration",
        f"{median(overhead):.3f} ms non-kernel time per iteration over {launches} launches = {per * 1e3:.1f} us each",
    )


def _overhead_regression_share(ctx: _Context) -> _Result:
    if ctx.baseline is None:
        return _Missing("no baseline run to compare against", CAPTURE_BASELINE)
    cand_lat, base_lat = ctx.run.outcome.latency_samples_ms, ctx.baseline.outcome.latency_samples_ms
    cand_ovh, base_ovh = _overhead_samples(ctx.run), _overhead_samples(ctx.baseline)
    if not cand_lat or not base_lat:
        return _Missing("latency samples missing in the run or the baseline", "re-run with latency samples recorded")
    if not cand_ovh or not base_ovh:
        return _Missing("span/busy samples missing in the run or the baseline", CAPTURE_TRACE)
    d_lat = median(cand_lat) - median(base_lat)
    d_ovh = median(cand_ovh) - median(base_ovh)
    detail = (
        f"latency p50 {median(base_lat):.3f} -> {median(cand_lat):.3f} ms ({d_lat:+.3f}); "
        f"non-kernel time p50 {median(base_ovh):.3f} -> {median(cand_ovh):.3f} ms ({d_ovh:+.3f})"
    )
    if d_lat <= 0:
        return _Fact(None, "outcome.latency_samples_ms vs baseline", detail + ": the candidate is not slower than the baseline")
    return _Fact(d_ovh / d_lat, "schedule.span-busy vs outcome.latency, candidate minus baseline", detail)


def _per_call_conversion_share(ctx: _Context) -> _Result:
    converting = [lo for lo in ctx.run.lower.layers if lo.conversions_per_call > 0]
    if not converting:
        return _Fact(0.0, "lower.layers[].conversions_per_call", "no layer converts its weights on every call")
    lat = _p50(ctx.run.outcome.latency_samples_ms)
    if lat is None or lat <= 0:
        return _Missing("no latency samples in the outcome stage", "re-run with latency samples recorded")
    untimed = [lo.name for lo in converting if lo.conversion_ms is None]
    if untimed:
        return _Missing(f"conversion time not recorded for {', '.join(untimed)}", "replay the workload")
    cost = sum((lo.conversion_ms or 0.0) * lo.conversions_per_call for lo in converting)
    return _Fact(
        cost / lat,
        "lower.layers[].conversion_ms x conversions_per_call / outcome latency p50",
        f"{len(converting)} layers convert on every call: {cost:.3f} ms per call vs latency p50 {lat:.3f} ms",
    )


def _thread_oversubscription(ctx: _Context) -> _Result:
    threads = ctx.run.schedule.threads
    if threads is None:
        if ctx.imported:
            return _Fact(None, "schedule.threads", "imported GPU run: host compute threads not recorded")
        return _Missing("thread count not recorded in the schedule stage", "replay the workload")
    cores = ctx.cores()
    if cores is None:
        return _Missing(f"{threads} threads, but the machine's core count is unknown", "pass --fingerprint from `sparsedebug freeze`")
    return _Fact(
        threads / cores,
        "schedule.threads / fingerprint cpu.logical_cores",
        f"{threads} threads on {cores} logical cores",
        context={"cores": cores},
    )


def _latency_tail_ratio(ctx: _Context) -> _Result:
    samples = ctx.run.outcome.latency_samples_ms
    if len(samples) < _TAIL_MIN_SAMPLES:
        return _Missing(
            f"only {len(samples)} latency samples: p99 is not meaningful",
            f"re-run with at least {_TAIL_MIN_SAMPLES} (better 50+) repeats",
        )
    pct = percentiles(samples)
    return _Fact(
        pct.p99 / pct.p50 if pct.p50 > 0 else 0.0,
        "outcome.latency_samples_ms p99 / p50",
        f"p50 {pct.p50:.3f} ms, p95 {pct.p95:.3f} ms, p99 {pct.p99:.3f} ms (n={pct.n})",
    )


# ---- precision


def _layer_precisions(run: RunRecord) -> dict[str, str]:
    out: dict[str, str] = {}
    for layer in run.graph.layers:
        canon = canonical_precision(layer.dtype)
        if canon is not None:
            out[layer.name] = canon
    for klayer in run.kernel.layers:
        canon = canonical_precision(klayer.precision)
        if canon is not None:
            out[klayer.name] = canon
    return out


def _precision_change_count(ctx: _Context) -> _Result:
    if ctx.baseline is None:
        return _Missing("no baseline: a dtype or kernel-path change cannot be judged", CAPTURE_BASELINE)
    cand, base = _layer_precisions(ctx.run), _layer_precisions(ctx.baseline)
    changes: list[str] = []
    lowered_from: list[str] = []
    for name, prec in cand.items():
        old = base.get(name)
        if old is not None and _MANTISSA_BITS[prec] < _MANTISSA_BITS[old]:
            changes.append(f"{name} {old}->{prec}")
            lowered_from.append(old)
    cand_lower, base_lower = ctx.lower(), ctx.lower(ctx.baseline)
    declared = {g.name: canonical_precision(g.dtype) for g in ctx.run.graph.layers}
    for name, lo in cand_lower.items():
        old_lo = base_lower.get(name)
        if (
            old_lo is not None
            and declared.get(name) not in ("fp32", "fp64")
            and lo.kernel_class == KernelClass.FP32_GEMM
            and old_lo.kernel_class is not None
            and old_lo.kernel_class != KernelClass.FP32_GEMM
        ):
            changes.append(f"{name} {old_lo.kernel_class}->fp32_gemm")
    detail = "; ".join(changes[:6]) + (f"; +{len(changes) - 6} more" if len(changes) > 6 else "") if changes else "no layer changed precision or kernel path toward fp32 or lower precision"
    data: dict[str, object] = {}
    if lowered_from:
        data["restore"] = max(lowered_from, key=lambda p: _MANTISSA_BITS[p])
    if changes:
        data["layer"] = changes[0].split(" ")[0]
    return _Fact(float(len(changes)), "graph.layers[].dtype, kernel.layers[].precision, lower.layers[].kernel_class vs baseline", detail, context=data)


def _rel_errs(run: RunRecord) -> dict[str, float]:
    return {layer.name: layer.rel_err for layer in run.kernel.layers if layer.rel_err is not None}


def _rel_err_growth(ctx: _Context) -> _Result:
    cand = _rel_errs(ctx.run)
    if not cand:
        return _Missing("no numeric error against an fp64 reference in the run", "replay the workload (it measures error vs fp64)")
    if ctx.baseline is None:
        return _Missing("no baseline to compare numeric error with", CAPTURE_BASELINE)
    base = _rel_errs(ctx.baseline)
    common = [name for name in cand if name in base]
    if not common:
        return _Missing("baseline has no numeric error for the run's layers", "replay the baseline workload")
    floor = _U_FP32 * _U_FP32
    ratios = {name: cand[name] / max(base[name], floor) for name in common}
    worst = max(ratios, key=lambda name: ratios[name])
    return _Fact(
        ratios[worst],
        "kernel.layers[].rel_err vs baseline",
        f"worst {worst}: rel err {base[worst]:.3g} -> {cand[worst]:.3g} over {len(common)} layers",
        context={"layer": worst},
    )


def _rel_err_over_bound(ctx: _Context) -> _Result:
    errs = _rel_errs(ctx.run)
    if not errs:
        return _Missing("no numeric error against an fp64 reference in the run", "replay the workload (it measures error vs fp64)")
    precisions = _layer_precisions(ctx.run)
    graph = ctx.graph()
    ratios: dict[str, tuple[float, float, str]] = {}
    for name, err in errs.items():
        prec = precisions.get(name)
        u_in = unit_roundoff(prec) if prec else None
        layer = graph.get(name)
        k = layer.weight_shape[1] if layer is not None and layer.weight_shape and len(layer.weight_shape) == 2 else None
        if u_in is None or k is None:
            continue
        bound = u_in + _U_FP32 * math.sqrt(k)
        ratios[name] = (err / bound, bound, prec or "?")
    if not ratios:
        return _Missing("layer precision or inner dimension unknown", "replay the workload")
    worst = max(ratios, key=lambda name: ratios[name][0])
    ratio, bound, prec = ratios[worst]
    return _Fact(
        ratio,
        "kernel.layers[].rel_err / (u_input + u_fp32*sqrt(K))",
        f"worst {worst}: rel err {errs[worst]:.3g} vs bound {bound:.3g} for {prec} inputs with fp32 accumulation",
        context={"layer": worst},
    )


def _intents(run: RunRecord) -> dict[str, str]:
    return {layer.name: layer.intended for layer in run.graph.layers if layer.op == "linear"}


def _quality_cosine_drop(ctx: _Context) -> _Result:
    cand_q = ctx.run.outcome.quality
    if cand_q is None:
        return _Missing("no output quality in the run", "replay the workload (it measures output cosine vs dense)")
    if ctx.baseline is None:
        return _Missing("no baseline to compare quality with", CAPTURE_BASELINE)
    base_q = ctx.baseline.outcome.quality
    if base_q is None:
        return _Missing("no output quality in the baseline", "replay the baseline workload")
    drop = base_q.cosine - cand_q.cosine
    detail = f"cosine vs dense {base_q.cosine:.5f} -> {cand_q.cosine:.5f}"
    if _intents(ctx.run) != _intents(ctx.baseline):
        return _Fact(drop, "outcome.quality.cosine vs baseline", detail, gate="sparsity intent differs from the baseline: the drop includes pruning")
    return _Fact(drop, "outcome.quality.cosine vs baseline", detail)


def _quality_guardrail_failures(ctx: _Context) -> _Result:
    quality = [v for v in ctx.run.verdicts if "quality" in v.check.lower()]
    if not quality:
        return _Fact(None, "verdicts[]", "no quality guardrail verdict on the run")
    failed = [v for v in quality if v.status == "fail"]
    return _Fact(float(len(failed)), "verdicts[] (quality)", "; ".join(f"{v.check}: {v.status}: {v.detail}" for v in quality))


# ---- thermal


_SMI_NOT_FOR_REPLAY = "the replay ran on the CPU: an nvidia-smi log does not describe it"


def _smi_throttle_share(ctx: _Context) -> _Result:
    smi = ctx.smi
    if smi is None:
        return _thermal_missing(ctx)
    if not ctx.imported:
        return _Fact(None, smi.source, _SMI_NOT_FOR_REPLAY)
    if not smi.has_reasons:
        return _Missing(f"{smi.source}: no clocks_event_reasons.active column", CAPTURE_SMI)
    if smi.busy_samples == 0:
        return _Fact(None, smi.source, f"{smi.samples} samples, all with the GPU idle")
    reasons = ", ".join(f"{name} {count}" for name, count in sorted(smi.throttle_reasons.items())) or "none"
    return _Fact(
        smi.throttled_busy_samples / smi.busy_samples,
        f"{smi.source}: clocks_event_reasons.active",
        f"{smi.throttled_busy_samples} of {smi.busy_samples} non-idle samples under a power/thermal reason ({reasons})",
    )


def _smi_min_clock_ratio(ctx: _Context) -> _Result:
    smi = ctx.smi
    if smi is None:
        return _thermal_missing(ctx)
    if not ctx.imported:
        return _Fact(None, smi.source, _SMI_NOT_FOR_REPLAY)
    if smi.min_busy_sm_clock_mhz is None or not smi.max_sm_clock_mhz:
        return _Missing(f"{smi.source}: no SM clock column or no non-idle sample", CAPTURE_SMI)
    return _Fact(
        smi.min_busy_sm_clock_mhz / smi.max_sm_clock_mhz,
        f"{smi.source}: clocks.sm",
        f"lowest non-idle SM clock {smi.min_busy_sm_clock_mhz:.0f} MHz vs max {smi.max_sm_clock_mhz:.0f} MHz ({smi.max_clock_source})",
    )


def _latency_drift_ratio(ctx: _Context) -> _Result:
    samples = ctx.run.outcome.latency_samples_ms
    if len(samples) < _DRIFT_MIN_SAMPLES:
        return _Missing(
            f"only {len(samples)} latency samples: a drift across iterations cannot be tested",
            f"re-run with at least {_DRIFT_MIN_SAMPLES} (better 50+) repeats in order",
        )
    third = len(samples) // 3
    first, last = median(samples[:third]), median(samples[-third:])
    from scipy import stats as scipy_stats  # deferred: scipy.stats is slow to import at CLI start

    result = scipy_stats.spearmanr(np.arange(len(samples)), np.asarray(samples, dtype=np.float64))
    rho, p = float(result.statistic), float(result.pvalue)
    detail = f"first third p50 {first:.3f} ms, last third p50 {last:.3f} ms; Spearman rho {rho:+.2f} (p={p:.2g}, n={len(samples)})"
    gate = None if (rho > 0 and p < 0.05) else "no significant upward trend (Spearman p >= 0.05 or rho <= 0)"
    return _Fact(last / first if first > 0 else 0.0, "outcome.latency_samples_ms in iteration order", detail, gate=gate)


def _thermal_missing(ctx: _Context) -> _Missing:
    if ctx.imported:
        return _Missing("no nvidia-smi log", CAPTURE_SMI)
    return _Missing("no clock record for the replay (CPU frequency was not sampled)", CAPTURE_CPU_FREQ)


def _roofline_missing(ctx: _Context) -> _Missing:
    if ctx.imported:
        return _Missing(
            "GPU model unknown or not in the peak table: no roofline",
            "pass --gpu NAME (H200, H100 SXM, H100 PCIe) or --fingerprint from `sparsedebug freeze` on that machine",
        )
    return _Missing("no calibrated roofline for the replay machine", CAPTURE_CALIBRATION)


METRICS: dict[str, Callable[[_Context], _Result]] = {
    "fallback_flop_share": _fallback_flop_share,
    "fallback_time_share": _fallback_time_share,
    "compute_bound_sparse_slowdown": _compute_bound_sparse_slowdown,
    "ncu_sparse_sm_pct": _ncu_sparse_sm_pct,
    "metadata_value_ratio": _metadata_value_ratio,
    "gather_traffic_ratio": _gather_traffic_ratio,
    "bytes_moved_growth": _bytes_moved_growth,
    "conversion_traffic_ratio": _conversion_traffic_ratio,
    "low_intensity_time_share": _low_intensity_time_share,
    "copy_time_share": _copy_time_share,
    "ncu_sparse_mem_minus_sm_pct": _ncu_mem_minus_sm,
    "ncu_sparse_spill_requests": _ncu_spills,
    "span_busy_ratio": _span_busy_ratio,
    "host_wait_share": _host_wait_share,
    "overhead_per_launch_ms": _overhead_per_launch_ms,
    "overhead_regression_share": _overhead_regression_share,
    "per_call_conversion_share": _per_call_conversion_share,
    "thread_oversubscription": _thread_oversubscription,
    "latency_tail_ratio": _latency_tail_ratio,
    "precision_change_count": _precision_change_count,
    "rel_err_growth": _rel_err_growth,
    "rel_err_over_bound": _rel_err_over_bound,
    "quality_cosine_drop": _quality_cosine_drop,
    "quality_guardrail_failures": _quality_guardrail_failures,
    "smi_throttle_share": _smi_throttle_share,
    "smi_min_clock_ratio": _smi_min_clock_ratio,
    "latency_drift_ratio": _latency_drift_ratio,
}
"""Metric name (as the rule table names it) -> the function that computes it."""


# --------------------------------------------------------------------------- evaluation


STATE_METRICS: frozenset[str] = frozenset(
    {
        "fallback_flop_share",
        "fallback_time_share",
        "compute_bound_sparse_slowdown",
        "metadata_value_ratio",
        "gather_traffic_ratio",
        "conversion_traffic_ratio",
        "low_intensity_time_share",
        "copy_time_share",
        "span_busy_ratio",
        "overhead_per_launch_ms",
        "host_wait_share",
        "per_call_conversion_share",
        "thread_oversubscription",
        "latency_tail_ratio",
        "rel_err_over_bound",
        "quality_guardrail_failures",
        "latency_drift_ratio",
    }
)
"""Metrics computed from one run alone: with a baseline, each is computed on the baseline too."""

SHARED_TOLERANCE = 1.10
"""A rule that fires on the baseline as well does not score unless the candidate is this much worse."""


def _gate_shared_with_baseline(rule: Rule, result: _Fact, base: _Fact) -> None:
    """Gate ``result`` when the baseline shows the same condition about as strongly: it is not what changed."""
    if result.gate is not None or result.value is None or base.value is None or base.gate is not None:
        return
    if not (rule.fires(result.value) and rule.fires(base.value)):
        return
    if rule.op == ">":
        worse = result.value > base.value * SHARED_TOLERANCE
    else:
        worse = result.value * SHARED_TOLERANCE < base.value
    if not worse:
        result.gate = f"the baseline shows it too ({base.value:.3g}): not what changed"


def _evaluate(rule: Rule, result: _Fact) -> Evidence:
    if result.value is not None and not math.isfinite(result.value):
        result = _Fact(None, result.source, f"{result.detail} (not a finite number: {result.value})")
    fired = result.value is not None and result.gate is None and rule.fires(result.value)
    contribution = rule.contribution(result.value) if fired and result.value is not None else 0.0
    detail = result.detail if result.gate is None else f"{result.detail} ({result.gate})"
    return Evidence(
        rule=rule.id,
        mechanism=rule.mechanism,
        metric=rule.metric,
        value=result.value,
        op=rule.op,
        threshold=rule.threshold,
        unit=rule.unit,
        fired=fired,
        contribution=round(contribution, 6),
        source=result.source,
        detail=detail,
    )


def _merge_missing(items: list[tuple[Rule, _Missing]]) -> list[MissingEvidence]:
    merged: dict[tuple[Mechanism, str, str], MissingEvidence] = {}
    for rule, miss in items:
        key = (rule.mechanism, miss.reason, miss.capture)
        if key in merged:
            merged[key].rules.append(rule.id)
        else:
            merged[key] = MissingEvidence(mechanism=rule.mechanism, rules=[rule.id], reason=miss.reason, capture=miss.capture)
    return list(merged.values())


def _knob_precision(name: str | None) -> str:
    canon = canonical_precision(name) if name else None
    return canon if canon in {"fp32", "fp16", "bf16"} else "fp32"


def _conversion_per_call(run: RunRecord) -> bool:
    return any(lo.conversions_per_call > 0 for lo in run.lower.layers)


def _block_size(intended: str) -> int | None:
    parts = intended.split(":")
    if len(parts) == 3 and parts[0].isdigit():
        return int(parts[0])
    return None


def _sparse_path_dtype(run: RunRecord) -> str | None:
    """The dtype most layers that took the sparse path run in (what the backend accepts)."""
    sparse = {lo.name for lo in run.lower.layers if lo.path == KernelPath.SPARSE}
    dtypes = Counter(g.dtype for g in run.graph.layers if g.name in sparse)
    return dtypes.most_common(1)[0][0] if dtypes else None


def _suggest_fix(winner: Mechanism, top: Evidence, facts: dict[str, _Result], ctx: _Context) -> Fix:
    """The smallest reversible change that tests ``winner``, from its strongest fired rule."""
    rule = top.rule

    def data(metric: str) -> dict[str, object]:
        fact = facts.get(metric)
        return fact.context if isinstance(fact, _Fact) else {}

    if winner == Mechanism.SCHEDULING:
        cores = data("thread_oversubscription").get("cores")
        if rule == "scheduling.oversubscription" and isinstance(cores, int):
            return Fix(kind="knob", knob="threads", value=cores, rule=rule, metric="latency_p50_ms", direction="down",
                       text=f"set threads to {cores} (the logical core count) and re-time")
        if _conversion_per_call(ctx.run) and not ctx.imported:
            return Fix(kind="knob", knob="conversion", value="once", rule=rule, metric="latency_p50_ms", direction="down",
                       text="convert weights once at load instead of on every call, and re-time")
        if ctx.imported:
            return Fix(kind="advice", rule=rule, metric="span_busy_ratio", direction="down",
                       text="capture the forward in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace")
        if isinstance(cores, int):
            return Fix(kind="knob", knob="threads", value=cores, rule=rule, metric="span_busy_ratio", direction="down",
                       text=f"set threads to {cores} and re-time; if the gap stays, batch calls")
        return Fix(kind="advice", rule=rule, metric="span_busy_ratio", direction="down",
                   text="batch calls so per-call overhead is paid once per batch, then re-time")

    if winner == Mechanism.COMPUTE:
        info = data("fallback_flop_share") if rule == "compute.fallback_flops" else data("fallback_time_share")
        layer = info.get("layer")
        if rule in ("compute.fallback_flops", "compute.fallback_time") and isinstance(layer, str):
            reason = info.get("reason")
            if reason == FallbackReason.SHAPE_NOT_ALIGNED:
                return Fix(kind="layer", layer=layer, action="pad", rule=rule, metric="latency_p50_ms", direction="down",
                           text=f"pad {layer} to an aligned shape so it takes the sparse path, and re-time")
            sparse_dtype = _sparse_path_dtype(ctx.run)
            if reason == FallbackReason.DTYPE_UNSUPPORTED and sparse_dtype is not None and not ctx.imported:
                return Fix(kind="layer", layer=layer, action="cast", value=sparse_dtype, rule=rule,
                           metric="latency_p50_ms", direction="down",
                           text=f"cast {layer} to {sparse_dtype} (the dtype the other sparse layers run in) so the "
                                "backend accepts it on the sparse path, and re-time")
            return Fix(kind="layer", layer=layer, action="exclude", rule=rule, metric="fallback_flop_share", direction="down",
                       text=f"exclude {layer} from sparsity (it falls back: {reason}) and check latency does not move")
        layer = data("compute_bound_sparse_slowdown").get("layer")
        if isinstance(layer, str) and not ctx.imported:
            return Fix(kind="layer", layer=layer, action="exclude", rule=rule, metric="latency_p50_ms", direction="down",
                       text=f"exclude {layer} from sparsity: its sparse kernel is slower than dense")
        return Fix(kind="advice", rule=rule, metric="busy_p50_ms", direction="down",
                   text="check the sparse kernel chosen for the shape, or raise tokens per call so 2:4 pays off")

    if winner == Mechanism.MEMORY:
        if rule in ("memory.metadata_bytes", "memory.gather_traffic", "memory.bytes_growth"):
            source_metric = {
                "memory.metadata_bytes": "metadata_value_ratio",
                "memory.gather_traffic": "gather_traffic_ratio",
                "memory.bytes_growth": "bytes_moved_growth",
            }[rule]
            layer = data(source_metric).get("layer")
            graph = ctx.graph()
            v = _block_size(graph[layer].intended) if isinstance(layer, str) and layer in graph else None
            if v is not None:
                blocks = {_block_size(g.intended) for g in ctx.run.graph.layers if g.intended != "dense"}
                target = None if len(blocks) == 1 else layer
                return Fix(kind="block", layer=target, value=v * 4, rule=rule, metric="busy_p50_ms", direction="down",
                           text=f"raise block size V from {v} to {v * 4} ({'all sparse layers' if target is None else target}) and re-time")
        if rule == "memory.conversion_traffic" or _conversion_per_call(ctx.run):
            return Fix(kind="knob", knob="conversion", value="once", rule=rule, metric="latency_p50_ms", direction="down",
                       text="convert weights once at load so no conversion traffic is paid per call")
        return Fix(kind="advice", rule=rule, metric="busy_p50_ms", direction="down",
                   text="raise tokens per call (or use a larger tile) so each weight byte feeds more FLOPs, then re-time")

    if winner == Mechanism.PRECISION:
        restore = data("precision_change_count").get("restore")
        layer = (data("rel_err_growth").get("layer") or data("rel_err_over_bound").get("layer")
                 or data("precision_change_count").get("layer"))
        value = _knob_precision(restore if isinstance(restore, str) else "fp32")
        where = f" (largest error: {layer})" if isinstance(layer, str) else ""
        if ctx.imported:
            return Fix(kind="advice", rule=rule, metric="max_rel_err", direction="down",
                       text=f"keep the changed layers in {value}{where} and compare outputs against the baseline")
        return Fix(kind="knob", knob="precision", value=value, rule=rule, metric="max_rel_err", direction="down",
                   text=f"run in {value}{where} and check the numeric error and quality recover")

    # thermal
    if ctx.imported or ctx.smi is not None:
        return Fix(kind="advice", rule=rule, metric="smi_min_clock_ratio", direction="up",
                   text="lock clocks (`nvidia-smi -lgc`) or check the power cap (`nvidia-smi -q -d POWER`), then re-time")
    return Fix(kind="advice", rule=rule, metric="latency_drift_ratio", direction="down",
               text="pin the CPU frequency governor to performance, cool down between runs, then re-time")


def _artifact(ctx: _Context, rule: str) -> str:
    if rule.startswith(("thermal.throttle", "thermal.clock")) and ctx.smi is not None:
        return ctx.smi.source
    if ".ncu_" in rule and ctx.ncu_source is not None:
        return ctx.ncu_source
    return ctx.run_artifact


def run_artifact_label(run: RunRecord, path: str | None = None) -> str:
    """How a run is cited: the imported artifact file, else the record (or workload) path, else its name."""
    if run.source.kind != "replay" and run.source.files:
        return run.source.files[0].path
    if path is not None:
        return path
    if run.source.files:
        return f"replay of {run.source.files[0].path}"
    return f"run record '{run.name}'"


EXTRA_METRICS: tuple[str, ...] = ("latency_p50_ms", "busy_p50_ms", "max_rel_err")
"""Run metrics a ``Fix`` may name besides the single-run rule metrics (``STATE_METRICS``)."""


def measure_metric(run: RunRecord, metric: str, fingerprint: Fingerprint | None = None) -> float | None:
    """The value of ``metric`` (as a ``Fix`` names it) on one run; None when the run cannot give it.

    Lets the playbook check that a fix moved its metric the expected way:
    ``measure_metric(fixed, fix.metric)`` versus ``measure_metric(candidate, fix.metric)``.
    Metrics that need an attached artifact (nvidia-smi, ncu) return None.
    """
    if metric == "latency_p50_ms":
        return _p50(run.outcome.latency_samples_ms)
    if metric == "busy_p50_ms":
        return _p50(run.schedule.busy_samples_ms)
    if metric == "max_rel_err":
        errs = _rel_errs(run)
        return max(errs.values()) if errs else None
    if metric not in STATE_METRICS:
        return None
    roof = machine_roofline(run, fingerprint)
    ctx = _Context(
        run=run,
        baseline=None,
        ncu=None,
        ncu_source=None,
        smi=None,
        fingerprint=fingerprint,
        roofline=roof,
        intensities=layer_intensities(run, roof) if roof is not None else [],
        run_artifact=run_artifact_label(run),
    )
    result = METRICS[metric](ctx)
    return result.value if isinstance(result, _Fact) else None


def ncu_kernels(report: NcuReport) -> list[NcuEvidence]:
    """The kernels of an Nsight Compute report, as classification needs them."""
    out: list[NcuEvidence] = []
    for kernel in report.kernels:
        out.append(
            NcuEvidence(
                name=kernel.name,
                kernel_class=kernel.kernel_class,
                sm_pct=kernel.sm_throughput_pct,
                mem_pct=kernel.memory_throughput_pct,
                spill_requests=kernel.local_spill_requests,
                duration_us=kernel.duration_us,
            )
        )
    return out


def smi_evidence(report: SmiReport, fingerprint: Fingerprint | None = None) -> SmiEvidence:
    """What classification needs of an imported nvidia-smi log (the most throttled GPU when several).

    Busy samples are those without the ``gpu_idle`` reason (or, without a reasons
    column, with utilisation above 0); a busy sample is throttled when a power or
    thermal reason is active. The maximum SM clock is the log's own reference
    unless it is only the maximum observed and the fingerprint knows the GPU's.
    """
    from sparsedebug.sources.importers.nvidia_smi import POWER_REASONS, THERMAL_REASONS

    limiting = POWER_REASONS | THERMAL_REASONS
    fp_max = next((g.max_sm_clock_mhz for g in fingerprint.gpus if g.max_sm_clock_mhz), None) if fingerprint else None
    best: SmiEvidence | None = None
    for summary in report.summaries:
        group = [s for s in report.samples if s.gpu == summary.gpu]
        if report.reasons_column is not None:
            busy = [s for s in group if s.reasons_mask is not None and not s.reasons_mask & 0x1]
        else:
            busy = [s for s in group if (s.util_gpu_pct or 0.0) > 0.0]
        throttled = [s for s in busy if limiting.intersection(s.reasons)]
        counts: dict[str, int] = {}
        for sample in throttled:
            for reason in limiting.intersection(sample.reasons):
                counts[reason] = counts.get(reason, 0) + 1
        max_clock, max_source = summary.max_sm_clock_mhz, summary.max_clock_source
        if max_source == "max observed" and fp_max is not None:
            max_clock, max_source = fp_max, "fingerprint clocks.max.sm"
        clocks = [s.sm_clock_mhz for s in busy if s.sm_clock_mhz is not None]
        candidate = SmiEvidence(
            source=report.file if len(report.summaries) == 1 else f"{report.file} (gpu {summary.gpu})",
            samples=len(group),
            busy_samples=len(busy),
            throttled_busy_samples=len(throttled),
            throttle_reasons=counts,
            min_busy_sm_clock_mhz=min(clocks) if clocks else None,
            max_sm_clock_mhz=max_clock,
            max_clock_source=max_source,
            has_reasons=report.reasons_column is not None,
        )
        if best is None or candidate.throttled_busy_samples > best.throttled_busy_samples:
            best = candidate
    if best is None:
        raise UserError(f"{report.file}: no GPU samples in the nvidia-smi log")
    return best


def classify_run(
    run: RunRecord,
    *,
    baseline: RunRecord | None = None,
    ncu: NcuReport | None = None,
    smi: SmiReport | None = None,
    fingerprint: Fingerprint | None = None,
    gpu: str | None = None,
    run_path: str | None = None,
) -> Classification:
    """Score all five mechanisms for ``run`` (against ``baseline`` when given), rank them, name the winner.

    ``ncu`` and ``smi`` are imported artifacts attached as evidence; ``fingerprint``
    supplies the calibrated roofline for replays and the core count; ``gpu`` names
    the GPU for the peak-table roofline of imported runs when no fingerprint says
    it; ``run_path`` is how to cite the run when it has no source file.
    """
    return classify_evidence(
        run,
        baseline=baseline,
        ncu=ncu_kernels(ncu) if ncu is not None else None,
        ncu_source=ncu.file if ncu is not None else None,
        smi=smi_evidence(smi, fingerprint or run.fingerprint) if smi is not None else None,
        fingerprint=fingerprint,
        gpu=gpu,
        run_path=run_path,
    )


def classify_evidence(
    run: RunRecord,
    *,
    baseline: RunRecord | None = None,
    ncu: list[NcuEvidence] | None = None,
    ncu_source: str | None = None,
    smi: SmiEvidence | None = None,
    fingerprint: Fingerprint | None = None,
    gpu: str | None = None,
    run_path: str | None = None,
) -> Classification:
    """``classify_run`` over evidence already reduced to what classification needs."""
    roof = machine_roofline(run, fingerprint, gpu)
    ctx = _Context(
        run=run,
        baseline=baseline,
        ncu=ncu,
        ncu_source=ncu_source or ("Nsight Compute report" if ncu is not None else None),
        smi=smi,
        fingerprint=fingerprint,
        roofline=roof,
        intensities=layer_intensities(run, roof) if roof is not None else [],
        run_artifact=run_artifact_label(run, run_path),
    )
    facts: dict[str, _Result] = {metric: compute(ctx) for metric, compute in METRICS.items()}
    base_facts: dict[str, _Result] = {}
    if baseline is not None:
        base_roof = machine_roofline(baseline, fingerprint, gpu)
        base_ctx = _Context(
            run=baseline,
            baseline=None,
            ncu=None,
            ncu_source=None,
            smi=None,
            fingerprint=fingerprint,
            roofline=base_roof,
            intensities=layer_intensities(baseline, base_roof) if base_roof is not None else [],
            run_artifact=run_artifact_label(baseline),
        )
        base_facts = {metric: METRICS[metric](base_ctx) for metric in STATE_METRICS}
    evidence: list[Evidence] = []
    missing: list[tuple[Rule, _Missing]] = []
    for rule in RULES:
        result = facts[rule.metric]
        if isinstance(result, _Missing):
            missing.append((rule, result))
            continue
        base_result = base_facts.get(rule.metric)
        if isinstance(base_result, _Fact):
            _gate_shared_with_baseline(rule, result, base_result)
        evidence.append(_evaluate(rule, result))

    totals: dict[Mechanism, float] = {m: 0.0 for m in Mechanism}
    fired: dict[Mechanism, int] = {m: 0 for m in Mechanism}
    evaluated: dict[Mechanism, int] = {m: 0 for m in Mechanism}
    missed: dict[Mechanism, int] = {m: 0 for m in Mechanism}
    for line in evidence:
        totals[line.mechanism] += line.contribution
        fired[line.mechanism] += int(line.fired)
        evaluated[line.mechanism] += int(line.value is not None)
    for rule, _ in missing:
        missed[rule.mechanism] += 1
    order = list(Mechanism)
    ranked = sorted(order, key=lambda m: (-totals[m], evaluated[m] == 0, order.index(m)))
    scores = [
        MechanismScore(
            mechanism=m,
            rank=i + 1,
            score=round(totals[m], 6),
            status="supported" if fired[m] else ("not_supported" if evaluated[m] else "unknown"),
            rules_fired=fired[m],
            rules_evaluated=evaluated[m],
            rules_missing=missed[m],
        )
        for i, m in enumerate(ranked)
    ]
    winner = ranked[0] if totals[ranked[0]] > 0 else None
    margin = None
    proving = None
    fix = None
    if winner is not None:
        runner_up = totals[ranked[1]]
        margin = totals[winner] / runner_up if runner_up > 0 else None
        top = max((e for e in evidence if e.mechanism == winner and e.fired), key=lambda e: e.contribution)
        proving = f"{_artifact(ctx, top.rule)}: {top.source}: {top.detail}"
        fix = _suggest_fix(winner, top, facts, ctx)

    inputs = [ctx.run_artifact]
    if baseline is not None:
        inputs.append(run_artifact_label(baseline))
    if ctx.ncu_source is not None:
        inputs.append(ctx.ncu_source)
    if smi is not None:
        inputs.append(smi.source)
    return Classification(
        run=run.name,
        baseline=baseline.name if baseline is not None else None,
        inputs=inputs,
        scores=scores,
        evidence=evidence,
        missing_evidence=_merge_missing(missing),
        winner=winner,
        margin=margin,
        proving_artifact=proving,
        fix=fix,
        roofline=roof,
        layers=ctx.intensities,
    )
