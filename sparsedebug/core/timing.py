"""The interleaved-rounds timing harness, noise-aware.

Variants are timed round-robin in one process (A B C, then B C A, then C A B
...), so slow drift of the machine (clock changes, other processes, thermal
state) hits every variant alike, and rotating the start of each round keeps any
one variant from always running first (after the caller's own work) or last. Raw
samples are returned; summarise them with medians and tails
(:mod:`sparsedebug.core.stats`), never a mean.

:func:`measure` also records, per round, the wall time, the process CPU time, the
involuntary context switches and the 1-minute load average, and flags rounds
that other processes disturbed (:data:`sparsedebug.records.timing.Flag`): wall
time far above CPU time (``off_cpu``), preemption during a slow round
(``preempted``), time lost in whole scheduler ticks (``tick_quantised``), a round
far slower than its variant's median (``outlier``). Flagged rounds are run again
(the whole round, in its original order) up to ``NoisePolicy.remeasure`` extra
rounds; a round re-measured clean replaces the flagged one. The result is
``unstable`` when flagged rounds remain beyond ``NoisePolicy.max_flagged_share``
or a variant's samples still spread beyond ``NoisePolicy.max_spread``, or when
other processes held the machine's spare cores for the whole measurement
(sustained contention: the machine's CPU time from ``/proc/stat`` minus this
process's, all its threads, over the wall time, see ``NoisePolicy.max_competing_cores``,
in windows of rounds covering most of the measurement, ``NoisePolicy.min_contended_share``;
a competitor that takes a core all along disturbs no single round more than
another, so the round flags cannot see it, while a burst disturbs a few rounds, which they do); a comparison on unstable timings is
not reported (gate and bisect call it inconclusive). :func:`interleaved` is the plain harness (no re-measurement).

With ``min_sample_ms`` (replays ask for ``records.defaults.MIN_SAMPLE_MS``), :func:`measure`
samples a call over several calls (:func:`calls_per_sample`), the
variants' calls alternating call by call within a round (:func:`_run_round`, bounded in time
by :data:`ROUND_BOUND`), each sample the median of the calls that kept the CPU
(``NoisePolicy.call_off_cpu_share``); the thresholds and machine readings live in :mod:`sparsedebug.core.noise`.
"""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sparsedebug.core.errors import UserError
from sparsedebug.core.noise import (
    Contention,
    NoisePolicy,
    Reading,
    load1,
    machine_cpu,
    scheduler_tick_ms,
    windowed_contention,
)
from sparsedebug.core.stats import median, quantiles
from sparsedebug.records.defaults import MAX_REPEATS, SAMPLE_CALLS, SAMPLE_CALLS_WITHIN_MS
from sparsedebug.records.notes import Note, note
from sparsedebug.records.timing import Flag, TimingQuality, VariantTiming

# Upper bound of the calls of one sample (a call under 10 us gets a sample shorter than the minimum).
MAX_CALLS_PER_SAMPLE = 1000

# Timed calls of each variant before the rounds when a sample holds several (:func:`call_times_ms`); they count as
# warm-up calls.
CALIBRATION_CALLS = 2

# A round of several calls a sample stops its passes once it has run this many times its planned length (the sample of
# the fastest variant, as calibrated, per variant) (a variant that turned a hundred times slower after the
# calibration, such as a threaded BLAS call whose threads lost their cores, would otherwise stretch the round a
# hundredfold); its samples then hold fewer calls (``Timed.sample_calls``), at least one.
ROUND_BOUND = 10.0

# The policy :func:`measure` applies when given none.
DEFAULT_POLICY = NoisePolicy()


@dataclass
class Clocks:
    """What the harness reads per round (injectable for tests)."""

    wall: Callable[[], float] = time.perf_counter
    cpu: Callable[[], float] = time.process_time
    switches: Callable[[], int] = lambda: int(resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw)
    load: Callable[[], float | None] = lambda: load1()
    # CPU seconds spent by every core so far and the number of cores, or None where unreadable.
    machine: Callable[[], tuple[float, int] | None] = lambda: machine_cpu()


@dataclass
class _Round:
    wall: float
    cpu: float
    switches: int
    load: float | None
    call: int
    flags: list[Flag] = field(default_factory=list)
    calls: int = 1
    # The sample: the median of its calls' wall times (several calls a sample), else ``wall``.
    per_call: float | None = None
    # Calls of a several-call sample left out of its median: the scheduler took the CPU from them.
    preempted: int = 0

    @property
    def sample(self) -> float:
        """The sample's value in ms: its one call, or the median of its calls."""
        return self.wall if self.per_call is None else self.per_call


@dataclass
class Timed:
    """What :func:`measure` returns: final samples (ms) per variant and how trustworthy they are."""

    samples: dict[str, list[float]]
    quality: TimingQuality
    # Per variant, for each final sample, the first call of that variant it timed (0-based, warm-up and calibration
    # calls counted).
    calls: dict[str, list[int]] = field(default_factory=dict)
    # Per variant, for each final sample, how many calls it holds (``calls_per_sample``, fewer where the round hit
    # :data:`ROUND_BOUND`).
    sample_calls: dict[str, list[int]] = field(default_factory=dict)
    # Calls of each variant per sample (:func:`calls_per_sample`): sample ``i`` times calls ``calls[name][i]`` to
    # ``calls[name][i] + calls_per_sample - 1`` and is their median.
    calls_per_sample: int = 1
    # Per final round, the variants in the order they ran (a re-measured round keeps its original order).
    order: list[list[str]] = field(default_factory=list)

    @property
    def stable(self) -> bool:
        """Whether the variants can be compared."""
        return self.quality.stable


def _check(variants: Mapping[str, Callable[[], object]], rounds: int, warmup: int) -> None:
    if rounds < 1:
        raise UserError(f"rounds={rounds}: need at least 1 timed round")
    if warmup < 0:
        raise UserError(f"warmup={warmup}: cannot be negative")
    if not variants:
        raise UserError("nothing to time: no variants given")


# ``order(round_index, names)``: the variants of one round in the order they run.
RoundOrder = Callable[[int, list[str]], list[str]]


def rotated(index: int, names: list[str]) -> list[str]:
    """The default round order: round ``r`` starts at variant ``r mod len(names)`` and goes on in the given order."""
    shift = index % len(names)
    return names[shift:] + names[:shift]


def _ordered(items: list[tuple[str, Callable[[], object]]], index: int, order: RoundOrder) -> list[tuple[str, Callable[[], object]]]:
    funcs = dict(items)
    names = order(index, [name for name, _ in items])
    if sorted(names) != sorted(funcs):
        raise ValueError(f"round order {names} is not a permutation of {sorted(funcs)}")
    return [(name, funcs[name]) for name in names]


def _run_round(
    items: list[tuple[str, Callable[[], object]]], index: int, clocks: Clocks, counter: dict[str, int],
    order: RoundOrder = rotated, number: int = 1, bound_ms: float = math.inf, policy: NoisePolicy = DEFAULT_POLICY,
) -> dict[str, _Round]:
    """One round: each variant's sample of ``number`` calls (wall and CPU time of all of them).

    One call each: the variants run one after the other, each read on its own. Several: the
    variants' calls alternate call by call (``number`` passes through the round's order),
    each call timed on its own (wall and process CPU time) and the sample the median of its
    calls, so a change of the machine's state within the round (a busy sibling core, a
    frequency step) falls on every variant alike instead of on whichever sample it
    overlapped. A call that lost more than ``policy.call_off_cpu_share`` of its wall time
    (and ``policy.min_lost_ms``) off the CPU (:func:`off_cpu`) timed the scheduler, not the call: the median
    is over the calls that kept the CPU (all of them when none did; ``_Round.preempted``
    counts the calls left out). CPU time and context switches are then read for the round as
    a whole: each variant gets the round's CPU share of its wall time and the round's
    switches, so the interference flags judge the round. The passes stop once the round has
    run ``bound_ms`` (every variant keeps the same count, at least one).
    """
    load = clocks.load()
    ordered = _ordered(items, index, order)
    out: dict[str, _Round] = {}
    if number == 1:
        for name, func in ordered:
            sw0, c0, w0 = clocks.switches(), clocks.cpu(), clocks.wall()
            func()
            w1, c1, sw1 = clocks.wall(), clocks.cpu(), clocks.switches()
            out[name] = _Round((w1 - w0) * 1000.0, (c1 - c0) * 1000.0, sw1 - sw0, load, counter[name])
            counter[name] += 1
        return out
    wall, cpu = clocks.wall, clocks.cpu
    spent: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in ordered}
    sw0, c0, w0 = clocks.switches(), cpu(), wall()
    passes = 0
    while passes < number:
        for name, func in ordered:
            start, start_cpu = wall(), cpu()
            func()
            spent[name].append((wall() - start, cpu() - start_cpu))
        passes += 1
        if (wall() - w0) * 1000.0 > bound_ms:
            break
    w1, c1, sw1 = wall(), cpu(), clocks.switches()
    cpu_share = (c1 - c0) / (w1 - w0) if w1 > w0 else 1.0
    for name, _ in ordered:
        calls_ms = [(w * 1000.0, c * 1000.0) for w, c in spent[name]]
        walls = [w for w, _ in calls_ms]
        kept = [w for w, c in calls_ms if not off_cpu(w, c, policy.call_off_cpu_share, policy)] or walls
        total = sum(walls)
        out[name] = _Round(
            total, total * cpu_share, sw1 - sw0, load, counter[name], calls=passes, per_call=median(kept),
            preempted=len(walls) - len(kept),
        )
        counter[name] += passes
    return out


def off_cpu(wall_ms: float, cpu_ms: float, share: float, policy: NoisePolicy) -> bool:
    """Whether a timed stretch (a round's sample, or one call) spent over ``share`` of its wall time off the CPU, and
    over ``policy.min_lost_ms`` (shorter losses are timer and wake-up noise): other processes held the CPU."""
    lost = wall_ms - cpu_ms
    return lost > policy.min_lost_ms and lost > share * wall_ms


def call_times_ms(items: list[tuple[str, Callable[[], object]]], clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """The fastest and the slowest variant, each by its fastest of :data:`CALIBRATION_CALLS` timed calls, in ms (warm-up for the rounds)."""
    best = {name: math.inf for name, _ in items}
    for _ in range(CALIBRATION_CALLS):
        for name, func in items:
            start = clock()
            func()
            best[name] = min(best[name], (clock() - start) * 1000.0)
    return min(best.values()), max(best.values())


def calls_per_sample(fastest_ms: float, slowest_ms: float, min_sample_ms: float) -> int:
    """How many calls one sample holds: enough for the fastest variant to last ``min_sample_ms``, and at
    least :data:`~sparsedebug.records.defaults.SAMPLE_CALLS` while the slowest variant's sample fits in
    :data:`~sparsedebug.records.defaults.SAMPLE_CALLS_WITHIN_MS` (at most :data:`MAX_CALLS_PER_SAMPLE`).

    Every variant takes the same number of calls (a paired round compares like with like),
    so every sample lasts at least the minimum; the count stays low where one variant is
    slow (a regression four times slower needs no averaging to be seen).
    """
    if fastest_ms <= 0.0:
        return MAX_CALLS_PER_SAMPLE
    by_time = math.ceil(min_sample_ms / fastest_ms)
    by_count = min(SAMPLE_CALLS, math.floor(SAMPLE_CALLS_WITHIN_MS / slowest_ms)) if slowest_ms > 0 else SAMPLE_CALLS
    return max(1, min(MAX_CALLS_PER_SAMPLE, max(by_time, by_count)))


def interleaved(
    variants: Mapping[str, Callable[[], object]], rounds: int, warmup: int = 1, *,
    log: list[list[str]] | None = None, order: RoundOrder = rotated,
) -> dict[str, list[float]]:
    """Time each variant once per round for ``rounds`` rounds; samples in ms (no flags, no re-measurement).

    By default round ``r`` starts at variant ``r mod len(variants)`` and goes on in the
    given order (:func:`rotated`), so every variant takes every position equally often;
    ``order`` replaces that rule. When ``log`` is given, each round's variants are
    appended to it in the order they ran.

    ``warmup`` untimed rounds run first (caches, lazy allocation, BLAS thread
    start-up). Returns ``{name: [ms per round]}`` with ``rounds`` samples each,
    measured with ``time.perf_counter``.
    """
    _check(variants, rounds, warmup)
    items = list(variants.items())
    for _ in range(warmup):
        for _, func in items:
            func()
    samples: dict[str, list[float]] = {name: [] for name, _ in items}
    clock = time.perf_counter
    for round_index in range(rounds):
        ran: list[str] = []
        for name, func in _ordered(items, round_index, order):
            start = clock()
            func()
            samples[name].append((clock() - start) * 1000.0)
            ran.append(name)
        if log is not None:
            log.append(ran)
    return samples


def _flag(r: _Round, typical: float, tick: float, policy: NoisePolicy) -> list[Flag]:
    flags: list[Flag] = []
    lost = r.wall - r.cpu
    if off_cpu(r.wall, r.cpu, policy.off_cpu_share, policy):
        flags.append("off_cpu")
    slow = r.wall > policy.slow_factor * typical and r.wall - typical > policy.min_lost_ms
    if slow and r.switches > 0:
        flags.append("preempted")
    excess = max(lost, r.wall - typical)
    if excess >= (1.0 - policy.tick_tolerance) * tick and (slow or "off_cpu" in flags):
        ticks = excess / tick
        if abs(ticks - round(ticks)) <= policy.tick_tolerance:
            flags.append("tick_quantised")
    if slow:
        flags.append("outlier")
    return flags


def _spread(values: list[float]) -> tuple[float, float]:
    p10, p50, p90 = quantiles(values, (10.0, 50.0, 90.0))
    return ((p90 - p10) / p50 if p50 > 0 else math.inf), p90 - p10


def measure(
    variants: Mapping[str, Callable[[], object]],
    rounds: int,
    warmup: int = 1,
    *,
    policy: NoisePolicy | None = None,
    clocks: Clocks | None = None,
    order: RoundOrder = rotated,
    min_sample_ms: float = 0.0,
    settle: Callable[[dict[str, list[float]]], bool] | None = None,
    settle_budget_s: float = 0.0,
) -> Timed:
    """Time interleaved rounds as :func:`interleaved` (``order``: each round's order), flag interference,
    re-measure flagged rounds (in their original order), judge stability.

    ``min_sample_ms`` > 0 (``records.defaults.MIN_SAMPLE_MS`` is the usual choice): after the warm-up,
    :func:`calls_per_sample` sets how many calls each sample holds; the variants' calls
    then alternate call by call within each round (:func:`_run_round`) and each sample is
    its calls' median (``Timed.calls_per_sample``); the interference flags judge the whole
    sample, as timed. 0: one call per sample.

    ``settle`` (the samples so far -> whether their comparison has settled): after the rounds and their
    re-measurement, batches of further rounds (half as many each) are timed until it says so or
    ``settle_budget_s`` of wall time has passed on them; unsettled past the budget, the
    timings are unstable (``core.timing_unsettled``) and ``TimingQuality.ratio_settled`` says which.
    """
    _check(variants, rounds, warmup)
    pol = policy or DEFAULT_POLICY
    clk = clocks or Clocks()
    tick = scheduler_tick_ms()
    items = list(variants.items())
    for _ in range(warmup):
        for _, func in items:
            func()
    number, bound = 1, math.inf
    if min_sample_ms > 0:
        fastest, slowest = call_times_ms(items, clk.wall)
        number = calls_per_sample(fastest, slowest, min_sample_ms)
        bound = ROUND_BOUND * max(min_sample_ms, number * fastest) * len(items)
    counter = {name: warmup + (CALIBRATION_CALLS if min_sample_ms > 0 else 0) for name, _ in items}
    readings: list[Reading] = [(clk.wall(), clk.cpu(), clk.machine())]

    def timed_round(index: int) -> dict[str, _Round]:
        row = _run_round(items, index, clk, counter, order, number, bound, pol)
        readings.append((clk.wall(), clk.cpu(), clk.machine()))
        return row

    table = [timed_round(i) for i in range(rounds)]
    typical = {name: median([r[name].wall for r in table]) for name, _ in items}
    for row in table:
        for name, r in row.items():
            r.flags = _flag(r, typical[name], tick, pol)
    first_flags = [f for row in table for r in row.values() for f in r.flags]
    flagged = [i for i, row in enumerate(table) if any(r.flags for r in row.values())]
    budget = rounds if pol.remeasure is None else pol.remeasure
    used = 0
    for index in flagged:
        while used < budget and any(r.flags for r in table[index].values()):
            redo = timed_round(index)
            used += 1
            for name, r in redo.items():
                r.flags = _flag(r, typical[name], tick, pol)
            if not any(r.flags for r in redo.values()):
                table[index] = redo
    settled = None if settle is None else _settle(table, lambda: timed_round(len(table)), settle, settle_budget_s, clk,
                                                  (typical, tick, pol))
    samples = {name: [row[name].sample for row in table] for name, _ in items}
    busy = windowed_contention(readings, pol)
    quality = _quality(items, table, samples, flagged, first_flags, used, tick, pol, busy, number)
    if settled is not None:
        problems = quality.problems + ([] if settled else [note("core.timing_unsettled", rounds=len(table), budget_s=settle_budget_s)])
        quality = quality.model_copy(update={
            "ratio_settled": settled, "settle_rounds": len(table) - rounds, "problems": problems,
            "status": "unstable" if problems else "stable",
        })
    calls = {name: [row[name].call for row in table] for name, _ in items}
    counts = {name: [row[name].calls for row in table] for name, _ in items}
    return Timed(
        samples=samples, quality=quality, calls=calls, order=[list(row) for row in table], sample_calls=counts, calls_per_sample=number
    )


def _settle(
    table: list[dict[str, _Round]], timed_round: Callable[[], dict[str, _Round]], settle: Callable[[dict[str, list[float]]], bool],
    budget_s: float, clk: Clocks, flagging: tuple[dict[str, float], float, NoisePolicy],
) -> bool:
    """Add batches of rounds to ``table`` (half as many as it holds, at least 2) until ``settle`` says the samples
    settled or ``budget_s`` of wall time has passed on them, each round flagged as the rest (``flagging``: the
    variants' typical times, the tick, the policy); whether they settled."""
    typical, tick, pol = flagging
    batch = max(2, len(table) // 2)
    started = clk.wall()

    def samples() -> dict[str, list[float]]:
        return {name: [row[name].sample for row in table] for name in table[0]}

    settled = settle(samples())
    while not settled and clk.wall() - started < budget_s and len(table) < MAX_REPEATS:
        for _ in range(batch):
            row = timed_round()
            for name, r in row.items():
                r.flags = _flag(r, typical[name], tick, pol)
            table.append(row)
        settled = settle(samples())
    return settled


def _quality(
    items: list[tuple[str, Callable[[], object]]],
    table: list[dict[str, _Round]],
    samples: dict[str, list[float]],
    flagged: list[int],
    first_flags: list[Flag],
    used: int,
    tick: float,
    pol: NoisePolicy,
    busy: Contention | None = None,
    number: int = 1,
) -> TimingQuality:
    rounds = len(table)
    still = sum(1 for row in table if any(r.flags for r in row.values()))
    variants: list[VariantTiming] = []
    problems: list[Note] = []
    first = items[0][0]
    for name, _ in items:
        spread, width = _spread(samples[name])
        width *= median([row[name].calls for row in table])  # the spread of the samples as timed, against the timer-noise floor
        left = sum(1 for row in table if row[name].flags)
        if spread > pol.max_spread and width > pol.min_spread_ms:
            problems.append(note("core.timing_spread", variant=name, spread=spread, limit=pol.max_spread))
        if left > pol.max_flagged_share * rounds:
            ratios = [c / b for c, b in zip(samples[name], samples[first], strict=True) if b > 0]
            ratio_spread = _spread(ratios)[0] if name != first and ratios else None
            if ratio_spread is None and len(items) == 1:
                problems.append(note("core.timing_disturbed", variant=name, left=left, rounds=rounds, remeasured=used))
            elif ratio_spread is not None and ratio_spread > pol.max_ratio_spread:
                problems.append(note("core.timing_disturbed", variant=name, left=left, rounds=rounds, remeasured=used,
                                     against=first, ratio_spread=ratio_spread, limit=pol.max_ratio_spread))
        variants.append(
            VariantTiming(
                name=name, spread=spread, wall_ms=samples[name], cpu_ms=[row[name].cpu / row[name].calls for row in table],
                flagged=[list(row[name].flags) for row in table],
            )
        )
    contention_only = False
    if busy is not None and busy.sustained(pol):
        contention_only = not problems
        problems.append(note("core.timing_contention", others=busy.others, cores=busy.cores, ours=busy.ours, share=busy.contended_share))
    counts: dict[str, int] = {}
    for f in first_flags:
        counts[f] = counts.get(f, 0) + 1
    loads = [row[items[0][0]].load for row in table]
    return TimingQuality(
        status="unstable" if problems else "stable", problems=problems, rounds=rounds, flagged_rounds=len(flagged),
        remeasured_rounds=used, still_flagged=still, flags=counts, load_average=[v for v in loads if v is not None],
        cores=os.cpu_count(), competing_cores=None if busy is None else round(busy.others, 3),
        contended_share=None if busy is None else round(busy.contended_share, 3), tick_ms=tick,
        variants=variants, contention_only=contention_only, calls_per_sample=number,
        short_samples=sum(1 for row in table if min(r.calls for r in row.values()) < number),
        preempted_calls=sum(r.preempted for row in table for r in row.values()),
    )


def unstable_runs(qualities: list[tuple[str, TimingQuality | None]], *, same_rounds: bool = False) -> list[str]:
    """The named runs whose timings cannot be compared (empty when all can).

    ``same_rounds``: the runs were timed in the same rounds (one interleaved session), so
    sustained contention alone (``TimingQuality.contention_only``) does not stop the
    comparison: it slowed both sides of every round alike; nor does a spread of raw times
    once the per-round ratio settled (``TimingQuality.ratio_settled``).
    """
    return [
        name for name, quality in qualities
        if quality is not None and not quality.stable and not (same_rounds and (quality.contention_only or quality.ratio_settled))
    ]
