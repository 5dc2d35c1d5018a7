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

Numerics, decisions, projections and quality are a pure function of the
workload (same seed, same numbers); timings, and what is derived from them
(speedup, the narrowing found on this machine), vary run to run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from threadpoolctl import threadpool_info, threadpool_limits

from sparsedebug.core.errors import UserError
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import interleaved, measure
from sparsedebug.records.run import (
    GraphStage,
    KernelLayer,
    KernelStage,
    LowerStage,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
    Verdict,
)
from sparsedebug.records.timing import TimingQuality
from sparsedebug.sources.replay.equal_latency import equal_latency
from sparsedebug.sources.replay.protocol import ForwardPair, PreparedGraph, Progress
from sparsedebug.sources.replay.sources import graph_source
from sparsedebug.sources.workload.schema import Workload

__all__ = ["Progress", "plan", "replay"]


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
) -> RunRecord:
    """Replay ``workload`` on the built-in kernels; return a run record with all five stages.

    ``repeats`` overrides the workload's timed repetitions; ``progress`` is
    called as ``progress(stage, done, total)``; ``source_path`` is the workload
    file (pinned by digest; relative weight, calibration, model and text paths
    resolve from its folder, else from the current directory). Bad input raises
    ``UserError`` naming the layer.
    """
    rounds = workload.repeats if repeats is None else repeats
    if rounds < 3:
        raise UserError(f"repeats={rounds}: need at least 3 timed repetitions for p50/p95/p99")
    source = graph_source(workload, source_path.parent if source_path is not None else None)
    source.check_cost(rounds, str(source_path) if source_path is not None else None, timed=True)
    tick = progress or _no_progress
    with _threads(workload.threads):
        prepared = source.prepare(tick)
        lower = prepared.lower(rounds)
        tick("lower", len(lower.layers), len(lower.layers))
        kernel = _kernel_stage(workload, prepared, rounds, tick)
        forwards = prepared.forwards()
        schedule, dense_samples, timing = _schedule_stage(workload, forwards, rounds, tick)
        outcome, verdicts = _outcome_stage(workload, prepared, forwards, (schedule.span_samples_ms, dense_samples, timing), rounds, tick)
    files, ref = prepared.reference(source_path)
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


def _kernel_stage(workload: Workload, prepared: PreparedGraph, rounds: int, tick: Progress) -> KernelStage:
    """Per layer: the chosen kernel timed against dense, numerics against fp64 of the same pruned weights."""
    cases = prepared.kernel_cases()
    layers: list[KernelLayer] = []
    by_class: dict[str, float] = {}
    for index, case in enumerate(cases):
        tick("kernel", index, len(cases))
        variants = {"chosen": case.chosen} | ({"dense": case.dense} if case.dense is not None else {})
        samples = interleaved(variants, rounds=rounds, warmup=workload.warmup)
        max_abs, rel = case.errors()
        p50 = median(samples["chosen"])
        by_class[case.kernel_class] = by_class.get(case.kernel_class, 0.0) + p50
        layers.append(
            KernelLayer(
                name=case.name, precision=case.precision, samples_ms=samples["chosen"], dense_samples_ms=samples.get("dense"),
                by_class_ms={case.kernel_class: p50}, max_abs_err=max_abs, rel_err=rel,
            )
        )  # fmt: skip
    tick("kernel", len(cases), len(cases))
    return KernelStage(layers=layers, by_class_ms=by_class)


def _schedule_stage(workload: Workload, forwards: ForwardPair, rounds: int, tick: Progress) -> tuple[ScheduleStage, list[float], TimingQuality]:
    """Whole forward, candidate against the dense baseline in the noise-aware harness; the dense samples for the outcome."""
    tick("schedule", 0, 1)
    timed = measure({"candidate": forwards.candidate, "dense": forwards.dense}, rounds=rounds, warmup=workload.warmup)
    span = timed.samples["candidate"]
    parts = forwards.parts(span, timed.calls["candidate"])  # a re-measured round replaces a disturbed one
    schedule = ScheduleStage(
        span_samples_ms=span,
        busy_samples_ms=parts.busy_samples_ms,
        host_wait_ms=median([s - b for s, b in zip(span, parts.busy_samples_ms, strict=True)]),
        kernel_wait_ms=None,
        threads=workload.threads if workload.threads is not None else _blas_threads(),
        launches_per_iteration=parts.launches_per_iteration,
        dense_share=parts.dense_share,
        layer_idle_samples_ms=parts.layer_idle_samples_ms,
    )
    tick("schedule", 1, 1)
    return schedule, timed.samples["dense"], timed.quality


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
        detail = (
            f"p99 {latency.p99:.3f} ms vs budget {workload.budget_ms:g} ms "
            f"(p50 {latency.p50:.3f}, p95 {latency.p95:.3f}; this machine, measured)"
        )
        verdicts.append(Verdict(check="sla", status=status, detail=detail))
    tick("outcome", 2, 2)
    return outcome, verdicts
