"""The replay: run a workload on the built-in kernels and record all five stages, whatever its graph source.

One driver for both graph sources (a declared graph or a real checkpoint,
:mod:`sparsedebug.sources.replay.protocol`); steps, in order (each reported to
``progress`` under its stage name):

``graph``
    The source checks its graph, builds or loads the weights and inputs, prunes
    to the intended patterns and records the layer inventory; every layer and
    the whole forward are projected onto the backend profile's GPU (the target
    clock, with provenance; none for ``cpu-numpy``).
``lower``
    The backend profile's decision per layer: the sparse path or a dense
    fallback with its reason; the sparse layers' conversion timed, value and
    metadata bytes; sparse layers projected slower than dense on the target flagged.
``kernel``
    Per layer, on the input it sees in the candidate forward: time samples of
    the chosen path's kernel and of the dense path, interleaved (a per-call
    conversion is not inside them: it is host work, timed apart in the lower
    stage, in the host gap before the layer and outside busy time; see
    ``records.run.KernelLayer``), and the numeric error of
    the chosen path against an fp64 product of the same pruned weights.
``schedule``
    Whole-forward samples of the candidate (span) against the dense baseline
    through the noise-aware harness (:func:`sparsedebug.core.timing.measure`:
    disturbed rounds flagged and re-measured, stability judged); the busy time
    inside each kept candidate forward, host overhead (span minus busy), the
    host time before each layer, the dense share of busy time.
``outcome``
    p50/p95/p99 against the budget (the SLA verdict), effective speedup versus
    the dense baseline (only when the timing is stable), output quality versus
    the dense unpruned model, and the equal-latency comparison against a
    narrowed dense model (:mod:`sparsedebug.sources.replay.equal_latency`: on the
    target clock for a GPU profile, this machine's search as the cross-check).

:func:`replay_pair` replays a baseline and a candidate workload in one interleaved
session: the kernel and schedule stages time both sides in the same rounds (each side's
call right after its own dense reference, the sides swapping every round,
:func:`alternating`), and each run records the session and the order of every round as
executed (``RunRecord.session``), so bisect and the gate compare them round by round
(:mod:`sparsedebug.core.paired`) and the machine's drift during the session cancels.

Numerics, decisions, projections and quality are a pure function of the
workload (same seed, same numbers); timings, and what is derived from them
(speedup, the narrowing found on this machine), vary run to run.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from threadpoolctl import threadpool_info, threadpool_limits

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.core.judgement import DEFAULT_RULE, judge, settled
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import Timed, interleaved, measure
from sparsedebug.records.defaults import MIN_SAMPLE_MS, SETTLE_BUDGET_S
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.notes import note
from sparsedebug.records.run import (
    GraphStage,
    KernelLayer,
    KernelStage,
    LowerStage,
    OutcomeStage,
    ReplaySession,
    RunRecord,
    RunSource,
    ScheduleStage,
    SessionRole,
    Verdict,
)
from sparsedebug.records.stats import JudgementRule
from sparsedebug.records.timing import TimingQuality
from sparsedebug.sources.replay.equal_latency import equal_latency
from sparsedebug.sources.replay.protocol import ForwardPair, GraphSource, KernelCase, PreparedGraph, Progress, ScheduleParts
from sparsedebug.sources.replay.sources import graph_source
from sparsedebug.sources.workload.schema import Workload

__all__ = ["PAIR_SIDES", "Progress", "alternating", "plan", "replay", "replay_pair"]


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@contextlib.contextmanager
def _threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    with threadpool_limits(limits=threads):
        yield


def _blas_threads() -> int | None:
    for lib in threadpool_info():
        if lib.get("user_api") == "blas":
            return int(lib["num_threads"])
    return None


def replay(
    workload: Workload,
    *,
    repeats: int | None = None,
    progress: Progress | None = None,
    source_path: Path | None = None,
    min_sample_ms: float | None = None,
    source_digest: FileDigest | None = None,
    settle_against: list[float] | None = None,
    rule: JudgementRule | None = None,
) -> RunRecord:
    """Replay ``workload`` on the built-in kernels; return a run record with all five stages.

    ``repeats`` overrides the workload's timed repetitions; ``progress`` is
    called as ``progress(stage, done, total)``; ``source_path`` is the workload
    file (pinned by digest; relative weight, calibration, model and text paths
    resolve from its folder, else from the current directory); ``min_sample_ms`` the
    shortest sample of a whole forward (default ``records.defaults.MIN_SAMPLE_MS``;
    ``core.timing.measure``); ``source_digest`` the workload file's digest when it was read already (else it is
    taken from ``source_path``). Bad input raises ``UserError`` naming the layer.

    ``settle_against``: whole-forward samples of another run this one will be compared with (unpaired): the
    forwards are sampled, as :func:`replay_pair` samples a session, until the ratio of this run's to those
    settles by ``rule`` (default the rule's defaults), rounds added in batches within
    ``records.defaults.SETTLE_BUDGET_S``; the timing quality records whether it settled.
    """
    rounds = _rounds(workload, repeats)
    source = _source(workload, source_path, rounds)
    tick = progress or _no_progress
    with _threads(workload.threads):
        prepared = source.prepare(tick)
        lower = prepared.lower(rounds)
        tick("lower", len(lower.layers), len(lower.layers))
        kernel = _kernel_stage(workload, prepared, rounds, tick)
        forwards = prepared.forwards()
        settle: Callable[[dict[str, list[float]]], bool] | None = None
        if settle_against is not None:
            against, judged = settle_against, rule or DEFAULT_RULE

            def settle(samples: dict[str, list[float]]) -> bool:
                return settled(judge(against, samples["candidate"], judged), judged)

        timed = measure(
            {"candidate": forwards.candidate, "dense": forwards.dense}, rounds=rounds, warmup=workload.warmup, min_sample_ms=_min_sample(min_sample_ms),
            settle=settle, settle_budget_s=SETTLE_BUDGET_S,
        )
        schedule = _schedule_stage(workload, forwards, timed, "candidate", tick)
        outcome, verdicts = _outcome_stage(
            workload, prepared, forwards, (schedule.span_samples_ms, timed.samples["dense"], timed.quality), rounds, tick
        )
    return _record(workload, prepared, _digest(source_path, source_digest), (lower, kernel, schedule, outcome, verdicts))


# The two sides of an interleaved session.
PAIR_SIDES: tuple[SessionRole, SessionRole] = ("baseline", "candidate")


# Rounds per balanced unit of a session: with :func:`alternating`, every round is one (each side after its own
# reference).
SESSION_BLOCK = 1


def alternating(index: int, names: list[str]) -> list[str]:
    """A session's round order: each side's dense reference, then its own call; the sides swap every round.

    Even rounds run ``baseline:dense, baseline, candidate:dense, candidate``, odd rounds
    ``candidate:dense, candidate, baseline:dense, baseline``: each compared call comes
    right after its own dense reference on the same input, so both sides find the same
    state; the first call of a round (after the harness' bookkeeping) is a reference, not
    a compared call; and each side goes first in every other round (a plain rotation of
    four would put the candidate right after the baseline in three rounds of four, and a
    call that follows the same work finds warm caches).
    """
    sides = [role for role in PAIR_SIDES if role in names]
    if index % 2:
        sides.reverse()
    ordered = [n for role in sides for n in (f"{role}:dense", role) if n in names]
    return ordered + [n for n in names if n not in ordered]


def replay_pair(
    base: Workload,
    cand: Workload,
    *,
    repeats: int | None = None,
    progress: Progress | None = None,
    base_path: Path | None = None,
    cand_path: Path | None = None,
    min_sample_ms: float | None = None,
    rule: JudgementRule | None = None,
    settle_budget_s: float | None = None,
    digests: tuple[FileDigest | None, FileDigest | None] = (None, None),
) -> tuple[RunRecord, RunRecord]:
    """Replay a baseline and a candidate workload in one interleaved session: their rounds paired.

    Both graphs are prepared first; then every layer both have (by name) is timed in
    the same rounds, baseline and candidate calls alternating with their dense
    references (:func:`alternating`: the sides swap every round), and the whole forwards
    likewise in one noise-aware measurement (a disturbed round is re-run whole, so the
    pairing holds). Drift of the machine during the session hits both sides of every
    round alike; each run records the session (:class:`~sparsedebug.records.run.ReplaySession`:
    its id and the order of every round as executed), and bisect and the gate then
    compare the pair round by round (:mod:`sparsedebug.core.paired`). Layers only one
    side has, the conversion timing and the equal-latency search are timed per side.
    The whole forwards are sampled until the per-round ratio settles by ``rule``
    (:func:`sparsedebug.core.judgement.settled`; default the rule's defaults), rounds added in batches,
    within ``settle_budget_s`` (default ``records.defaults.SETTLE_BUDGET_S``); past it the timings are
    unstable, and gate and bisect call the comparison inconclusive.
    ``repeats`` overrides both workloads' repeats, ``min_sample_ms`` as :func:`replay`, ``digests`` each workload file's
    ``source_digest``. Workloads with different BLAS thread
    counts or (without ``repeats``) different repeats cannot share rounds: they are
    replayed one after the other, each as :func:`replay` would, and the runs carry no
    session (compared unpaired).
    """
    if base.threads != cand.threads or (repeats is None and cand.repeats != base.repeats):
        return (
            replay(base, repeats=repeats, progress=progress, source_path=base_path, min_sample_ms=min_sample_ms, source_digest=digests[0]),
            replay(cand, repeats=repeats, progress=progress, source_path=cand_path, min_sample_ms=min_sample_ms, source_digest=digests[1]),
        )
    rounds = _rounds(base, repeats)
    sources = (_source(base, base_path, rounds), _source(cand, cand_path, rounds))
    workloads = (base, cand)
    tick = progress or _no_progress
    with _threads(base.threads):
        prepared = (sources[0].prepare(tick), sources[1].prepare(tick))
        lowers = (prepared[0].lower(rounds), prepared[1].lower(rounds))
        tick("lower", len(lowers[1].layers), len(lowers[1].layers))
        kernels, kernel_order = _paired_kernel_stages(workloads, prepared, rounds, tick)
        forwards = (prepared[0].forwards(), prepared[1].forwards())
        variants = {
            "baseline": forwards[0].candidate, "candidate": forwards[1].candidate,
            "baseline:dense": forwards[0].dense, "candidate:dense": forwards[1].dense,
        }
        judged = rule or DEFAULT_RULE

        def settle(samples: dict[str, list[float]]) -> bool:
            return settled(judge(samples["baseline"], samples["candidate"], judged, block=SESSION_BLOCK), judged)

        timed = measure(variants, rounds=rounds, warmup=max(base.warmup, cand.warmup), order=alternating, min_sample_ms=_min_sample(min_sample_ms),
                        settle=settle, settle_budget_s=SETTLE_BUDGET_S if settle_budget_s is None else settle_budget_s)
        records: list[RunRecord] = []
        for index, role in enumerate(PAIR_SIDES):
            workload, ready, forward = workloads[index], prepared[index], forwards[index]
            schedule = _schedule_stage(workload, forward, timed, role, tick)
            outcome, verdicts = _outcome_stage(
                workload, ready, forward, (schedule.span_samples_ms, timed.samples[f"{role}:dense"], timed.quality), rounds, tick
            )
            digest = _digest((base_path, cand_path)[index], digests[index])
            records.append(_record(workload, ready, digest, (lowers[index], kernels[index], schedule, outcome, verdicts)))
    session = uuid.uuid4().hex
    forward_order = [",".join(names) for names in timed.order]
    paired = []
    for index, role in enumerate(PAIR_SIDES):
        info = ReplaySession(
            id=session, role=role, partner=records[1 - index].name, block=SESSION_BLOCK,
            forward_order=forward_order, kernel_order=kernel_order,
        )
        paired.append(records[index].model_copy(update={"session": info}))
    return paired[0], paired[1]


def _min_sample(min_sample_ms: float | None) -> float:
    """The shortest sample of a whole forward: the one asked for, else the module's default (read at call time)."""
    return MIN_SAMPLE_MS if min_sample_ms is None else min_sample_ms


def _rounds(workload: Workload, repeats: int | None) -> int:
    rounds = workload.repeats if repeats is None else repeats
    if rounds < 3:
        raise UserError(f"repeats={rounds}: need at least 3 timed repetitions for p50/p95/p99")
    return rounds


def _source(workload: Workload, source_path: Path | None, rounds: int) -> GraphSource:
    source = graph_source(workload, source_path.parent if source_path is not None else None)
    source.check_cost(rounds, str(source_path) if source_path is not None else None, timed=True)
    return source


def _digest(source_path: Path | None, given: FileDigest | None) -> FileDigest | None:
    """The workload file's digest: the one given (the file was read already), else taken from the file."""
    return given if given is not None or source_path is None else file_digest(source_path)


def _record(
    workload: Workload, prepared: PreparedGraph, workload_file: FileDigest | None,
    stages: tuple[LowerStage, KernelStage, ScheduleStage, OutcomeStage, list[Verdict]],
) -> RunRecord:
    lower, kernel, schedule, outcome, verdicts = stages
    files, ref = prepared.reference(workload_file)
    return RunRecord(
        name=workload.name,
        source=RunSource(kind="replay", files=files),
        workload=ref,
        graph=prepared.graph,
        lower=lower,
        kernel=kernel,
        schedule=schedule,
        outcome=outcome,
        verdicts=verdicts,
        target=prepared.target,
    )


def plan(workload: Workload, source_path: Path | None = None) -> tuple[GraphStage, LowerStage]:
    """Graph and lower stages only (no timing): what would run sparse, what falls back and why."""
    source = graph_source(workload, source_path.parent if source_path is not None else None)
    source.check_cost(None, str(source_path) if source_path is not None else None, timed=False)
    with _threads(workload.threads):
        return source.static_stages()


def _kernel_layer(case: KernelCase, chosen: list[float], dense: list[float] | None) -> tuple[KernelLayer, float]:
    """One layer's kernel record from its samples, and its chosen path's p50."""
    max_abs, rel = case.errors()
    p50 = median(chosen)
    layer = KernelLayer(
        name=case.name, precision=case.precision, samples_ms=chosen, dense_samples_ms=dense,
        by_class_ms={case.kernel_class: p50}, max_abs_err=max_abs, rel_err=rel,
    )  # fmt: skip
    return layer, p50


def _kernel_stage(workload: Workload, prepared: PreparedGraph, rounds: int, tick: Progress) -> KernelStage:
    """Per layer: the chosen kernel timed against dense, numerics against fp64 of the same pruned weights."""
    cases = prepared.kernel_cases()
    layers: list[KernelLayer] = []
    by_class: dict[str, float] = {}
    for index, case in enumerate(cases):
        tick("kernel", index, len(cases))
        variants = {"chosen": case.chosen} | ({"dense": case.dense} if case.dense is not None else {})
        samples = interleaved(variants, rounds=rounds, warmup=workload.warmup)
        layer, p50 = _kernel_layer(case, samples["chosen"], samples.get("dense"))
        by_class[case.kernel_class] = by_class.get(case.kernel_class, 0.0) + p50
        layers.append(layer)
    tick("kernel", len(cases), len(cases))
    return KernelStage(layers=layers, by_class_ms=by_class)


def _paired_kernel_stages(
    workloads: tuple[Workload, Workload], prepared: tuple[PreparedGraph, PreparedGraph], rounds: int, tick: Progress
) -> tuple[tuple[KernelStage, KernelStage], dict[str, list[str]]]:
    """Both sides' kernel stages: a layer both have timed in the same rounds (order recorded), the others alone."""
    cases = (prepared[0].kernel_cases(), prepared[1].kernel_cases())
    by_name = ({c.name: c for c in cases[0]}, {c.name: c for c in cases[1]})
    timed: tuple[dict[str, tuple[list[float], list[float] | None]], dict[str, tuple[list[float], list[float] | None]]] = ({}, {})
    order: dict[str, list[str]] = {}
    names = list(dict.fromkeys([c.name for c in cases[1]] + [c.name for c in cases[0]]))
    warmup = max(workloads[0].warmup, workloads[1].warmup)
    for index, name in enumerate(names):
        tick("kernel", index, len(names))
        sides = [(role, by_name[i].get(name)) for i, role in enumerate(PAIR_SIDES)]
        variants: dict[str, Callable[[], object]] = {}
        for role, case in sides:
            if case is not None:
                variants[role] = case.chosen
        for role, case in sides:
            if case is not None and case.dense is not None:
                variants[f"{role}:dense"] = case.dense
        ran: list[list[str]] = []
        samples = interleaved(variants, rounds=rounds, warmup=warmup, log=ran, order=alternating)
        if all(case is not None for _, case in sides):
            order[name] = [",".join(names_in_round) for names_in_round in ran]
        for i, (role, case) in enumerate(sides):
            if case is not None:
                timed[i][name] = (samples[role], samples.get(f"{role}:dense"))
    tick("kernel", len(names), len(names))
    stages = []
    for i in (0, 1):
        layers: list[KernelLayer] = []
        by_class: dict[str, float] = {}
        for case in cases[i]:
            chosen, dense = timed[i][case.name]
            layer, p50 = _kernel_layer(case, chosen, dense)
            by_class[case.kernel_class] = by_class.get(case.kernel_class, 0.0) + p50
            layers.append(layer)
        stages.append(KernelStage(layers=layers, by_class_ms=by_class))
    return (stages[0], stages[1]), order


def _schedule_stage(workload: Workload, forwards: ForwardPair, timed: Timed, variant: str, tick: Progress) -> ScheduleStage:
    """Whole forward of ``variant`` from the noise-aware harness' samples (timed against its dense baseline)."""
    tick("schedule", 0, 1)
    span = timed.samples[variant]
    parts = _sample_parts(forwards, span, timed, variant)
    schedule = ScheduleStage(
        span_samples_ms=span,
        busy_samples_ms=parts.busy_samples_ms,
        host_wait_ms=sum(s - b for s, b in zip(span, parts.busy_samples_ms, strict=True)),  # summed over the iterations, as every source
        kernel_wait_ms=None,
        threads=workload.threads if workload.threads is not None else _blas_threads(),
        launches_per_iteration=parts.launches_per_iteration,
        dense_share=parts.dense_share,
        layer_idle_samples_ms=parts.layer_idle_samples_ms,
    )
    tick("schedule", 1, 1)
    return schedule


def _sample_parts(forwards: ForwardPair, span: list[float], timed: Timed, variant: str) -> ScheduleParts:
    """The schedule parts of ``variant``'s final samples (a re-measured round replaces a disturbed one), per call.

    A sample of several calls (``Timed.calls_per_sample``) gets the median of
    its calls' busy time and host gaps, as its span is their median.
    """
    counts = timed.sample_calls.get(variant) or [1] * len(span)
    if all(n == 1 for n in counts):
        return forwards.parts(span, timed.calls[variant])
    calls = [first + j for first, n in zip(timed.calls[variant], counts, strict=True) for j in range(n)]
    each = forwards.parts([s for s, n in zip(span, counts, strict=True) for _ in range(n)], calls)
    ends = list(itertools.accumulate(counts))

    def medians(values: list[float]) -> list[float]:
        return [median(values[end - n : end]) for end, n in zip(ends, counts, strict=True)]

    return ScheduleParts(
        busy_samples_ms=medians(each.busy_samples_ms),
        dense_share=each.dense_share,
        layer_idle_samples_ms={name: medians(values) for name, values in each.layer_idle_samples_ms.items()},
        launches_per_iteration=each.launches_per_iteration,
    )


def _outcome_stage(
    workload: Workload, prepared: PreparedGraph, forwards: ForwardPair,
    timed: tuple[list[float], list[float], TimingQuality], rounds: int, tick: Progress,
) -> tuple[OutcomeStage, list[Verdict]]:
    """SLA, effective speedup (None when the timings are unstable), quality against dense, quality at equal latency."""
    span, dense_samples, timing = timed
    tick("outcome", 0, 2)
    candidate_quality = prepared.candidate_quality()
    narrowing = prepared.narrowing()
    equal = None
    if narrowing is not None:
        equal = equal_latency(narrowing, forwards.candidate, span, dense_samples, rounds, candidate_quality, prepared.target)
    tick("outcome", 1, 2)
    latency = percentiles(span)
    outcome = OutcomeStage(
        latency_samples_ms=span,
        latency=latency,
        budget_ms=workload.budget_ms,
        dense_baseline_samples_ms=dense_samples,
        effective_speedup=median(dense_samples) / median(span) if timing.stable else None,
        quality=candidate_quality,
        equal_latency=equal,
        timing=timing,
    )
    verdicts: list[Verdict] = []
    if workload.budget_ms is not None:
        status: Literal["pass", "fail"] = "pass" if latency.p99 <= workload.budget_ms else "fail"
        detail = note("targets.sla_p99", p99_ms=latency.p99, budget_ms=workload.budget_ms, p50_ms=latency.p50, p95_ms=latency.p95)
        verdicts.append(Verdict(check="sla", status=status, detail=detail))
    tick("outcome", 2, 2)
    return outcome, verdicts
