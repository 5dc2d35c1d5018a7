"""Phrases for the notes the classify code writes (see ``sparsedebug.render.words.notes``), the capture
instructions a missing metric names (``classify.context.Capture``), and each rule's suggested test (by rule id)."""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.records.notes import NoteValue
from sparsedebug.render.words.dispatch import causes_from_values
from sparsedebug.render.words.notes import Phrase, as_names

# How to capture or pass what settles a missing metric, by ``Capture`` code.
CAPTURE_WORDS: dict[str, str] = {
    "smi": (
        "capture `nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,"
        "clocks_event_reasons.active --format=csv -lms 250` during the run and pass it with --smi"
    ),
    "ncu": (
        "profile the sparse GEMM with `ncu --section SpeedOfLight --section ComputeWorkloadAnalysis "
        "--section MemoryWorkloadAnalysis --csv` and pass it with --ncu"
    ),
    "calibration": (
        "calibrate the replay machine: `sparsedebug playbook run --calibrate`, or `sparsedebug freeze --calibrate -o fp.yaml` "
        "and `sparsedebug classify RUN --fingerprint fp.yaml`"
    ),
    "trace": "import a PyTorch profiler trace with CUDA activities (`sparsedebug import trace`)",
    "baseline": "pass the baseline run with --baseline",
    "cpu_freq": (
        "sample CPU frequency during the replay (`/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq`, "
        "or `perf stat -e cycles`) and pin the governor to performance"
    ),
    "gpu_name": (
        "name the GPU: `sparsedebug classify RUN --gpu NAME` (H200, H100 SXM, H100 PCIe), or a fingerprint from that machine: "
        "`sparsedebug classify RUN --fingerprint fp.yaml`"
    ),
    "replay": "replay the workload",
    "replay_both": "replay both workloads",
    "replay_baseline": "replay the baseline workload",
    "replay_error": "replay the workload (it measures error vs fp64)",
    "replay_quality": "replay the workload (it measures output cosine vs dense)",
    "replay_shapes": "replay the workload or import a trace with record_shapes",
    "replay_bytes": "replay the workload again with this sparsedebug (it records value and metadata bytes per layer)",
    "replay_equivalent": "replay an equivalent workload (`sparsedebug replay`): it records value and metadata bytes per layer",
}

# Each rule's suggested test (the rule table's last column, and the advice when the rule's own recipe is the fix).
RULE_FIX: dict[str, str] = {
    "compute.fallback_flops": "pad the largest fallback layer to an aligned shape (or exclude it from sparsity)",
    "compute.neighbour_path_change": "restore the neighbour's fast path: make its input contiguous, keep its dtype, drop the mask",
    "compute.fallback_time": "pad or exclude the fallback layer that costs the most time",
    "compute.sparse_not_faster": "exclude the layer from sparsity, or use a larger block so the sparse kernel skips work efficiently",
    "compute.ncu_sm_bound": "check the sparse kernel chosen for the shape (tile config); a larger token batch per call",
    "memory.metadata_bytes": "use a larger block V for V:N:M layers so fewer index bytes move per value",
    "memory.gather_traffic": "use a larger block V so each gathered activation row serves more weight rows",
    "memory.bytes_growth": "use a larger block V (fewer gathers) or keep the layer's weights compressed once",
    "memory.conversion_traffic": "convert once at load instead of on every call",
    "memory.low_intensity": "batch more tokens per call so each weight byte feeds more FLOPs",
    "memory.copy_time": "remove the extra copy (keep weights in the layout the kernel wants)",
    "memory.ncu_memory_bound": "a larger tile/block or more tokens per call to raise reuse",
    "memory.ncu_spills": "try another sparse kernel configuration for this shape",
    "scheduling.span_vs_busy": "capture the forward in a CUDA graph or batch calls",
    "scheduling.host_wait": "capture the forward in a CUDA graph or batch calls",
    "scheduling.per_call_overhead": "capture the forward in a CUDA graph or batch calls",
    "scheduling.overhead_regression": "remove the per-call overhead: CUDA graph, batching, or conversion once",
    "scheduling.per_call_conversion": "set conversion to once (compress at load)",
    "scheduling.oversubscription": "set threads to the number of logical cores",
    "scheduling.tail_spread": "pin threads and isolate the run; fewer threads than cores",
    "precision.dtype_change": "keep the changed layers in the baseline's precision",
    "precision.error_growth": "keep the drifting layer in fp32 (or fp32 accumulation)",
    "precision.error_vs_roundoff": "accumulate in fp32, or keep the layer in fp32",
    "precision.quality_drop": "keep the layers with the largest error in higher precision",
    "precision.guardrail": "keep the layers with the largest error in higher precision",
    "thermal.throttle_time": "lock clocks (nvidia-smi -lgc) or check the power cap before trusting a timing",
    "thermal.clock_drop": "lock clocks (nvidia-smi -lgc) or check the power cap before trusting a timing",
    "thermal.latency_drift": "fix clocks / CPU governor, then re-time with cool-down between runs",
}

_NOT_RECORDED: dict[tuple[str, str], str] = {
    ("sparse_bytes", "run"): "metadata and value bytes of the sparse layers are not recorded",
    ("tokens", "run"): "token count not recorded in the graph stage",
    ("layer_work", "run"): "no layer declares FLOPs and bytes",
    ("layer_work", "run_or_baseline"): "FLOPs and bytes per layer not recorded in the run or the baseline",
    ("graph_bytes", "run"): "graph bytes per layer not recorded",
    ("class_time", "run"): "no per-class kernel time in the run",
    ("rel_err", "run"): "no numeric error against an fp64 reference in the run",
    ("rel_err", "baseline"): "baseline has no numeric error for the run's layers",
    ("precision_or_k", "run"): "layer precision or inner dimension unknown",
    ("quality", "run"): "no output quality in the run",
    ("quality", "baseline"): "no output quality in the baseline",
}

_NO_BASELINE: dict[str, str] = {
    "bytes_moved": "no baseline to compare bytes moved with",
    "precision": "no baseline: a dtype or kernel-path change cannot be judged",
    "rel_err": "no baseline to compare numeric error with",
    "quality": "no baseline to compare quality with",
}

_NCU_SECTION: dict[str, str] = {
    "SpeedOfLight": "{report}: SpeedOfLight throughputs missing for {kernel}",
    "MemoryWorkloadAnalysis": "{report}: no Local Memory Spilling Requests for {kernel}",
    "ComputeWorkloadAnalysis": "{report}: no Compute (SM) Throughput for {kernel}",
}


class _NotRecorded:
    """A figure a note does not hold, under any format spec."""

    def __format__(self, spec: str) -> str:
        return "not recorded"


def _t(template: str) -> Phrase:
    """A ``str.format`` template whose figures may be missing (None shows as 'not recorded', whatever the format)."""

    def phrase(v: Mapping[str, NoteValue]) -> str:
        shown = {k: _NotRecorded() if x is None else ", ".join(map(str, x)) if isinstance(x, list) else x for k, x in v.items()}
        return template.format(**shown)

    return phrase


def _str(v: NoteValue) -> str:
    return "not recorded" if v is None else str(v)


def _num(v: NoteValue) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def capture_words(v: Mapping[str, NoteValue]) -> str:
    """The capture instruction a ``classify.capture`` note names."""
    return CAPTURE_WORDS[_str(v.get("what"))]


def _not_recorded(v: Mapping[str, NoteValue]) -> str:
    return _NOT_RECORDED[(_str(v.get("what")), _str(v.get("side", "run")))]


def _no_gathers(v: Mapping[str, NoteValue]) -> str:
    where = "imported run" if v.get("imported") else "no layer runs the built-in blocked V:N:M kernel"
    return f"{where}: no activation gathers to count"


def _ncu_missing(v: Mapping[str, NoteValue]) -> str:
    return _NCU_SECTION[_str(v.get("section"))].format(report=_str(v.get("report")), kernel=_str(v.get("kernel")))


def _ncu_kernel(v: Mapping[str, NoteValue]) -> str:
    parts = [_str(v.get("kernel"))[:60]]
    duration, sm, mem, spills = (_num(v.get(k)) for k in ("duration_us", "sm_pct", "mem_pct", "spill_requests"))
    if duration is not None:
        parts.append(f"{duration:.1f} us")
    if sm is not None:
        parts.append(f"SM {sm:.1f}%")
    if mem is not None:
        parts.append(f"memory {mem:.1f}%")
    if spills is not None:
        parts.append(f"spill requests {spills:.0f}")
    return ", ".join(parts)


def _precision_changes(v: Mapping[str, NoteValue]) -> str:
    lines = [f"{layer} {how}" for layer, how in zip(as_names(v.get("layers")), as_names(v.get("how")), strict=False)]
    if not lines:
        return "no layer changed precision against the baseline, and none moved onto an fp32 GEMM path"
    text = "; ".join(lines[:6]) + (f"; +{len(lines) - 6} more" if len(lines) > 6 else "")
    cause = causes_from_values(v)
    if cause and v.get("cause_layer") is not None:
        text += f"; cause seen in the trace for {_str(v.get('cause_layer'))}: {'; '.join(cause)}"
    return text


def _quality_verdicts(v: Mapping[str, NoteValue]) -> str:
    rows = zip(as_names(v.get("checks")), as_names(v.get("status")), strict=False)
    return "; ".join(f"{check}: {status}" for check, status in rows)


PHRASES: dict[str, Phrase] = {
    "classify.capture": capture_words,
    "classify.no_roofline": lambda v: (
        "no calibrated roofline for the replay machine" if v.get("gpu_known") else "GPU model unknown or not in the peak table: no roofline"
    ),
    "classify.not_recorded": _not_recorded,
    "classify.no_baseline": lambda v: _NO_BASELINE[_str(v.get("compares"))],
    "classify.no_sparse_layer": _t("no layer runs sparse: no {counts} traffic"),
    "classify.metadata_bytes": _t(
        "{metadata_bytes} metadata bytes for {value_bytes} value bytes over {layers} sparse layers; "
        "worst {worst} {worst_ratio:.3f}"
    ),
    "classify.no_gathers": _no_gathers,
    "classify.gather_bytes": _t(
        "{gathered_bytes:.3g} gathered activation bytes per call vs {dense_bytes:.3g} dense-GEMM bytes "
        "over {layers} blocked layers; worst {worst} ({intended}) {worst_ratio:.2f}x"
    ),
    "classify.bytes_growth": _t(
        "{bytes:.3g} bytes per call vs baseline {base_bytes:.3g}; most grown {worst} "
        "{worst_base_bytes:.3g} -> {worst_bytes:.3g}"
    ),
    "classify.no_conversion": _t("no layer converts its weights on every call"),
    "classify.conversion_bytes": _t("{conversion_bytes:.3g} conversion bytes per call ({layers} layers) vs {forward_bytes:.3g} forward bytes"),
    "classify.low_intensity": _t(
        "{below} of {layers} layers below the ridge {ridge:.1f} FLOP/B ({device}, {roofline}); "
        "intensity {intensity_min:.1f} to {intensity_max:.1f} FLOP/B"
    ),
    "classify.copies_in_layers": _t("replay: copies are part of the layer times, not timed apart"),
    "classify.copy_time": _t("{copy_ms:.3f} of {total_ms:.3f} ms in copy kernels"),
    "classify.ncu_not_applicable": _t("replay on the built-in CPU kernel: Nsight Compute does not apply"),
    "classify.ncu_metric_missing": _ncu_missing,
    "classify.latency_bound": _t("both throughputs below {below_pct:g}%: latency-bound, not memory-bound"),
    "classify.no_ncu_report": _t("no Nsight Compute report"),
    "classify.ncu_no_sparse_gemm": _t("{report}: no sparse GEMM kernel in the report"),
    "classify.ncu_kernel": _ncu_kernel,
    "classify.precision_changes": _precision_changes,
    "classify.rel_err_growth": _t("worst {worst}: rel err {base_rel_err:.3g} -> {rel_err:.3g} over {layers} layers"),
    "classify.rel_err_bound": _t(
        "worst {worst}: rel err {rel_err:.3g} vs bound {bound:.3g} for {precision} inputs "
        "with {accumulation} accumulation"
    ),
    "classify.cosine_drop": _t("cosine vs dense {base_cosine:.5f} -> {cosine:.5f}"),
    "classify.intent_differs": _t("sparsity intent differs from the baseline: the drop includes pruning"),
    "classify.no_quality_verdict": _t("no quality guardrail verdict on the run"),
    "classify.quality_verdicts": _quality_verdicts,
    "classify.not_finite": _t("not a finite number: {value}"),
}
