"""The classification rules: one readable table, thresholds included.

Each rule reads one *metric* that ``sparsedebug.classify.score`` computes from a run
record (and, where given, its baseline, an Nsight Compute report, an nvidia-smi
log and a calibrated fingerprint), compares it with a threshold and, when it
fires, adds to its mechanism's score::

    contribution = weight * min(2, value / threshold)      for op ">"
    contribution = weight * min(2, threshold / value)      for op "<"

so a rule that fires contributes between its weight and twice its weight,
depending on how far past the threshold the metric is. A metric that cannot be
computed (the artifact it needs was not given) is not scored as absent: the
classification names the artifact that would settle it instead.

The README documents this table (``sparsedebug.render.terminal.classify.rules_markdown``
renders it); tests/test_rules.py has a test for every rule.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from sparsedebug.records.classification import Mechanism

STRENGTH_CAP = 2.0
"""A rule contributes at most this many times its weight."""


class Rule(BaseModel):
    """One row of the rule table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    mechanism: Mechanism
    metric: str
    source: str
    op: Literal[">", "<"]
    threshold: float
    unit: str
    weight: float
    description: str
    fix: str

    def fires(self, value: float) -> bool:
        """Whether ``value`` is past the threshold."""
        return value > self.threshold if self.op == ">" else value < self.threshold

    def contribution(self, value: float) -> float:
        """The score this rule adds for ``value``: 0 when it does not fire."""
        if not self.fires(value):
            return 0.0
        if self.op == ">":
            ratio = value / self.threshold if self.threshold > 0 else STRENGTH_CAP
        else:
            ratio = self.threshold / value if value > 0 else STRENGTH_CAP
        return self.weight * min(STRENGTH_CAP, max(1.0, ratio))


def _rule(
    id: str,
    mechanism: Mechanism,
    metric: str,
    source: str,
    op: Literal[">", "<"],
    threshold: float,
    unit: str,
    weight: float,
    description: str,
    fix: str,
) -> Rule:
    return Rule(
        id=id,
        mechanism=mechanism,
        metric=metric,
        source=source,
        op=op,
        threshold=threshold,
        unit=unit,
        weight=weight,
        description=description,
        fix=fix,
    )


C, M, S, P, T = (
    Mechanism.COMPUTE,
    Mechanism.MEMORY,
    Mechanism.SCHEDULING,
    Mechanism.PRECISION,
    Mechanism.THERMAL,
)

RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ compute
    _rule(
        "compute.fallback_flops", C, "fallback_flop_share",
        "lower.layers[].path/reason + graph.layers[].flops", ">", 0.10, "share", 3.0,
        "Share of the FLOPs declared sparse that lowered to a dense fallback (work not skipped).",
        "pad the largest fallback layer to an aligned shape (or exclude it from sparsity)",
    ),
    _rule(
        "compute.fallback_time", C, "fallback_time_share",
        "kernel.layers[].samples_ms of fallback layers", ">", 0.20, "share", 2.0,
        "Share of summed kernel time spent in layers declared sparse that run dense.",
        "pad or exclude the fallback layer that costs the most time",
    ),
    _rule(
        "compute.sparse_not_faster", C, "compute_bound_sparse_slowdown",
        "kernel.layers[].samples_ms vs dense_samples_ms, layers at or above the roofline ridge", ">", 1.0, "ratio", 1.0,
        "Compute-bound sparse layers whose sparse kernel is not faster than the dense one (p50 ratio sparse/dense).",
        "exclude the layer from sparsity, or use a larger block so the sparse kernel skips work efficiently",
    ),
    _rule(
        "compute.ncu_sm_bound", C, "ncu_sparse_sm_pct",
        "Nsight Compute SpeedOfLight Compute (SM) Throughput of the sparse GEMM", ">", 60.0, "%", 1.0,
        "The sparse GEMM is SM-bound by NVIDIA's Speed-of-Light rule (its SM throughput %).",
        "check the sparse kernel chosen for the shape (tile config); a larger token batch per call",
    ),
    # ------------------------------------------------------------------- memory
    _rule(
        "memory.metadata_bytes", M, "metadata_value_ratio",
        "lower.layers[].metadata_bytes / value_bytes", ">", 0.25, "ratio", 2.0,
        "Sparse-index metadata bytes per byte of kept values (small blocks carry more metadata).",
        "use a larger block V for V:N:M layers so fewer index bytes move per value",
    ),
    _rule(
        "memory.gather_traffic", M, "gather_traffic_ratio",
        "graph.layers[] shapes, intended V:N:M, tokens; lower.layers[].kernels (built-in blocked kernel)", ">", 2.0, "ratio", 2.0,
        "Activation bytes the blocked V:N:M kernel gathers per call (once per block of V rows) over the bytes the dense GEMM moves: small blocks re-read activations.",
        "use a larger block V so each gathered activation row serves more weight rows",
    ),
    _rule(
        "memory.bytes_growth", M, "bytes_moved_growth",
        "graph/lower bytes per call for the path each layer took (roofline.layer_work), candidate / baseline", ">", 1.5, "ratio", 2.0,
        "The candidate's layers move this many times the baseline's bytes per call (compressed weights, metadata, gathers).",
        "use a larger block V (fewer gathers) or keep the layer's weights compressed once",
    ),
    _rule(
        "memory.conversion_traffic", M, "conversion_traffic_ratio",
        "lower.layers[].conversions_per_call x (dense+value+metadata bytes) / graph bytes", ">", 0.50, "ratio", 1.0,
        "Bytes moved by weight conversions on every call, relative to the bytes the forward itself moves.",
        "convert once at load instead of on every call",
    ),
    _rule(
        "memory.low_intensity", M, "low_intensity_time_share",
        "graph.layers[].flops/bytes vs machine roofline ridge, weighted by kernel time", ">", 0.50, "share", 1.0,
        "Share of kernel time in layers whose arithmetic intensity is below the machine's ridge point.",
        "batch more tokens per call so each weight byte feeds more FLOPs",
    ),
    _rule(
        "memory.copy_time", M, "copy_time_share",
        "kernel.by_class_ms['copy'] / busy time", ">", 0.10, "share", 1.0,
        "Share of kernel time spent in copy kernels (extra layout copies, casts).",
        "remove the extra copy (keep weights in the layout the kernel wants)",
    ),
    _rule(
        "memory.ncu_memory_bound", M, "ncu_sparse_mem_minus_sm_pct",
        "Nsight Compute SpeedOfLight Memory minus Compute (SM) Throughput of the sparse GEMM", ">", 10.0, "points", 2.0,
        "The sparse GEMM is memory-bound by NVIDIA's Speed-of-Light rule (memory ahead of SM by 10+ points).",
        "a larger tile/block or more tokens per call to raise reuse",
    ),
    _rule(
        "memory.ncu_spills", M, "ncu_sparse_spill_requests",
        "Nsight Compute MemoryWorkloadAnalysis Local Memory Spilling Requests of the sparse GEMM", ">", 0.0, "requests", 1.0,
        "The sparse GEMM spills registers to local memory.",
        "try another sparse kernel configuration for this shape",
    ),
    # --------------------------------------------------------------- scheduling
    _rule(
        "scheduling.span_vs_busy", S, "span_busy_ratio",
        "schedule.span_samples_ms p50 / busy_samples_ms p50", ">", 1.30, "ratio", 2.0,
        "Forward span much longer than the summed kernel time: the device waits between kernels.",
        "capture the forward in a CUDA graph or batch calls",
    ),
    _rule(
        "scheduling.host_wait", S, "host_wait_share",
        "schedule.host_wait_ms / (host_wait_ms + kernel_wait_ms)", ">", 0.50, "share", 1.0,
        "Idle time dominated by waiting on the host (launch / per-call overhead).",
        "capture the forward in a CUDA graph or batch calls",
    ),
    _rule(
        "scheduling.per_call_overhead", S, "overhead_per_launch_ms",
        "(schedule.span - busy) p50 / schedule.launches_per_iteration", ">", 0.02, "ms", 2.0,
        "Non-kernel time per launched kernel or op: per-call host overhead (a launch costs a few microseconds).",
        "capture the forward in a CUDA graph or batch calls",
    ),
    _rule(
        "scheduling.overhead_regression", S, "overhead_regression_share",
        "(span-busy) p50 change / latency p50 change vs baseline", ">", 0.50, "share", 3.0,
        "Share of the latency regression against the baseline explained by non-kernel time.",
        "remove the per-call overhead: CUDA graph, batching, or conversion once",
    ),
    _rule(
        "scheduling.per_call_conversion", S, "per_call_conversion_share",
        "lower.layers[].conversion_ms x conversions_per_call / latency p50", ">", 0.10, "share", 3.0,
        "Weights are converted to the sparse format on every call, and it costs this share of the latency.",
        "set conversion to once (compress at load)",
    ),
    _rule(
        "scheduling.oversubscription", S, "thread_oversubscription",
        "schedule.threads / fingerprint cpu.logical_cores", ">", 1.0, "ratio", 3.0,
        "More compute threads than logical cores: threads queue for cores.",
        "set threads to the number of logical cores",
    ),
    _rule(
        "scheduling.tail_spread", S, "latency_tail_ratio",
        "outcome.latency_samples_ms p99 / p50", ">", 1.50, "ratio", 1.0,
        "Wide latency tail (p99 far above p50): queueing or interference.",
        "pin threads and isolate the run; fewer threads than cores",
    ),
    # ---------------------------------------------------------------- precision
    _rule(
        "precision.dtype_change", P, "precision_change_count",
        "graph.layers[].dtype, kernel.layers[].precision, lower kernel_class vs baseline", ">", 0.0, "layers", 2.0,
        "Layers whose dtype or kernel path moved to lower precision or onto an fp32 path against the baseline.",
        "keep the changed layers in the baseline's precision",
    ),
    _rule(
        "precision.error_growth", P, "rel_err_growth",
        "kernel.layers[].rel_err vs baseline's (same layer, both vs fp64 reference)", ">", 10.0, "ratio", 2.0,
        "Numeric error against the fp64 reference grew by this factor against the baseline.",
        "keep the drifting layer in fp32 (or fp32 accumulation)",
    ),
    _rule(
        "precision.error_vs_roundoff", P, "rel_err_over_bound",
        "kernel.layers[].rel_err / (u_input + u_fp32 * sqrt(K)) for the layer's precision", ">", 8.0, "ratio", 2.0,
        "Numeric error far beyond input rounding plus fp32 accumulation (accumulation in low precision, drift).",
        "accumulate in fp32, or keep the layer in fp32",
    ),
    _rule(
        "precision.quality_drop", P, "quality_cosine_drop",
        "outcome.quality.cosine: baseline minus candidate, same sparsity intent", ">", 0.01, "cosine", 2.0,
        "Output cosine vs the dense model fell against a baseline with the same sparsity intent.",
        "keep the layers with the largest error in higher precision",
    ),
    _rule(
        "precision.guardrail", P, "quality_guardrail_failures",
        "verdicts[] with 'quality' in check and status fail", ">", 0.0, "verdicts", 1.0,
        "A quality guardrail verdict failed on the candidate.",
        "keep the layers with the largest error in higher precision",
    ),
    # ------------------------------------------------------------------ thermal
    _rule(
        "thermal.throttle_time", T, "smi_throttle_share",
        "nvidia-smi clocks_event_reasons.active (power cap, HW slowdown, thermal), non-idle samples", ">", 0.05, "share", 2.0,
        "Share of busy nvidia-smi samples with a power or thermal clock-event reason active.",
        "lock clocks (nvidia-smi -lgc) or check the power cap before trusting a timing",
    ),
    _rule(
        "thermal.clock_drop", T, "smi_min_clock_ratio",
        "nvidia-smi clocks.sm, non-idle samples, vs max SM clock", "<", 0.90, "ratio", 2.0,
        "Lowest busy SM clock as a fraction of the maximum SM clock.",
        "lock clocks (nvidia-smi -lgc) or check the power cap before trusting a timing",
    ),
    _rule(
        "thermal.latency_drift", T, "latency_drift_ratio",
        "outcome.latency_samples_ms: last third p50 / first third p50 (Spearman trend p < 0.05)", ">", 1.05, "ratio", 2.0,
        "Latency drifts upward across iterations (a significant monotone trend).",
        "fix clocks / CPU governor, then re-time with cool-down between runs",
    ),
)
"""The rule table, grouped by mechanism in the playbook's order."""

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def rules_for(mechanism: Mechanism) -> list[Rule]:
    """The rules that score ``mechanism``, in table order."""
    return [rule for rule in RULES if rule.mechanism == mechanism]
