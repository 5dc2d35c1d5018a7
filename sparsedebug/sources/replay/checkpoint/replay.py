"""The replay of a model workload: a real checkpoint's own forward, with the replay's kernels per linear.

The five stages come from the real forward (every linear runs through
``Transformer.linear``, here on :class:`~sparsedebug.sources.replay.checkpoint.kernels.ModelKernels`):

``graph``
    Open the model (fetched on first use), resolve every linear's intent,
    cut the text (:mod:`~sparsedebug.sources.replay.checkpoint.data`), prune the
    intended layers with the workload's method on the calibration text, and
    record the linears under the checkpoint's names.
``lower``
    The backend profile's decision per linear, compressed bytes and the timed
    conversion of the sparse ones.
``kernel``
    Each linear on the input it sees in the candidate forward of the timed
    batch: its chosen kernel (per-call conversion inside the timed call)
    interleaved with the dense product of the unpruned weight, and the chosen
    kernel's error against an fp64 product of the same pruned weight.
``schedule``
    Whole forwards of the timed batch, the candidate interleaved with the dense
    model; busy time is the span minus the host work before each linear's
    compute (per-call conversion).
``outcome``
    p50/p95/p99 against the budget, effective speedup over the dense model,
    quality against the dense model on the evaluation text
    (:mod:`~sparsedebug.sources.replay.checkpoint.quality`), and the equal-latency
    comparison (:mod:`~sparsedebug.sources.replay.checkpoint.narrow`).

The loaded model, the text's batches, the pruned weights, the dense model's
outputs and the neuron importance are pure functions of the workload and are
kept for the rest of the process, so a walk replaying one model several times
computes them once; timings are measured every time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from sparsedebug.core.io import file_digest
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.masks import Pattern
from sparsedebug.records.run import (
    KernelLayer,
    KernelPath,
    KernelStage,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
    Verdict,
    WorkloadRef,
)
from sparsedebug.sources.models.base import Array, Transformer
from sparsedebug.sources.models.load import LoadedModel
from sparsedebug.sources.replay.checkpoint.data import ModelData, model_data
from sparsedebug.sources.replay.checkpoint.kernels import (
    ForwardTrace,
    ModelKernels,
    candidate_kernels,
    dense_kernels,
    timed_forward,
)
from sparsedebug.sources.replay.checkpoint.narrow import EqualLatencyInputs, ffn_blocks, model_equal_latency, neuron_importance
from sparsedebug.sources.replay.checkpoint.prune import ModelCache, calibration_text, pruned_weights
from sparsedebug.sources.replay.checkpoint.quality import Outputs, evaluate, evidence_of, quality_delta
from sparsedebug.sources.replay.checkpoint.workload import (
    ModelLayer,
    checkpoint_weights,
    decide,
    graph_stage,
    lower_stage,
    model_key,
    open_model,
    resolve_layers,
)
from sparsedebug.sources.workload.lowering import Decision, kernel_class
from sparsedebug.sources.workload.schema import Workload

Progress = Callable[[str, int, int], None]

_CACHE = ModelCache()


@dataclass
class _Run:
    """One model replay: the workload, its model and data, and the kernel sets it times."""

    workload: Workload
    loaded: LoadedModel
    key: str
    data: ModelData
    layers: list[ModelLayer]
    decisions: dict[str, Decision]
    weights: dict[str, Array]
    candidate: ModelKernels
    dense: ModelKernels
    rounds: int
    tick: Progress

    @property
    def model(self) -> Transformer:
        return self.loaded.model

    def forward(self, kernels: ModelKernels) -> Callable[[], object]:
        """One forward of the timed batch on ``kernels``."""
        return lambda: self.model.hidden(self.data.timed, kernels)


def replay_model(workload: Workload, *, rounds: int, progress: Progress, source_path: Path | None) -> RunRecord:
    """Replay a model workload; a run record with all five stages (see the module docstring)."""
    assert workload.model is not None
    progress("graph", 0, 3)
    loaded = open_model(workload.model)
    key = "|".join(str(part) for part in model_key(workload.model))
    layers = resolve_layers(workload, loaded.model.linears)
    data = model_data(workload, loaded, key)
    progress("graph", 1, 3)
    weights = pruned_weights(_CACHE, workload, loaded, key, layers, data)
    progress("graph", 2, 3)
    graph = graph_stage(layers, workload.tokens.total, loaded.weights.sha256)
    progress("graph", 3, 3)
    decisions = decide(workload, layers, weights)
    progress("lower", 0, 1)
    lower = lower_stage(workload, layers, decisions, weights, rounds)
    progress("lower", 1, 1)
    precisions = {layer.name: layer.dtype for layer in layers}
    sparse: dict[str, Pattern] = {
        layer.name: layer.pattern for layer in layers if decisions[layer.name].path is KernelPath.SPARSE and layer.pattern
    }
    run = _Run(
        workload, loaded, key, data, layers, decisions, weights,
        candidate=candidate_kernels(weights, precisions, sparse, workload.conversion == "per_call"),
        dense=dense_kernels(checkpoint_weights(loaded), precisions), rounds=rounds, tick=progress,
    )  # fmt: skip
    kernel = _kernel_stage(run)
    schedule, dense_samples = _schedule_stage(run)
    outcome, verdicts = _outcome_stage(run, schedule.span_samples_ms, dense_samples)
    workload_digest = file_digest(source_path) if source_path is not None else None
    knobs = workload.knobs() | {"pruning.calibration": calibration_text(workload, data)}
    if workload.pruning.method in ("wanda", "sparsegpt"):
        knobs["pruning.calibration_tokens"] = str(data.study.split.calibration_tokens)
    return RunRecord(
        name=workload.name,
        source=RunSource(kind="replay", files=[d for d in (workload_digest, loaded.weights) if d is not None]),
        workload=WorkloadRef(name=workload.name, seed=workload.seed, file=workload_digest, weights=loaded.weights, knobs=knobs),
        graph=graph, lower=lower, kernel=kernel, schedule=schedule, outcome=outcome, verdicts=verdicts,
    )  # fmt: skip


def _capture_inputs(run: _Run) -> dict[str, Array]:
    """Every linear's input in one candidate forward of the timed batch."""
    captured: dict[str, Array] = {}

    def hook(name: str, x: Array, y: Array) -> None:
        captured[name] = np.array(x, dtype=np.float32, copy=True)

    run.model.hidden(run.data.timed, run.candidate, hook)
    return captured


def _kernel_stage(run: _Run) -> KernelStage:
    """Per linear: chosen kernel against dense, interleaved; the chosen kernel's error against fp64."""
    inputs = _capture_inputs(run)
    layers: list[KernelLayer] = []
    by_class: dict[str, float] = {}
    total = len(run.layers)
    for index, layer in enumerate(run.layers):
        run.tick("kernel", index, total)
        x = inputs[layer.name]
        chosen, dense = run.candidate.kernels[layer.name], run.dense.kernels[layer.name]
        samples = interleaved({"chosen": lambda: chosen(x), "dense": lambda: dense(x)}, rounds=run.rounds, warmup=run.workload.warmup)
        out = np.asarray(chosen(x), dtype=np.float64)
        reference = x.astype(np.float64) @ run.weights[layer.name].astype(np.float64).T
        diff = np.abs(out - reference)
        ref_norm = float(np.linalg.norm(reference))
        cls = kernel_class("linear", run.decisions[layer.name].path, layer.dtype).value
        p50 = median(samples["chosen"])
        by_class[cls] = by_class.get(cls, 0.0) + p50
        layers.append(
            KernelLayer(
                name=layer.name, samples_ms=samples["chosen"], dense_samples_ms=samples["dense"], by_class_ms={cls: p50},
                precision=layer.dtype, max_abs_err=float(diff.max()) if diff.size else 0.0,
                rel_err=float(np.linalg.norm(diff) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(diff)),
            )
        )  # fmt: skip
    run.tick("kernel", total, total)
    return KernelStage(layers=layers, by_class_ms=by_class)


def _schedule_stage(run: _Run) -> tuple[ScheduleStage, list[float]]:
    """Whole forwards, candidate interleaved with dense; busy = span minus host work before each linear's compute."""
    run.tick("schedule", 0, 1)
    rounds = run.rounds
    trace = ForwardTrace()
    run.candidate.trace = trace
    candidate = run.forward(run.candidate)
    try:
        samples = interleaved(
            {"candidate": lambda: timed_forward(run.candidate, candidate), "dense": run.forward(run.dense)},
            rounds=rounds, warmup=run.workload.warmup,
        )  # fmt: skip
    finally:
        run.candidate.trace = None
    span = samples["candidate"]
    busy = [max(s - h, 0.0) for s, h in zip(span, trace.host_ms[-rounds:], strict=True)]
    sparse = trace.sparse_ms[-rounds:]
    per_call = sum(1 for kernel in run.candidate.kernels.values() if kernel.per_call)
    schedule = ScheduleStage(
        span_samples_ms=span, busy_samples_ms=busy, host_wait_ms=median([s - b for s, b in zip(span, busy, strict=True)]),
        kernel_wait_ms=None, threads=run.workload.threads,
        launches_per_iteration=len(run.layers) + per_call,
        dense_share=median([(b - sp) / b if b > 0 else 1.0 for b, sp in zip(busy, sparse, strict=True)]),
        layer_idle_samples_ms={name: values[-rounds:] for name, values in trace.layer_host_ms.items()},
    )  # fmt: skip
    run.tick("schedule", 1, 1)
    return schedule, samples["dense"]


def _reference(run: _Run) -> Outputs:
    """The dense model's outputs on the evaluation batch (kept per process)."""
    key = f"{run.key}|{run.data.corpus.sha256}|{run.data.study.split.evaluation_tokens}"
    return _CACHE.get(("reference", key), lambda: evaluate(run.model, run.data.evaluation))


def _outcome_stage(run: _Run, span: list[float], dense_samples: list[float]) -> tuple[OutcomeStage, list[Verdict]]:
    """SLA, effective speedup, real-text quality against the dense model, and quality at equal latency."""
    workload = run.workload
    assert workload.model is not None
    run.tick("outcome", 0, 2)
    reference = _reference(run)
    evidence = evidence_of(run.loaded, workload.model.name, run.data)
    candidate_quality = quality_delta(evaluate(run.model, run.data.evaluation, run.candidate), reference, evidence)
    run.tick("outcome", 1, 2)
    calibration = run.data.calibration
    importance_key = ("importance", f"{run.key}|{run.data.corpus.sha256}|{len(calibration.ids)}")
    equal = model_equal_latency(
        EqualLatencyInputs(
            model=run.model,
            importance=lambda: _CACHE.get(importance_key, lambda: neuron_importance(run.model, ffn_blocks(run.model), calibration)),
            precisions={layer.name: layer.dtype for layer in run.layers}, timed=run.data.timed,
            candidate=run.forward(run.candidate), span=span, dense_samples=dense_samples, repeats=run.rounds,
            candidate_quality=candidate_quality,
            measure=lambda model, kernels: quality_delta(evaluate(model, run.data.evaluation, kernels), reference, evidence),
            importance_text=(
                f"per FFN neuron: L2 norm of its activation over {len(calibration.ids)} calibration tokens of "
                f"{run.data.corpus.source}, dense model, x L2 norm of its output-projection column"
            ),
        )
    )  # fmt: skip
    outcome = OutcomeStage(
        latency_samples_ms=span, budget_ms=workload.budget_ms, dense_baseline_samples_ms=dense_samples,
        effective_speedup=median(dense_samples) / median(span), quality=candidate_quality, equal_latency=equal,
    )  # fmt: skip
    verdicts: list[Verdict] = []
    if workload.budget_ms is not None:
        p = percentiles(span)
        status: Literal["pass", "fail"] = "pass" if p.p99 <= workload.budget_ms else "fail"
        detail = f"p99 {p.p99:.3f} ms vs budget {workload.budget_ms:g} ms (p50 {p.p50:.3f}, p95 {p.p95:.3f})"
        verdicts.append(Verdict(check="sla", status=status, detail=detail))
    run.tick("outcome", 2, 2)
    return outcome, verdicts

