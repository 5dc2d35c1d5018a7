"""The replay: run a workload on the built-in kernels and record all five stages.

Steps, in order (each reported to ``progress`` under its stage name):

``graph``
    Check the graph, build seeded or loaded weights and inputs, prune to the
    intended patterns (magnitude, or wanda on the layer inputs of the dense
    model), and record the layer inventory (params, dense FLOPs and bytes).
``lower``
    Ask the workload's backend profile, per layer, for the sparse path or a
    dense fallback with its reason; convert the sparse layers (timed), record
    value and metadata bytes.
``kernel``
    Per layer, on the input it sees in the candidate forward: time samples of
    the chosen path and of the dense path, interleaved (with per-call
    conversion inside the chosen path's timed call), and the numeric error of
    the chosen path against an fp64 dense product of the same pruned weights.
``schedule``
    Whole-forward samples of the candidate (span) interleaved with the dense
    baseline; inside each candidate forward the summed time spent in layer
    compute (busy). Span minus busy is host overhead: dispatch, allocation and
    per-call weight conversion; per layer and call, the host time just before
    the layer's compute (``layer_idle_samples_ms``). Also the dense share of
    busy time.
``outcome``
    p50/p95/p99 against the budget, effective speedup versus the dense
    baseline, output quality versus the dense unpruned model (fp64), and the
    equal-latency comparison against a narrowed dense model
    (:mod:`sparsedebug.sources.replay.synthetic.narrow`).

Numerics, decisions and quality are a pure function of the workload (same
seed, same numbers); timings, and what is derived from them (speedup, the
narrowing fraction found for equal latency), vary run to run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import interleaved, measure
from sparsedebug.records.run import (
    GraphStage,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
    Verdict,
    WorkloadRef,
)
from sparsedebug.records.target import TargetClock
from sparsedebug.records.timing import TimingQuality
from sparsedebug.sources.replay.cost import check_replay
from sparsedebug.sources.replay.synthetic.executor import (
    Array,
    ForwardTrace,
    Op,
    _compress,
    _input_for,
    accuracy_of,
    build_ops,
    forward,
    quality,
)
from sparsedebug.sources.replay.synthetic.narrow import equal_latency
from sparsedebug.sources.replay.synthetic.weights import Inputs, Weights, build_inputs, build_weights, is_compliant, prune
from sparsedebug.sources.target.project import target_clock
from sparsedebug.sources.workload.graph import LayerShape, check_graph
from sparsedebug.sources.workload.inventory import graph_layer
from sparsedebug.sources.workload.lowering import Decision, LayerQuery, flag_slower_than_dense, get_profile, kernel_class
from sparsedebug.sources.workload.schema import Layer, Workload, absolute_paths

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as each stage advances."""


# --------------------------------------------------------------------------- the replay


@dataclass
class _Ctx:
    workload: Workload
    repeats: int
    progress: Progress

    def tick(self, stage: str, done: int, total: int) -> None:
        self.progress(stage, done, total)


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
    file (pinned by digest; relative weight and calibration paths resolve from
    its folder, else from the current directory). Bad input raises
    ``UserError`` naming the layer.
    """
    rounds = workload.repeats if repeats is None else repeats
    if rounds < 3:
        raise UserError(f"repeats={rounds}: need at least 3 timed repetitions for p50/p95/p99")
    check_replay(workload, rounds, str(source_path) if source_path is not None else None)
    ctx = _Ctx(workload, rounds, progress or _no_progress)
    base_dir = source_path.parent if source_path is not None else None
    with _threads(workload.threads):
        if workload.model is not None:
            from sparsedebug.sources.replay.checkpoint.replay import replay_model

            return replay_model(absolute_paths(workload, base_dir), rounds=rounds, progress=ctx.progress, source_path=source_path)
        return _replay(ctx, base_dir, source_path)


@dataclass
class Prepared:
    """A workload made concrete: shapes, weights (dense and pruned), inputs, reference output, decisions."""

    shapes: list[LayerShape]
    weights: Weights
    inputs: Inputs
    pruned: dict[str, Array]
    dense_ref_out: Array
    graph: GraphStage
    decisions: dict[str, Decision]
    target: TargetClock | None = None
    """Every layer and the whole forward projected onto the backend's GPU (None for cpu-numpy)."""


def prepare(workload: Workload, base_dir: Path | None = None, progress: Progress | None = None) -> Prepared:
    """Graph stage and lowering decisions, without any timing: weights, inputs, pruning, profile."""
    tick = progress or _no_progress
    profile = get_profile(workload.backend)
    shapes = check_graph(workload)
    n_layers = len(workload.layers)
    tick("graph", 0, 3)
    weights = build_weights(workload, base_dir)
    inputs = build_inputs(workload, base_dir, out_width=shapes[-1].out_width)
    tick("graph", 1, 3)
    dense_tensors = weights.tensors
    reference_ops = build_ops(workload, shapes, dense_tensors, mode="reference")
    x64 = _input_for(inputs.x, "fp64")
    dense_ref_out, dense_values = forward(reference_ops, x64, keep=workload.pruning.method == "wanda")
    input_norms = None
    if workload.pruning.method == "wanda":
        index = {s.name: i for i, s in enumerate(shapes)}
        input_norms = {}
        for layer, shape in zip(workload.layers, shapes, strict=True):
            if layer.op == "linear" and layer.pattern is not None:
                src = shape.inputs[0]
                act = x64 if src == "input" else dense_values[index[src]]
                input_norms[layer.name] = np.linalg.norm(act, axis=1)
        del dense_values
    pruned = prune(workload, dense_tensors, input_norms)
    tick("graph", 2, 3)
    graph = GraphStage(
        layers=[graph_layer(workload, layer, shape) for layer, shape in zip(workload.layers, shapes, strict=True)],
        tokens=workload.tokens.total,
        model_revision=weights.source.sha256 if weights.source is not None else f"seeded:{workload.seed}",
    )
    tick("graph", 3, 3)
    decisions: dict[str, Decision] = {}
    for i, (layer, shape) in enumerate(zip(workload.layers, shapes, strict=True)):
        tick("lower", i, n_layers)
        weight = pruned.get(layer.name)
        k = shape.in_widths[0] if layer.op == "linear" else None
        if layer.op == "embedding" and layer.shape is not None:
            k = layer.shape[1]
        query = LayerQuery(
            name=layer.name,
            op=layer.op,
            out=shape.out_width if layer.op in ("linear", "embedding") else None,
            k=k,
            dtype=workload.dtype_of(layer),
            pattern=layer.pattern,
            compliant=is_compliant(layer, weight) if weight is not None and layer.op == "linear" else None,
        )
        decisions[layer.name] = profile.decide(query)
    paths = {name: decision.path.value for name, decision in decisions.items()}
    target = target_clock(workload, paths)
    return Prepared(shapes, weights, inputs, pruned, dense_ref_out, graph, decisions, target)


def lower_stage(workload: Workload, prepared: Prepared, *, rounds: int | None = None) -> LowerStage:
    """The lower stage: decisions, bytes, and (with ``rounds``) the timed conversion of each sparse layer."""
    layers = [
        _lower_layer(workload, layer, prepared.decisions[layer.name], prepared.pruned.get(layer.name), rounds)
        for layer in workload.layers
    ]
    if prepared.target is not None:
        flag_slower_than_dense(layers, prepared.target)
    return LowerStage(backend=get_profile(workload.backend).name, layers=layers)


def plan(workload: Workload, source_path: Path | None = None) -> tuple[GraphStage, LowerStage]:
    """Graph and lower stages only (no timing): what would run sparse, what falls back and why."""
    check_replay(workload, source=str(source_path) if source_path is not None else None, timed=False)
    with _threads(workload.threads):
        if workload.model is not None:
            from sparsedebug.sources.replay.checkpoint.workload import static_stages

            return static_stages(absolute_paths(workload, source_path.parent if source_path is not None else None))
        prepared = prepare(workload, source_path.parent if source_path is not None else None)
        return prepared.graph, lower_stage(workload, prepared)


@dataclass
class _Forward:
    """The ops and input one replay times: candidate, dense baseline, fp64 reference of the pruned weights."""

    candidate: list[Op]
    dense: list[Op]
    reference: list[Op]
    x: Array


def _kernel_stage(ctx: _Ctx, prepared: Prepared, fwd: _Forward) -> tuple[KernelStage, Array]:
    """Per layer: the chosen kernel timed against dense, numerics against fp64 of the same pruned weights."""
    workload = ctx.workload
    n_layers = len(workload.layers)
    candidate_out, values = forward(fwd.candidate, fwd.x, keep=True)
    kernel_layers: list[KernelLayer] = []
    by_class: dict[str, float] = {}
    for i, (layer, op) in enumerate(zip(workload.layers, fwd.candidate, strict=True)):
        ctx.tick("kernel", i, n_layers)
        args = [fwd.x if j < 0 else values[j] for j in op.inputs]
        klayer = _kernel_layer(workload, layer, op, fwd.dense[i], fwd.reference[i], args, values[i], ctx.repeats, workload.warmup)
        cls = kernel_class(layer.op, prepared.decisions[layer.name].path, workload.dtype_of(layer)).value
        p50 = median(klayer.samples_ms)
        klayer.by_class_ms = {cls: p50}
        by_class[cls] = by_class.get(cls, 0.0) + p50
        kernel_layers.append(klayer)
    ctx.tick("kernel", n_layers, n_layers)
    return KernelStage(layers=kernel_layers, by_class_ms=by_class), candidate_out


def _schedule_stage(ctx: _Ctx, fwd: _Forward) -> tuple[ScheduleStage, list[float], TimingQuality]:
    """Whole forward, candidate interleaved with the dense baseline; the dense samples for the outcome."""
    workload, rounds = ctx.workload, ctx.repeats
    ctx.tick("schedule", 0, 1)
    trace = ForwardTrace()
    timed = measure(
        {"candidate": lambda: forward(fwd.candidate, fwd.x, trace), "dense": lambda: forward(fwd.dense, fwd.x)},
        rounds=rounds,
        warmup=workload.warmup,
    )
    samples = timed.samples
    # busy time per candidate forward, for the rounds kept (a re-measured round replaces a disturbed one)
    kept = timed.calls["candidate"]
    busy = [trace.busy_ms[i] for i in kept]
    dense_busy = [trace.dense_ms[i] for i in kept]
    span = samples["candidate"]
    overhead = [s - b for s, b in zip(span, busy, strict=True)]
    dense_share = median([d / b if b > 0 else 1.0 for d, b in zip(dense_busy, busy, strict=True)])
    per_call = sum(1 for op in fwd.candidate if op.convert is not None)
    schedule = ScheduleStage(
        span_samples_ms=span,
        busy_samples_ms=busy,
        host_wait_ms=median(overhead),
        kernel_wait_ms=None,
        threads=workload.threads if workload.threads is not None else _blas_threads(),
        launches_per_iteration=len(fwd.candidate) + per_call,
        dense_share=dense_share,
        layer_idle_samples_ms={layer.name: [gaps[i] for i in kept] for layer, gaps in zip(workload.layers, trace.gaps_ms, strict=True)},
    )
    ctx.tick("schedule", 1, 1)
    return schedule, samples["dense"], timed.quality


def _outcome_stage(
    ctx: _Ctx, prepared: Prepared, fwd: _Forward, timed: tuple[list[float], list[float], TimingQuality], candidate_out: Array
) -> tuple[OutcomeStage, list[Verdict]]:
    """SLA, effective speedup (None when the timings are unstable), quality against dense, quality at equal latency."""
    span, dense_samples, timing = timed
    workload = ctx.workload
    ctx.tick("outcome", 0, 2)
    labels = prepared.inputs.labels
    dense_ref_out = prepared.dense_ref_out
    dense_accuracy = accuracy_of(dense_ref_out, labels) if labels is not None else None
    candidate_quality = quality(candidate_out, dense_ref_out, labels, dense_accuracy)
    equal = equal_latency(
        workload, ctx.repeats, prepared.shapes, prepared.weights.tensors, fwd.candidate, fwd.x, span, dense_samples,
        dense_ref_out, labels, dense_accuracy, candidate_quality, prepared.target,
    )
    ctx.tick("outcome", 1, 2)
    outcome = OutcomeStage(
        latency_samples_ms=span,
        budget_ms=workload.budget_ms,
        dense_baseline_samples_ms=dense_samples,
        effective_speedup=median(dense_samples) / median(span) if timing.stable else None,
        quality=candidate_quality,
        equal_latency=equal,
        timing=timing,
    )
    verdicts: list[Verdict] = []
    if workload.budget_ms is not None:
        p = percentiles(span)
        status: Literal["pass", "fail"] = "pass" if p.p99 <= workload.budget_ms else "fail"
        detail = f"p99 {p.p99:.3f} ms vs budget {workload.budget_ms:g} ms (p50 {p.p50:.3f}, p95 {p.p95:.3f}; this machine, measured)"
        verdicts.append(Verdict(check="sla", status=status, detail=detail))
    ctx.tick("outcome", 2, 2)
    return outcome, verdicts


def _replay(ctx: _Ctx, base_dir: Path | None, source_path: Path | None) -> RunRecord:
    workload = ctx.workload
    n_layers = len(workload.layers)
    prepared = prepare(workload, base_dir, ctx.progress)
    lower = lower_stage(workload, prepared, rounds=ctx.repeats)
    ctx.tick("lower", n_layers, n_layers)
    shapes, pruned = prepared.shapes, prepared.pruned
    fwd = _Forward(
        candidate=build_ops(workload, shapes, pruned, mode="candidate", decisions=prepared.decisions),
        dense=build_ops(workload, shapes, prepared.weights.tensors, mode="dense"),
        reference=build_ops(workload, shapes, pruned, mode="reference"),
        x=_input_for(prepared.inputs.x, workload.precision),
    )
    kernel, candidate_out = _kernel_stage(ctx, prepared, fwd)
    schedule, dense_samples, timing = _schedule_stage(ctx, fwd)
    outcome, verdicts = _outcome_stage(ctx, prepared, fwd, (schedule.span_samples_ms, dense_samples, timing), candidate_out)
    weights, inputs = prepared.weights, prepared.inputs
    workload_digest = file_digest(source_path) if source_path is not None else None
    files = [digest for digest in (workload_digest, weights.source, inputs.source) if digest is not None]
    return RunRecord(
        name=workload.name,
        source=RunSource(kind="replay", files=files),
        workload=WorkloadRef(
            name=workload.name, seed=workload.seed, file=workload_digest, weights=weights.source, knobs=workload.knobs()
        ),
        graph=prepared.graph,
        lower=lower,
        kernel=kernel,
        schedule=schedule,
        outcome=outcome,
        verdicts=verdicts,
        target=prepared.target,
    )


def _lower_layer(
    workload: Workload, layer: Layer, decision: Decision, weight: Array | None, rounds: int | None
) -> LowerLayer:
    dtype = workload.dtype_of(layer)
    record = LowerLayer(
        name=layer.name,
        path=decision.path,
        reason=decision.reason,
        detail=decision.detail,
        kernel_class=kernel_class(layer.op, decision.path, dtype),
        kernels=list(decision.kernels),
    )
    if layer.op != "linear" or weight is None:
        return record
    weight32 = np.ascontiguousarray(weight, dtype=np.float32)
    if decision.path is KernelPath.SPARSE:
        footprint = _compress(weight32, layer).footprint()
        if rounds is not None:
            timed = interleaved({"convert": lambda: _compress(weight32, layer)}, rounds=min(rounds, 5), warmup=1)
            record.conversion_ms = median(timed["convert"])
        record.conversions_per_call = 1 if workload.conversion == "per_call" else 0
        record.value_bytes = footprint.value_bytes
        record.metadata_bytes = footprint.metadata_bytes
        record.dense_bytes = footprint.dense_bytes
    else:
        record.value_bytes = int(weight32.nbytes)
        record.metadata_bytes = 0
        record.dense_bytes = int(weight32.nbytes)
    return record


def _kernel_layer(
    workload: Workload,
    layer: Layer,
    op: Op,
    dense_op: Op,
    ref_op: Op,
    args: list[Array],
    output: Array,
    rounds: int,
    warmup: int,
) -> KernelLayer:
    def chosen() -> Array:
        handle = op.convert() if op.convert is not None else op.handle
        return op.compute(args, handle)

    if layer.op == "linear":
        samples = interleaved(
            {"chosen": chosen, "dense": lambda: dense_op.compute(args, dense_op.handle)}, rounds=rounds, warmup=warmup
        )
        dense_samples: list[float] | None = samples["dense"]
    else:
        samples = interleaved({"chosen": chosen}, rounds=rounds, warmup=warmup)
        dense_samples = None
    ref_args = [a if np.issubdtype(a.dtype, np.integer) else a.astype(np.float64) for a in args]
    reference = np.asarray(ref_op.compute(ref_args, ref_op.handle), dtype=np.float64)
    diff = np.abs(np.asarray(output, dtype=np.float64) - reference)
    ref_norm = float(np.linalg.norm(reference))
    return KernelLayer(
        name=layer.name,
        precision=workload.dtype_of(layer),
        samples_ms=samples["chosen"],
        dense_samples_ms=dense_samples,
        max_abs_err=float(diff.max()) if diff.size else 0.0,
        rel_err=float(np.linalg.norm(diff) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(diff)),
    )


