"""Which mechanism carries the measured latency change: each layer's and each gap's share, attributed by its evidence.

The measured change (candidate p50 - baseline p50 of the whole forward) is split into
the parts bisect already computes (:func:`sparsedebug.locate.walk.rank_layers`: each
layer's kernel time and the host gaps before it, per iteration), plus the host time
outside every layer. Each part goes to the mechanism its own evidence supports:

* a layer whose kernel path changed (``core.patterns.path_changed``): precision when it
  changed precision (``core.patterns.precision_changes``: its labels, or a move onto an
  fp32/SIMT path), compute otherwise; a layer declared sparse that runs dense, or the
  sparse kernel itself, is compute;
* a layer's changed per-call weight conversion (host work in the gap before its compute, never in its
  kernel samples: ``records.run``), and every added host gap, are scheduling;
* a layer's change of time in copy kernels (``KernelClass.COPY``: ``.contiguous()``, device-to-device copies) is
  memory where the copies are a change of their own: a layout op found as its own layer, or a layer whose path is
  otherwise the same (gaining or losing copies is no path change); copies on a changed path (the casts of an fp32
  fallback) belong to that path;
* a layer on an unchanged path that moves more bytes per call than in the baseline is memory;
* a layer on an unchanged path whose kernel time changed while the clocks dropped inside
  the candidate's own window (a fired thermal rule on windowed evidence) is thermal; one whose kernel time changed
  while the candidate runs more compute threads than cores (a fired oversubscription rule) is scheduling;
* anything else is left unattributed, and said to be.

The kernel parts and the gap parts add up to the change of busy time and of
the time outside it; what they leave is the busy time the layers' kernel
timings do not carry (ops outside the layers, kernels timed apart from the
forward), recorded as ``busy_residual_ms`` and said to be unattributed.

The winner is the mechanism that carries the largest share of the change in its
direction; the rule scores stay as the evidence behind each part.
"""

from __future__ import annotations

from collections import defaultdict

from sparsedebug.classify.context import Context
from sparsedebug.classify.roofline import layer_work
from sparsedebug.core.dispatch import dispatch_causes, dispatch_changed
from sparsedebug.core.judgement import judge, judgement_of
from sparsedebug.core.patterns import (
    PrecisionChange,
    declared_sparse,
    fell_back,
    kernel_classes,
    layout_op,
    path_changed,
    precision_changes,
)
from sparsedebug.core.stats import median
from sparsedebug.locate.common import calls_per_iteration, iteration_count, ms_per_iteration
from sparsedebug.locate.walk import rank_layers
from sparsedebug.records.classification import AttributedPart, Attribution, Evidence, Mechanism, MechanismShare, SettleCapture
from sparsedebug.records.notes import note
from sparsedebug.records.run import KernelClass, KernelPath, LowerLayer, RunRecord

# A layer moving this many times its baseline bytes per call carries a memory share.
BYTES_GROWTH = 1.05

# Rules on clock evidence inside the runs' own windows: when one fired, unchanged-path kernel time is thermal's.
THERMAL_RULES = ("thermal.clock_drop", "thermal.throttle_time")

# Rules on a state of the whole run that slows every kernel on an unchanged path (clocks fell; more compute threads
# than cores, so threads queue for cores): when one fired, unchanged-path kernel time goes to its mechanism.
STATE_RULES = (*THERMAL_RULES, "scheduling.oversubscription")

# Parts smaller than this (a nanosecond per iteration: float residue of equal medians) are dropped.
MIN_PART_MS = 1e-6

# The smallest pull against a share past 100% that is named: what prints as a nonzero ms at three decimals.
MIN_PULL_MS = 0.0005

GAPS_OUTSIDE_LAYERS = "host gaps outside the layers"


def _latency(run: RunRecord) -> list[float]:
    return run.outcome.latency_samples_ms or run.schedule.span_samples_ms


def _gap_ms(run: RunRecord) -> float | None:
    """Per-iteration time the GPU is not busy within the latency: latency p50 - busy p50 (None without both)."""
    lat, busy = _latency(run), run.schedule.busy_samples_ms
    if not lat or not busy:
        return None
    return median(lat) - median(busy)


def _conversion_ms(run: RunRecord, lower: LowerLayer | None, name: str) -> float:
    """Per-iteration host time of a layer's per-call weight conversions, as timed apart (``lower.conversion_ms``)."""
    if lower is None or not lower.conversions_per_call or lower.conversion_ms is None:
        return 0.0
    samples = next((k.samples_ms for k in run.kernel.layers if k.name == name), [])
    return lower.conversion_ms * lower.conversions_per_call * calls_per_iteration(samples, iteration_count(run))


def _copy_ms(run: RunRecord, name: str) -> float:
    """A layer's per-iteration time in copy kernels: its kernel time per iteration times the copy share of its kernels."""
    kernel = next((k for k in run.kernel.layers if k.name == name), None)
    if kernel is None or not kernel.samples_ms:
        return 0.0
    total = sum(kernel.by_class_ms.values())
    copy = kernel.by_class_ms.get(KernelClass.COPY.value, 0.0)
    return ms_per_iteration(kernel.samples_ms, run) * copy / total if total > 0 and copy > 0 else 0.0


def _copies_only(before: LowerLayer, after: LowerLayer) -> bool:
    """The layer's path differs only by copy kernels gained or lost (same path, dominant class and dispatch)."""
    copy = KernelClass.COPY.value
    return (before.path == after.path and before.kernel_class == after.kernel_class and not dispatch_changed(before, after)
            and [c for c in kernel_classes(before) if c != copy] == [c for c in kernel_classes(after) if c != copy])


def _copies_apart(name: str, before: LowerLayer | None, after: LowerLayer | None) -> bool:
    """Whether a layer's copy kernels are a change of their own: a layout op (``.contiguous()`` found as its own layer),
    or a layer whose path is otherwise the same. Copies on a changed path (the casts of an fp32 fallback) are that path's."""
    if before is None or after is None:
        return layout_op(name)
    return not path_changed(before, after) or _copies_only(before, after)


def _copy_part(name: str, ms: float, base_ms: float, cand_ms: float) -> AttributedPart:
    """A layer's change of time in copy kernels: memory (the bytes copied are the cost)."""
    return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.MEMORY, ms=ms, rule="memory.copy_time",
                          evidence=note("mechanisms.part_copies", base_ms=base_ms, cand_ms=cand_ms))


def _conversion_part(name: str, ms: float, before: LowerLayer | None, after: LowerLayer | None, timed_ms: float, measured: bool) -> AttributedPart:
    """A layer's changed per-call conversion: host work before its compute, so scheduling (the device waits on it)."""
    b = before.conversions_per_call if before is not None else 0
    a = after.conversions_per_call if after is not None else 0
    return AttributedPart(part=name, kind="conversion", mechanism=Mechanism.SCHEDULING, ms=ms, rule="scheduling.per_call_conversion",
                          evidence=note("mechanisms.part_conversion", per_call=a, base_per_call=b, measured=measured, timed_ms=timed_ms))


def _kernel_part(
    name: str, ms: float, before: LowerLayer | None, after: LowerLayer | None, intent: str | None,
    base_bytes: dict[str, float], cand_bytes: dict[str, float], precision: PrecisionChange | None, state: Evidence | None,
) -> AttributedPart:
    """A layer's kernel-time change, attributed by what its lowering shows."""
    if after is not None and fell_back(intent, after):
        reason = after.reason.value if after.reason is not None else None
        return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.COMPUTE, ms=ms, rule="compute.fallback_time",
                              evidence=note("mechanisms.part_fallback", intended=intent, reason=reason))
    if before is not None and after is not None and path_changed(before, after) and not _copies_only(before, after):
        cause = dispatch_causes(before.dispatch, after.dispatch)
        b = before.dispatch.backend if before.dispatch else None
        a = after.dispatch.backend if after.dispatch else None
        backend = bool(b and a and b != a)
        moved = {"moved": "backend" if backend else "path", "before": b if backend else _path(before),
                 "after": a if backend else _path(after)}
        if precision is not None:
            return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.PRECISION, ms=ms, rule="precision.dtype_change",
                                  evidence=note("mechanisms.part_precision_path", how=precision.how, **moved), cause=cause)
        if declared_sparse(intent) and after.path is KernelPath.SPARSE:
            return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.COMPUTE, ms=ms, rule="compute.sparse_not_faster",
                                  evidence=note("mechanisms.part_sparse_path", **moved))
        return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.COMPUTE, ms=ms, rule="compute.neighbour_path_change",
                              evidence=note("mechanisms.part_path_changed", **moved), cause=cause)
    if precision is not None:
        return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.PRECISION, ms=ms, rule="precision.dtype_change",
                              evidence=note("mechanisms.part_precision", how=precision.how), cause=list(precision.cause))
    if name in base_bytes and name in cand_bytes and base_bytes[name] > 0 and cand_bytes[name] > base_bytes[name] * BYTES_GROWTH:
        return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.MEMORY, ms=ms, rule="memory.bytes_growth",
                              evidence=note("mechanisms.part_bytes", base_bytes=base_bytes[name], cand_bytes=cand_bytes[name]))
    if state is not None and state.mechanism is Mechanism.THERMAL:
        return AttributedPart(part=name, kind="kernel", mechanism=Mechanism.THERMAL, ms=ms, rule=state.rule,
                              evidence=note("mechanisms.part_clocks_fell", rule=state.rule))
    if state is not None:
        return AttributedPart(part=name, kind="kernel", mechanism=state.mechanism, ms=ms, rule=state.rule,
                              evidence=note("mechanisms.part_threads_queue", rule=state.rule))
    return AttributedPart(part=name, kind="kernel", mechanism=None, ms=ms, evidence=note("mechanisms.part_unexplained"))


def _path(lower: LowerLayer) -> str:
    return lower.path.value + (f"/{lower.kernel_class.value}" if lower.kernel_class is not None else "")


def attribute(ctx: Context, evidence: list[Evidence]) -> Attribution | None:
    """Split the measured latency change of ``ctx.run`` against its baseline into attributed parts (None without both latencies)."""
    base, cand = ctx.baseline, ctx.run
    if base is None or not _latency(base) or not _latency(cand):
        return None
    base_p50, cand_p50 = median(_latency(base)), median(_latency(cand))
    delta = cand_p50 - base_p50
    state = next((e for rule in STATE_RULES for e in evidence if e.rule == rule and e.fired), None)
    b_lower, c_lower = ctx.lower(base), ctx.lower()
    intent = {g.name: g.intended for g in cand.graph.layers}
    base_bytes = {w.name: w.bytes for w in layer_work(base)}
    cand_bytes = {w.name: w.bytes for w in layer_work(cand)}
    precision = {c.layer: c for c in precision_changes(base, cand)}
    parts: list[AttributedPart] = []
    layer_idle = 0.0
    order = {lo.name: i for i, lo in enumerate(cand.lower.layers)}
    # Kernel samples hold the kernels alone; a per-call conversion is host work in the gap before the
    # layer's compute, outside busy time (records.run): each layer's host-gap change, conversion
    # included, and the gaps outside the layers add up to the change of (latency - busy) exactly.
    untimed_gap_conversion = 0.0
    ranked_layers = rank_layers(base, cand, set(), delta)
    for ranked in sorted(ranked_layers, key=lambda r: order.get(r.layer, len(order))):
        name = ranked.layer
        before, after = b_lower.get(name), c_lower.get(name)
        conversion = _conversion_ms(cand, after, name) - _conversion_ms(base, before, name)
        converts = (before.conversions_per_call if before else 0) != (after.conversions_per_call if after else 0)
        base_copy, cand_copy = _copy_ms(base, name), _copy_ms(cand, name)
        copies = cand_copy - base_copy if ranked.kernel_ms and _copies_apart(name, before, after) else 0.0
        if copies:
            parts.append(_copy_part(name, copies, base_copy, cand_copy))
        if ranked.kernel_ms - copies:
            parts.append(_kernel_part(name, ranked.kernel_ms - copies, before, after, intent.get(name), base_bytes, cand_bytes,
                                      precision.get(name), state))
        measured = name in base.schedule.layer_idle_samples_ms and name in cand.schedule.layer_idle_samples_ms
        if converts and not measured and conversion:
            # No per-layer host gap recorded: the conversion sits in the gaps outside the layers; carve it out.
            untimed_gap_conversion += conversion
            parts.append(_conversion_part(name, conversion, before, after, conversion, measured=False))
        if ranked.idle_ms:
            layer_idle += ranked.idle_ms
            if converts:
                parts.append(_conversion_part(name, ranked.idle_ms, before, after, conversion, measured=True))
            else:
                parts.append(AttributedPart(part=name, kind="gap", mechanism=Mechanism.SCHEDULING, ms=ranked.idle_ms,
                                            rule="scheduling.overhead_regression", evidence=note("mechanisms.part_host_gap")))
    b_gap, c_gap = _gap_ms(base), _gap_ms(cand)
    busy_residual = None
    if b_gap is not None and c_gap is not None:
        outside = (c_gap - b_gap) - layer_idle - untimed_gap_conversion
        busy_residual = (median(cand.schedule.busy_samples_ms) - median(base.schedule.busy_samples_ms)) - sum(
            r.kernel_ms for r in ranked_layers
        )
        if outside:
            parts.append(AttributedPart(part=GAPS_OUTSIDE_LAYERS, kind="gap", mechanism=Mechanism.SCHEDULING, ms=outside,
                                        rule="scheduling.span_vs_busy",
                                        evidence=note("mechanisms.part_gaps_outside", base_ms=b_gap, cand_ms=c_gap)))
    parts = [p for p in parts if abs(p.ms) >= MIN_PART_MS]
    shares = _mechanism_shares(parts, delta)
    attributed = sum(p.ms for p in parts if p.mechanism is not None)
    sign = 1.0 if delta >= 0 else -1.0
    return Attribution(
        growth_significant=_growth_significant(_latency(base), _latency(cand)),
        base_p50_ms=base_p50, cand_p50_ms=cand_p50, delta_ms=delta,
        parts=sorted(parts, key=lambda p: -sign * round(p.ms, 6)), mechanisms=shares, unattributed_ms=round(delta - attributed, 6),
        busy_residual_ms=round(busy_residual, 6) if busy_residual is not None else None,
    )


def _mechanism_shares(parts: list[AttributedPart], delta: float) -> list[MechanismShare]:
    """Each mechanism's sum of its parts, largest in the direction of the change first, with what pulls back a share past 100%."""
    sums: dict[Mechanism, float] = defaultdict(float)
    grew: dict[Mechanism, float] = defaultdict(float)
    shrank: dict[Mechanism, float] = defaultdict(float)
    largest: dict[Mechanism, AttributedPart] = {}
    counts: dict[Mechanism, int] = defaultdict(int)
    sign = 1.0 if delta >= 0 else -1.0
    for part in parts:
        if part.mechanism is None:
            continue
        sums[part.mechanism] += part.ms
        (grew if part.ms >= 0 else shrank)[part.mechanism] += part.ms
        counts[part.mechanism] += 1
        if part.mechanism not in largest or sign * part.ms > sign * largest[part.mechanism].ms:
            largest[part.mechanism] = part
    shares = [
        MechanismShare(mechanism=m, ms=round(ms, 6), share=round(ms / delta, 6) if delta else None, largest=largest[m].part, parts=counts[m],
                       positive_ms=round(grew[m], 6), negative_ms=round(shrank[m], 6))
        for m, ms in sums.items()
    ]
    shares.sort(key=lambda s: (-sign * s.ms, list(Mechanism).index(s.mechanism)))
    attributed = sum(sums.values())
    return [s.model_copy(update={"against": _against(s, shares, delta - attributed, sign)}) if (s.share or 0.0) > 1.0 else s
            for s in shares]


def _against(share: MechanismShare, shares: list[MechanismShare], unattributed: float, sign: float) -> list[str]:
    """What moves the other way from a share past 100% of the change, largest first: the other mechanisms whose share
    has the opposite sign, the unattributed rest when it does, and the mechanism's own parts that do."""
    pulls = [(m.ms, m.mechanism.value) for m in shares if m.mechanism != share.mechanism and sign * m.ms < -MIN_PULL_MS]
    if sign * unattributed < -MIN_PULL_MS:
        pulls.append((unattributed, "unattributed"))
    own = share.negative_ms if sign > 0 else share.positive_ms
    if sign * own < -MIN_PULL_MS:
        pulls.append((own, "own parts"))
    return [name for _, name in sorted(pulls, key=lambda p: sign * p[0])]


# Latency must grow by at least this fraction of the baseline p50 for the shares to rank the mechanisms.
MIN_GROWTH = 0.02

# The leading mechanism must carry at least this share of the growth to be the headline (established).
HEADLINE_MIN_SHARE = 0.40

# ... and at least this many times the runner-up's share.
HEADLINE_MIN_RATIO = 2.0


def _growth_significant(base: list[float], cand: list[float]) -> bool | None:
    """Whether the candidate's latency samples are a loss against the baseline's by the one rule (``core.judgement``);
    None when the rule finds them too few to judge (3 traced iterations a side: the median growth alone counts), or
    samples it cannot take."""
    try:
        verdict = judgement_of(judge(base, cand))
    except ValueError:
        return None
    return None if verdict == "inconclusive" else verdict == "loss"


def measured_growth(attribution: Attribution | None) -> bool:
    """Latency grew by more than ``MIN_GROWTH`` of the baseline p50, and not within noise (a rank test that could
    decide found it slower): a change the mechanisms must carry."""
    return (attribution is not None and attribution.delta_ms > MIN_GROWTH * attribution.base_p50_ms
            and attribution.growth_significant is not False)


def attributed_winner(attribution: Attribution | None) -> MechanismShare | None:
    """The mechanism that carries a latency growth clearly enough to be the headline: at least
    ``HEADLINE_MIN_SHARE`` of it and ``HEADLINE_MIN_RATIO`` times the runner-up's share. None when latency did
    not grow beyond ``MIN_GROWTH`` (the rule scores rank then), or when no mechanism carries it that clearly
    (the mechanism is not established)."""
    if attribution is None or not attribution.mechanisms or not measured_growth(attribution):
        return None
    top = attribution.mechanisms[0]
    if top.ms < HEADLINE_MIN_SHARE * attribution.delta_ms:
        return None
    runner_up = next((m for m in attribution.mechanisms[1:] if m.ms > 0), None)
    if runner_up is not None and top.ms < HEADLINE_MIN_RATIO * runner_up.ms:
        return None
    return top


def settle_capture(attribution: Attribution, clock_log_unaligned: bool) -> SettleCapture:
    """The one capture that would settle a growth no mechanism carries clearly: a clock log placed on the run's time
    axis when thermal is in question (a top candidate, or kernel time left unexplained beside an unaligned log),
    both sides re-traced under a CUDA graph when host scheduling is, else an Nsight Compute report of the changed kernels."""
    movers = [m for m in attribution.mechanisms if m.ms > 0][:2]
    names = {m.mechanism for m in movers}
    unexplained = attribution.unattributed_ms > max((m.ms for m in movers), default=0.0)
    if Mechanism.THERMAL in names or (unexplained and clock_log_unaligned):
        return "aligned_clock_log"
    if Mechanism.SCHEDULING in names:
        return "cuda_graph_retrace"
    return "ncu_report"


def largest_part(attribution: Attribution, mechanism: Mechanism) -> AttributedPart | None:
    """The part that carries the most of ``mechanism``'s share."""
    parts = [p for p in attribution.parts if p.mechanism == mechanism]
    if not parts:
        return None
    top = max(round(p.ms, 6) for p in parts)
    return next(p for p in parts if round(p.ms, 6) == top)
