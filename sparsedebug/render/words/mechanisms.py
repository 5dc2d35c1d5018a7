"""Phrases for the notes classify's compute, scheduling and thermal rules, attribution and scoring write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.records.notes import NoteValue
from sparsedebug.records.stats import P99_FEW_SAMPLES
from sparsedebug.render.words.dispatch import causes_from_values
from sparsedebug.render.words.notes import Phrase, as_names, embedded, figure, say


def _fallback_layers(v: Mapping[str, NoteValue]) -> str:
    named = [f"{layer} ({reason})" for layer, reason in zip(as_names(v.get("layers")), as_names(v.get("reasons")), strict=False)]
    return ", ".join(named) or "none"


def _fallback_flops(v: Mapping[str, NoteValue]) -> str:
    return f"{figure(v, 'lost_flops'):.3g} of {figure(v, 'total_flops'):.3g} FLOPs declared sparse run dense; fallback layers: {_fallback_layers(v)}"


def _fallback_count(v: Mapping[str, NoteValue]) -> str:
    return (f"{v['lost']} of {v['declared']} layers declared sparse run dense (no FLOPs declared); "
            f"fallback layers: {_fallback_layers(v)}")


def _neighbours_precision(v: Mapping[str, NoteValue]) -> str:
    changed = ", ".join(f"{layer} {how}" for layer, how in zip(as_names(v.get("layers")), as_names(v.get("changes")), strict=False))
    return (f"{v['count']} layer(s) outside the declared-sparse ones changed path, each with a precision change "
            f"({changed}): counted as precision (precision.dtype_change)")


def _neighbour_growth(v: Mapping[str, NoteValue]) -> str:
    text = (f"{figure(v, 'grown_ms'):.3f} of {figure(v, 'total_ms'):.3f} ms latency growth per iteration in {v['count']} "
            f"changed-path neighbour(s); largest {v['layer']} +{figure(v, 'layer_ms'):.3f} ms ({_change(v)})")
    causes = causes_from_values(v)
    return text + (f"; cause seen in the trace: {'; '.join(causes)}" if causes else "")


def _change(v: Mapping[str, NoteValue]) -> str:
    """``dense/x -> dense/y, attention backend cudnn -> math, cause seen in the trace: ...`` (the path and its dispatch)."""
    text = f"{v.get('path_before')} -> {v.get('path_after')}"
    if v.get("backend_before") is not None:
        text += f", {v.get('op')} backend {v.get('backend_before')} -> {v.get('backend_after')}"
    causes = causes_from_values(v)
    return text + (f", cause seen in the trace: {'; '.join(causes)}" if causes else "")


def _fallback_time(v: Mapping[str, NoteValue]) -> str:
    text = f"{figure(v, 'fallback_ms'):.3f} of {figure(v, 'total_ms'):.3f} ms summed kernel p50 in fallback layers"
    if v.get("untimed"):
        text += f" ({v['timed']} layers timed, {v['untimed']} without kernel samples)"
    if v.get("layer") is not None:
        text += f"; largest {v['layer']} {figure(v, 'layer_ms'):.3f} ms ({v.get('reason')})"
    return text


def _sparse_vs_dense(v: Mapping[str, NoteValue]) -> str:
    return (f"{v['count']} compute-bound sparse layers: sparse {figure(v, 'sparse_ms'):.3f} ms vs dense {figure(v, 'dense_ms'):.3f} ms "
            f"(p50 sums); worst {v['layer']} {figure(v, 'layer_sparse_ms'):.3f} vs {figure(v, 'layer_dense_ms'):.3f} ms")


def _span_vs_busy(v: Mapping[str, NoteValue]) -> str:
    text = f"span p50 {figure(v, 'span_ms'):.3f} ms vs busy p50 {figure(v, 'busy_ms'):.3f} ms over {v['iterations']} iterations"
    if v.get("base_span_ms") is not None and figure(v, "base_busy_ms") > 0:
        bs, bb = figure(v, "base_span_ms"), figure(v, "base_busy_ms")
        text += f"; baseline {bs:.3f} vs {bb:.3f} ms ({bs / bb:.2f}x)"
    return text


def _overhead_regression(v: Mapping[str, NoteValue]) -> str:
    text = (f"latency p50 {figure(v, 'base_latency_ms'):.3f} -> {figure(v, 'cand_latency_ms'):.3f} ms ({figure(v, 'latency_change_ms'):+.3f}); "
            f"non-kernel time p50 {figure(v, 'base_overhead_ms'):.3f} -> {figure(v, 'cand_overhead_ms'):.3f} ms "
            f"({figure(v, 'overhead_change_ms'):+.3f})")
    return text if v.get("slower") else text + ": the candidate is not slower than the baseline"


def _repeats(v: Mapping[str, NoteValue]) -> str:
    return f"re-run with at least {v['at_least']} (better 50+) repeats" + (" in order" if v.get("ordered") else "")


def _window_or(v: Mapping[str, NoteValue], otherwise: str) -> str:
    """The clock log's window note in words, else ``otherwise``."""
    window = embedded(v, "window")
    return say(window) if window is not None else otherwise


def _window(v: Mapping[str, NoteValue]) -> str:
    """The clock log's window note and, against a baseline, what the baseline's window shows."""
    window, base_window = embedded(v, "window"), embedded(v, "base_window")
    text = f" [{say(window)}]" if window is not None else ""
    if "base_window_recorded" in v:
        text += f"; baseline: {say(base_window) if base_window is not None else 'not recorded'}"
    if v.get("base_value") is not None:
        text += f"; baseline's window: {figure(v, 'base_value'):.3g}"
    return text


def _smi_throttled(v: Mapping[str, NoteValue]) -> str:
    reasons = ", ".join(as_names(v.get("reasons"))) or "none"
    return f"{v['throttled']} of {v['busy']} non-idle samples under a power/thermal reason ({reasons})" + _window(v)


def _smi_clock(v: Mapping[str, NoteValue]) -> str:
    return (f"lowest non-idle SM clock {figure(v, 'min_mhz'):.0f} MHz vs max {figure(v, 'max_mhz'):.0f} MHz ({v['max_source']})"
            + _window(v))


def _latency_drift(v: Mapping[str, NoteValue]) -> str:
    return (f"first third p50 {figure(v, 'first_ms'):.3f} ms, last third p50 {figure(v, 'last_ms'):.3f} ms; "
            f"Spearman rho {figure(v, 'rho'):+.2f} (p={figure(v, 'p'):.2g}, n={v['n']})")


def _part_conversion(v: Mapping[str, NoteValue]) -> str:
    where = ("the host gap before its compute, measured in the forward" if v.get("measured")
             else "timed apart (no per-layer host gap recorded)")
    return (f"re-converts its weights {v['per_call']}x per call (baseline {v['base_per_call']}x): {where}; "
            f"the conversion timed apart changes it by {figure(v, 'timed_ms'):+.3f} ms")


def _moved(v: Mapping[str, NoteValue]) -> str:
    return ("backend " if v.get("moved") == "backend" else "") + f"{v.get('before')} -> {v.get('after')}"


PHRASES: dict[str, Phrase] = {
    # What a metric reads on this run (Evidence.detail).
    "mechanisms.none_declared_sparse": "no layer is declared sparse: nothing can fall back",
    "mechanisms.fallback_flops": _fallback_flops,
    "mechanisms.fallback_layers": _fallback_count,
    "mechanisms.neighbours_changed_precision": _neighbours_precision,
    "mechanisms.no_neighbour_changed": "no layer outside the declared-sparse ones changed kernel path",
    "mechanisms.neighbours_latency_flat": "{count} neighbour(s) changed path, but latency did not grow",
    "mechanisms.neighbour_growth": _neighbour_growth,
    "mechanisms.fallback_time": _fallback_time,
    "mechanisms.no_compute_bound_pairs": "no compute-bound sparse layer with dense reference timings (ridge {ridge:.1f} FLOP/B)",
    "mechanisms.sparse_vs_dense": _sparse_vs_dense,
    "mechanisms.ncu_not_for_replay": "replay on the built-in CPU kernel: Nsight Compute does not apply",
    "mechanisms.span_vs_busy": _span_vs_busy,
    "mechanisms.replay_no_idle_split": "replay: the CPU is host and device, no idle split",
    "mechanisms.no_idle_time": "no idle time between kernels",
    "mechanisms.host_vs_kernel_wait": "host wait {host_ms:.3f} ms vs kernel wait {kernel_ms:.3f} ms per iteration",
    "mechanisms.overhead_per_launch": "{overhead_ms:.3f} ms non-kernel time per iteration over {launches} launches = {per_launch_us:.1f} us each",
    "mechanisms.overhead_regression": _overhead_regression,
    "mechanisms.no_conversion": "no layer converts its weights on every call",
    "mechanisms.conversion_cost": "{count} layers convert on every call: {cost_ms:.3f} ms per call vs latency p50 {latency_ms:.3f} ms",
    "mechanisms.imported_no_threads": "imported GPU run: host compute threads not recorded",
    "mechanisms.threads_on_cores": "{threads} threads on {cores} logical cores",
    "mechanisms.latency_percentiles": "p50 {p50_ms:.3f} ms, p95 {p95_ms:.3f} ms, p99 {p99_ms:.3f} ms (n={n})",
    "mechanisms.smi_unaligned": lambda v: _window_or(v, "the log is not aligned to the run (context only)"),
    "mechanisms.smi_no_sample": lambda v: _window_or(v, "no sample inside the run's window"),
    "mechanisms.smi_not_for_replay": "the replay ran on the CPU: an nvidia-smi log does not describe it",
    "mechanisms.smi_all_idle": "{samples} samples, all with the GPU idle",
    "mechanisms.smi_throttled": _smi_throttled,
    "mechanisms.smi_clock": _smi_clock,
    "mechanisms.latency_drift": _latency_drift,
    # Why a rule may not fire on its value (Evidence.gate).
    "mechanisms.gate_baseline_shares": "the baseline shows it too ({base_value:.3g}): not what changed",
    "mechanisms.gate_not_finite": "not a finite number: {value}",
    "mechanisms.gate_no_baseline_window": "the log has no sample in the baseline's window: no difference between the runs to score",
    "mechanisms.gate_baseline_window_same": "the baseline's window shows the same: not what changed",
    "mechanisms.gate_no_trend": "no significant upward trend (Spearman p >= {alpha:g} or rho <= 0)",
    "mechanisms.gate_busy_flat": ("GPU busy time is flat (last third p50 {last_ms:.3f} vs first {first_ms:.3f} ms): "
                                  "the drift is host-side, not thermal"),
    # Why a metric cannot be computed (MissingEvidence.reason).
    "mechanisms.no_baseline": lambda v: ("no baseline: a path change cannot be judged" if v.get("judged") == "path_change"
                                         else "no baseline run to compare against"),
    "mechanisms.no_latency_both": "no whole-forward latency samples on both sides",
    "mechanisms.no_kernel_samples": "no per-layer kernel samples in the run",
    "mechanisms.ncu_no_sm": "{file}: no Compute (SM) Throughput for {kernel}",
    "mechanisms.no_span_busy": "no span or busy samples in the schedule stage",
    "mechanisms.busy_zero": "busy time is zero",
    "mechanisms.no_idle_split": "idle time not split into host wait and kernel wait",
    "mechanisms.no_launches": "launches per iteration not recorded",
    "mechanisms.no_latency_either": "latency samples missing in the run or the baseline",
    "mechanisms.no_span_busy_either": "span/busy samples missing in the run or the baseline",
    "mechanisms.no_latency": "no latency samples in the outcome stage",
    "mechanisms.conversion_untimed": "conversion time not recorded for {layers}",
    "mechanisms.no_threads": "thread count not recorded in the schedule stage",
    "mechanisms.cores_unknown": "{threads} threads, but the machine's core count is unknown",
    "mechanisms.few_samples_tail": lambda v: (f"only {v['n']} latency samples: p99 is inconclusive "
                                              f"({P99_FEW_SAMPLES.format(n=v['n'])})"),
    "mechanisms.few_samples_drift": "only {n} latency samples: a drift across iterations cannot be tested",
    "mechanisms.no_smi_log": "no nvidia-smi log",
    "mechanisms.no_cpu_clock": "no clock record for the replay (CPU frequency was not sampled)",
    "mechanisms.smi_no_reasons": "{file}: no clocks_event_reasons.active column",
    "mechanisms.smi_no_clock": "{file}: no SM clock column or no non-idle sample",
    # What to capture to settle it (MissingEvidence.capture).
    "mechanisms.capture_baseline": "pass the baseline run with --baseline",
    "mechanisms.capture_trace": "import a PyTorch profiler trace with CUDA activities (`sparsedebug import trace`)",
    "mechanisms.capture_replay": "replay the workload",
    "mechanisms.capture_replay_both": "replay both workloads",
    "mechanisms.capture_latency_samples": "re-run with latency samples recorded",
    "mechanisms.capture_repeats": _repeats,
    "mechanisms.capture_fingerprint": ("a fingerprint of that machine: `sparsedebug freeze -o fp.yaml` there, then "
                                       "`sparsedebug classify RUN --fingerprint fp.yaml` (the walk records one itself)"),
    "mechanisms.capture_ncu": ("profile the sparse GEMM with `ncu --section SpeedOfLight --section ComputeWorkloadAnalysis "
                               "--section MemoryWorkloadAnalysis --csv` and pass it with --ncu"),
    "mechanisms.capture_smi": ("capture `nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,"
                               "clocks_event_reasons.active --format=csv -lms 250` during the run and pass it with --smi"),
    "mechanisms.capture_cpu_freq": ("sample CPU frequency during the replay (`/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq`, "
                                    "or `perf stat -e cycles`) and pin the governor to performance"),
    # What on one part of the latency change supports its mechanism (AttributedPart.evidence).
    "mechanisms.part_conversion": _part_conversion,
    "mechanisms.part_fallback": lambda v: f"declared {v.get('intended')} but runs dense ({v.get('reason') or 'no reason recorded'})",
    "mechanisms.part_precision_path": lambda v: f"path moved onto a wider/other precision: {_moved(v)} ({v.get('how')})",
    "mechanisms.part_sparse_path": lambda v: f"the declared sparse path: {_moved(v)}",
    "mechanisms.part_path_changed": lambda v: f"path changed: {_moved(v)}",
    "mechanisms.part_precision": "precision {how}",
    "mechanisms.part_bytes": "bytes per call {base_bytes:.3g} -> {cand_bytes:.3g}",
    "mechanisms.part_copies": "time in copy kernels per iteration {base_ms:.3f} -> {cand_ms:.3f} ms",
    "mechanisms.part_clocks_fell": "same path, clocks fell inside the candidate's window",
    "mechanisms.part_threads_queue": "same path, threads queue for cores",
    "mechanisms.part_unexplained": "same path, same bytes: no mechanism evidence on this layer",
    "mechanisms.part_host_gap": "host gap before the layer's kernels",
    "mechanisms.part_gaps_outside": "GPU-idle time per iteration {base_ms:.3f} -> {cand_ms:.3f} ms, less the gaps before layers",
}
