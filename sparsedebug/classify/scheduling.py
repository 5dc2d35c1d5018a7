"""Scheduling: the device waits (per-call host overhead, launch gaps, conversions per call, oversubscribed threads).

Each rule sits on the metric it reads; the fix recipes set the thread count, convert
weights once, or capture the forward in a CUDA graph.
"""

from __future__ import annotations

from sparsedebug.classify.context import (
    Context,
    Fact,
    Facts,
    Missing,
    Result,
    conversion_targets,
    converts_per_call,
)
from sparsedebug.classify.rule import Rule, RuleSet
from sparsedebug.core.stats import TAIL_MIN_SAMPLES, median, percentiles
from sparsedebug.records.basis import per_iteration
from sparsedebug.records.classification import Fix, Mechanism
from sparsedebug.records.notes import note
from sparsedebug.records.run import RunRecord

SCHEDULING = RuleSet(Mechanism.SCHEDULING)

# --------------------------------------------------------------------------- fixes


# A CUDA graph (or batching) is proposed only when the device's wait on the host is at least this share of the latency
# p50.
HOST_WAIT_MIN_SHARE = 0.05


def host_wait_supports_graph(run: RunRecord) -> bool | None:
    """Whether the measured host wait supports a fix that removes host overhead: host wait at least
    ``HOST_WAIT_MIN_SHARE`` of the latency p50 (None when the run does not split its idle time)."""
    host = per_iteration(run.schedule, run.schedule.host_wait_ms)  # a part of one forward, against the forward's p50
    samples = run.outcome.latency_samples_ms or run.schedule.span_samples_ms
    if host is None or not samples or median(samples) <= 0:
        return None
    return host >= HOST_WAIT_MIN_SHARE * median(samples)


def scheduling_fix(rule: Rule, facts: Facts) -> Fix | None:
    """Convert once when a replay converts per call; a CUDA graph for imported runs whose device waits on the host
    (no host-side fix where the measured host wait is about zero); else threads or batching."""
    ctx = facts.ctx
    cores = facts.data("thread_oversubscription").get("cores")
    if converts_per_call(ctx.run) and not ctx.imported:
        return Fix(kind="knob", knob="conversion", value="once", rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="convert_once", targets=conversion_targets(ctx.run))
    if ctx.imported:
        if host_wait_supports_graph(ctx.run) is False:
            return None  # the device does not wait on the host: no host-side fix
        return Fix(kind="advice", rule=rule.id, metric="span_busy_ratio", direction="down", code="cuda_graph")
    if isinstance(cores, int):
        return Fix(kind="knob", knob="threads", value=cores, rule=rule.id, metric="span_busy_ratio", direction="down",
                   code="set_threads")
    return Fix(kind="advice", rule=rule.id, metric="span_busy_ratio", direction="down", code="batch_calls")


def threads_fix(rule: Rule, facts: Facts) -> Fix | None:
    """Set threads to the logical core count when it is known; else ``scheduling_fix``."""
    cores = facts.data(rule.metric).get("cores")
    if isinstance(cores, int):
        return Fix(kind="knob", knob="threads", value=cores, rule=rule.id, metric="latency_p50_ms", direction="down",
                   code="set_threads")
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
        return Missing(note("mechanisms.no_span_busy"), note("mechanisms.capture_trace"))
    s, b = median(spans), median(busy)
    if b <= 0:
        return Missing(note("mechanisms.busy_zero"), note("mechanisms.capture_trace"))
    base_span: float | None = None
    base_busy: float | None = None
    if ctx.baseline is not None and ctx.baseline.schedule.span_samples_ms and ctx.baseline.schedule.busy_samples_ms:
        bs, bb = median(ctx.baseline.schedule.span_samples_ms), median(ctx.baseline.schedule.busy_samples_ms)
        if bb > 0:
            base_span, base_busy = bs, bb
    detail = note("mechanisms.span_vs_busy", span_ms=s, busy_ms=b, iterations=len(spans), base_span_ms=base_span, base_busy_ms=base_busy)
    return Fact(s / b, "schedule.span_samples_ms / busy_samples_ms", detail, amount=s - b)


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
            return Missing(note("mechanisms.no_idle_split"), note("mechanisms.capture_trace"))
        return Fact(None, "schedule.host_wait_ms", note("mechanisms.replay_no_idle_split"))
    if host + kern <= 0:
        return Fact(0.0, "schedule.host_wait_ms", note("mechanisms.no_idle_time"))
    return Fact(
        host / (host + kern),
        "schedule.host_wait_ms / (host_wait_ms + kernel_wait_ms)",
        note("mechanisms.host_vs_kernel_wait", host_ms=per_iteration(ctx.run.schedule, host), kernel_ms=per_iteration(ctx.run.schedule, kern)),
        amount=per_iteration(ctx.run.schedule, host),
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
        return Missing(note("mechanisms.no_span_busy"), note("mechanisms.capture_trace"))
    if not launches:
        return Missing(note("mechanisms.no_launches"), note("mechanisms.capture_trace" if ctx.imported else "mechanisms.capture_replay"))
    per = median(overhead) / launches
    return Fact(
        per,
        "schedule.span-busy p50 / launches_per_iteration",
        note("mechanisms.overhead_per_launch", overhead_ms=median(overhead), launches=launches, per_launch_us=per * 1e3),
        amount=median(overhead),
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
        return Missing(note("mechanisms.no_baseline", judged="regression"), note("mechanisms.capture_baseline"))
    cand_lat, base_lat = ctx.run.outcome.latency_samples_ms, ctx.baseline.outcome.latency_samples_ms
    cand_ovh, base_ovh = overhead_samples(ctx.run), overhead_samples(ctx.baseline)
    if not cand_lat or not base_lat:
        return Missing(note("mechanisms.no_latency_either"), note("mechanisms.capture_latency_samples"))
    if not cand_ovh or not base_ovh:
        return Missing(note("mechanisms.no_span_busy_either"), note("mechanisms.capture_trace"))
    d_lat = median(cand_lat) - median(base_lat)
    d_ovh = median(cand_ovh) - median(base_ovh)
    detail = note("mechanisms.overhead_regression", base_latency_ms=median(base_lat), cand_latency_ms=median(cand_lat),
                  latency_change_ms=d_lat, base_overhead_ms=median(base_ovh), cand_overhead_ms=median(cand_ovh),
                  overhead_change_ms=d_ovh, slower=d_lat > 0)
    if d_lat <= 0:
        return Fact(None, "outcome.latency_samples_ms vs baseline", detail)
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
        return Fact(0.0, "lower.layers[].conversions_per_call", note("mechanisms.no_conversion"))
    samples = ctx.run.outcome.latency_samples_ms
    lat = median(samples) if samples else None
    if lat is None or lat <= 0:
        return Missing(note("mechanisms.no_latency"), note("mechanisms.capture_latency_samples"))
    untimed = [lo.name for lo in converting if lo.conversion_ms is None]
    if untimed:
        return Missing(note("mechanisms.conversion_untimed", layers=untimed), note("mechanisms.capture_replay"))
    cost = sum((lo.conversion_ms or 0.0) * lo.conversions_per_call for lo in converting)
    return Fact(
        cost / lat,
        "lower.layers[].conversion_ms*conversions_per_call / outcome.latency p50",
        note("mechanisms.conversion_cost", count=len(converting), cost_ms=cost, latency_ms=lat),
        amount=cost,
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
            return Fact(None, "schedule.threads", note("mechanisms.imported_no_threads"))
        return Missing(note("mechanisms.no_threads"), note("mechanisms.capture_replay"))
    cores = ctx.cores()
    if cores is None:
        return Missing(note("mechanisms.cores_unknown", threads=threads), note("mechanisms.capture_fingerprint"))
    return Fact(
        threads / cores,
        "schedule.threads / fingerprint cpu.logical_cores",
        note("mechanisms.threads_on_cores", threads=threads, cores=cores),
        context={"cores": cores},
    )


@SCHEDULING.rule(
    "scheduling.tail_spread", ">", 1.50, "ratio", 1.0,
    source=["outcome.latency_samples_ms"],
    description="Wide latency tail (p99 far above p50): queueing or interference.",
    suggest=scheduling_fix, one_run=True, sample_shape=True,
)
def latency_tail_ratio(ctx: Context) -> Result:
    """Latency p99 over p50; missing below ``TAIL_MIN_SAMPLES`` samples."""
    samples = ctx.run.outcome.latency_samples_ms
    if len(samples) < TAIL_MIN_SAMPLES:
        return Missing(note("mechanisms.few_samples_tail", n=len(samples)), note("mechanisms.capture_repeats", at_least=TAIL_MIN_SAMPLES, ordered=False))
    pct = percentiles(samples)
    return Fact(
        pct.p99 / pct.p50 if pct.p50 > 0 else 0.0,
        "outcome.latency_samples_ms p99 / p50",
        note("mechanisms.latency_percentiles", p50_ms=pct.p50, p95_ms=pct.p95, p99_ms=pct.p99, n=pct.n),
    )
