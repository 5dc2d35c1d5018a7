"""Scheduling: the device waits (per-call host overhead, launch gaps, conversions per call, oversubscribed threads).

Each rule sits on the metric it reads; the fix recipes set the thread count, convert
weights once, or capture the forward in a CUDA graph.
"""

from __future__ import annotations

from sparsedebug.classify.context import (
    CAPTURE_BASELINE,
    CAPTURE_TRACE,
    Context,
    Fact,
    Facts,
    Missing,
    Result,
    converts_per_call,
)
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.stats import P99_FEW_SAMPLES, TAIL_MIN_SAMPLES, median, percentiles
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.run import RunRecord

SCHEDULING = RuleSet(Mechanism.SCHEDULING)

# --------------------------------------------------------------------------- fixes


# A CUDA graph (or batching) is proposed only when the device's wait on the host is at least this share of the latency
# p50.
HOST_WAIT_MIN_SHARE = 0.05


def host_wait_supports_graph(run: RunRecord) -> bool | None:
    """Whether the measured host wait supports a fix that removes host overhead: host wait at least
    ``HOST_WAIT_MIN_SHARE`` of the latency p50 (None when the run does not split its idle time)."""
    host = run.schedule.host_wait_ms
    samples = run.outcome.latency_samples_ms or run.schedule.span_samples_ms
    if host is None or not samples or median(samples) <= 0:
        return None
    return host >= HOST_WAIT_MIN_SHARE * median(samples)


def scheduling_fix(rule: Rule, facts: Facts) -> Fix | None:
    """Convert once when a replay converts per call; a CUDA graph for imported runs whose device waits on the host
    (none where the measured host wait is about zero: isolate the run for a wide tail, else no fix); else threads or batching."""
    ctx = facts.ctx
    cores = facts.data("thread_oversubscription").get("cores")
    if converts_per_call(ctx.run) and not ctx.imported:
        return Fix(kind="knob", knob="conversion", value="once", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="convert_once", text="convert weights once at load instead of on every call, and re-time")
    if ctx.imported:
        if host_wait_supports_graph(ctx.run) is False:
            if rule.id == "scheduling.tail_spread":
                return Fix(kind="advice", rule=rule.id, metric="latency_tail_ratio", direction="down", code="isolate_run",
                           text="pin threads and isolate the run, then re-trace")
            return None
        return Fix(kind="advice", rule=rule.id, metric="span_busy_ratio", direction="down", code="cuda_graph",
                   text="capture the forward in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace")
    if isinstance(cores, int):
        return Fix(kind="knob", knob="threads", value=cores, rule=rule.id, metric="span_busy_ratio", direction="down",
                   code="set_threads", text=f"set threads to {cores} and re-time; if the gap stays, batch calls")
    return Fix(kind="advice", rule=rule.id, metric="span_busy_ratio", direction="down", code="batch_calls",
               text="batch calls so per-call overhead is paid once per batch, then re-time")


def threads_fix(rule: Rule, facts: Facts) -> Fix | None:
    """Set threads to the logical core count when it is known; else ``scheduling_fix``."""
    cores = facts.data(rule.metric).get("cores")
    if isinstance(cores, int):
        return Fix(kind="knob", knob="threads", value=cores, rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="set_threads", text=f"set threads to {cores} (the logical core count) and re-time")
    return scheduling_fix(rule, facts)


# --------------------------------------------------------------------------- rules and their metrics


def overhead_samples(run: RunRecord) -> list[float]:
    """Non-kernel time per iteration (span minus busy); one p50 difference when the samples do not pair up."""
    spans, busy = run.schedule.span_samples_ms, run.schedule.busy_samples_ms
    if spans and len(spans) == len(busy):
        return [s - b for s, b in zip(spans, busy, strict=True)]
    if spans and busy:
        return [median(spans) - median(busy)]
    return []


@SCHEDULING.rule(
    "scheduling.span_vs_busy", ">", 1.30, "ratio", 2.0,
    source=["schedule.span_samples_ms", "schedule.busy_samples_ms"],
    description="Forward span much longer than the summed kernel time: the device waits between kernels.",
    suggest=scheduling_fix, one_run=True,
)
def span_busy_ratio(ctx: Context) -> Result:
    """Forward span p50 over busy (summed kernel) time p50."""
    spans, busy = ctx.run.schedule.span_samples_ms, ctx.run.schedule.busy_samples_ms
    if not spans or not busy:
        return Missing("no span or busy samples in the schedule stage", CAPTURE_TRACE)
    s, b = median(spans), median(busy)
    if b <= 0:
        return Missing("busy time is zero", CAPTURE_TRACE)
    detail = f"span p50 {s:.3f} ms vs busy p50 {b:.3f} ms over {len(spans)} iterations"
    if ctx.baseline is not None and ctx.baseline.schedule.span_samples_ms and ctx.baseline.schedule.busy_samples_ms:
        bs, bb = median(ctx.baseline.schedule.span_samples_ms), median(ctx.baseline.schedule.busy_samples_ms)
        if bb > 0:
            detail += f"; baseline {bs:.3f} vs {bb:.3f} ms ({bs / bb:.2f}x)"
    return Fact(s / b, "schedule.span_samples_ms / busy_samples_ms", detail)


@SCHEDULING.rule(
    "scheduling.host_wait", ">", 0.50, "share", 1.0,
    source=["schedule.host_wait_ms", "schedule.kernel_wait_ms"],
    description="Idle time dominated by waiting on the host (launch / per-call overhead).",
    suggest=scheduling_fix, one_run=True,
)
def host_wait_share(ctx: Context) -> Result:
    """Idle time spent waiting on the host over all idle time."""
    host, kern = ctx.run.schedule.host_wait_ms, ctx.run.schedule.kernel_wait_ms
    if host is None or kern is None:
        if ctx.imported:
            return Missing("idle time not split into host wait and kernel wait", CAPTURE_TRACE)
        return Fact(None, "schedule.host_wait_ms", "replay: the CPU is host and device, no idle split")
    if host + kern <= 0:
        return Fact(0.0, "schedule.host_wait_ms", "no idle time between kernels")
    return Fact(
        host / (host + kern),
        "schedule.host_wait_ms / (host_wait_ms + kernel_wait_ms)",
        f"host wait {host:.3f} ms vs kernel wait {kern:.3f} ms",
    )


@SCHEDULING.rule(
    "scheduling.per_call_overhead", ">", 0.02, "ms", 2.0,
    source=["schedule.span_samples_ms", "schedule.busy_samples_ms", "schedule.launches_per_iteration"],
    description="Non-kernel time per launched kernel or op: per-call host overhead (a launch costs a few microseconds).",
    suggest=scheduling_fix, one_run=True,
)
def overhead_per_launch_ms(ctx: Context) -> Result:
    """Non-kernel time per iteration (p50) divided over the launches of one iteration."""
    launches = ctx.run.schedule.launches_per_iteration
    overhead = overhead_samples(ctx.run)
    if not overhead:
        return Missing("no span or busy samples in the schedule stage", CAPTURE_TRACE)
    if not launches:
        return Missing("launches per iteration not recorded", CAPTURE_TRACE if ctx.imported else "replay the workload")
    per = median(overhead) / launches
    return Fact(
        per,
        "(schedule.span - busy) p50 / launches_per_iteration",
        f"{median(overhead):.3f} ms non-kernel time per iteration over {launches} launches = {per * 1e3:.1f} us each",
    )


@SCHEDULING.rule(
    "scheduling.overhead_regression", ">", 0.50, "share", 3.0,
    source=["schedule.span_samples_ms", "schedule.busy_samples_ms", "outcome.latency_samples_ms", "baseline"],
    description="Share of the latency regression against the baseline explained by non-kernel time.",
    suggest=scheduling_fix,
)
def overhead_regression_share(ctx: Context) -> Result:
    """Change of non-kernel time p50 over change of latency p50, candidate minus baseline."""
    if ctx.baseline is None:
        return Missing("no baseline run to compare against", CAPTURE_BASELINE)
    cand_lat, base_lat = ctx.run.outcome.latency_samples_ms, ctx.baseline.outcome.latency_samples_ms
    cand_ovh, base_ovh = overhead_samples(ctx.run), overhead_samples(ctx.baseline)
    if not cand_lat or not base_lat:
        return Missing("latency samples missing in the run or the baseline", "re-run with latency samples recorded")
    if not cand_ovh or not base_ovh:
        return Missing("span/busy samples missing in the run or the baseline", CAPTURE_TRACE)
    d_lat = median(cand_lat) - median(base_lat)
    d_ovh = median(cand_ovh) - median(base_ovh)
    detail = (
        f"latency p50 {median(base_lat):.3f} -> {median(cand_lat):.3f} ms ({d_lat:+.3f}); "
        f"non-kernel time p50 {median(base_ovh):.3f} -> {median(cand_ovh):.3f} ms ({d_ovh:+.3f})"
    )
    if d_lat <= 0:
        return Fact(None, "outcome.latency_samples_ms vs baseline", detail + ": the candidate is not slower than the baseline")
    return Fact(d_ovh / d_lat, "schedule.span-busy vs outcome.latency, candidate minus baseline", detail)


@SCHEDULING.rule(
    "scheduling.per_call_conversion", ">", 0.10, "share", 3.0,
    source=["lower.layers[].conversion_ms", "lower.layers[].conversions_per_call", "outcome.latency_samples_ms"],
    description="Weights are converted to the sparse format on every call, and it costs this share of the latency.",
    suggest=scheduling_fix, one_run=True,
)
def per_call_conversion_share(ctx: Context) -> Result:
    """Time the per-call weight conversions cost over the latency p50."""
    converting = [lo for lo in ctx.run.lower.layers if lo.conversions_per_call > 0]
    if not converting:
        return Fact(0.0, "lower.layers[].conversions_per_call", "no layer converts its weights on every call")
    samples = ctx.run.outcome.latency_samples_ms
    lat = median(samples) if samples else None
    if lat is None or lat <= 0:
        return Missing("no latency samples in the outcome stage", "re-run with latency samples recorded")
    untimed = [lo.name for lo in converting if lo.conversion_ms is None]
    if untimed:
        return Missing(f"conversion time not recorded for {', '.join(untimed)}", "replay the workload")
    cost = sum((lo.conversion_ms or 0.0) * lo.conversions_per_call for lo in converting)
    return Fact(
        cost / lat,
        "lower.layers[].conversion_ms x conversions_per_call / outcome latency p50",
        f"{len(converting)} layers convert on every call: {cost:.3f} ms per call vs latency p50 {lat:.3f} ms",
    )


@SCHEDULING.rule(
    "scheduling.oversubscription", ">", 1.0, "ratio", 3.0,
    source=["schedule.threads", "fingerprint.cpu.logical_cores"],
    description="More compute threads than logical cores: threads queue for cores.",
    suggest=threads_fix, one_run=True,
)
def thread_oversubscription(ctx: Context) -> Result:
    """Compute threads over logical cores."""
    threads = ctx.run.schedule.threads
    if threads is None:
        if ctx.imported:
            return Fact(None, "schedule.threads", "imported GPU run: host compute threads not recorded")
        return Missing("thread count not recorded in the schedule stage", "replay the workload")
    cores = ctx.cores()
    if cores is None:
        return Missing(
            f"{threads} threads, but the machine's core count is unknown",
            "a fingerprint of that machine: `sparsedebug freeze -o fp.yaml` there, then "
            "`sparsedebug classify RUN --fingerprint fp.yaml` (the walk records one itself)",
        )
    return Fact(
        threads / cores,
        "schedule.threads / fingerprint cpu.logical_cores",
        f"{threads} threads on {cores} logical cores",
        context={"cores": cores},
    )


@SCHEDULING.rule(
    "scheduling.tail_spread", ">", 1.50, "ratio", 1.0,
    source=["outcome.latency_samples_ms"],
    description="Wide latency tail (p99 far above p50): queueing or interference.",
    suggest=scheduling_fix, one_run=True,
)
def latency_tail_ratio(ctx: Context) -> Result:
    """Latency p99 over p50; missing below ``TAIL_MIN_SAMPLES`` samples."""
    samples = ctx.run.outcome.latency_samples_ms
    if len(samples) < TAIL_MIN_SAMPLES:
        return Missing(
            f"only {len(samples)} latency samples: p99 is inconclusive ({P99_FEW_SAMPLES.format(n=len(samples))})",
            f"re-run with at least {TAIL_MIN_SAMPLES} (better 50+) repeats",
        )
    pct = percentiles(samples)
    return Fact(
        pct.p99 / pct.p50 if pct.p50 > 0 else 0.0,
        "outcome.latency_samples_ms p99 / p50",
        f"p50 {pct.p50:.3f} ms, p95 {pct.p95:.3f} ms, p99 {pct.p99:.3f} ms (n={pct.n})",
    )
