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
    (:mod:`sparsedebug.sources.replay.narrow`).

Numerics, decisions and quality are a pure function of the workload (same
seed, same numbers); timings, and what is derived from them (speedup, the
narrowing fraction found for equal latency), vary run to run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_info, threadpool_limits

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.nm import NMWeight
from sparsedebug.kernels.precision import Precision, compute_dtype, round_input
from sparsedebug.kernels.vnm import VNMWeight
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.run import (
    EqualLatencyQuality,
    GraphLayer,
    GraphStage,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    QualityDelta,
    RunRecord,
    RunSource,
    ScheduleStage,
    Verdict,
    WorkloadRef,
)
from sparsedebug.sources.replay.lowering import Decision, LayerQuery, get_profile, kernel_class
from sparsedebug.sources.replay.narrow import FRACTION_STEPS, ffn_groups, narrow
from sparsedebug.sources.replay.weights import Inputs, Weights, build_inputs, build_weights, is_compliant, prune
from sparsedebug.sources.replay.workload import Layer, LayerShape, Workload, check_graph

Array = npt.NDArray[Any]
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as each stage advances."""

_ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "fp64": 8}


# --------------------------------------------------------------------------- non-linear ops


def _rmsnorm(x: Array, gain: Array, eps: float = 1e-5) -> Array:
    scale = 1.0 / np.sqrt(np.mean(x * x, axis=0, keepdims=True) + eps)
    out: Array = x * scale * gain[:, None]
    return out


def _layernorm(x: Array, gain: Array, eps: float = 1e-5) -> Array:
    centred = x - x.mean(axis=0, keepdims=True)
    scale = 1.0 / np.sqrt(np.mean(centred * centred, axis=0, keepdims=True) + eps)
    out: Array = centred * scale * gain[:, None]
    return out


def _activation(fn: str, x: Array) -> Array:
    if fn == "silu":
        # sigmoid(x) = (1 + tanh(x / 2)) / 2: no overflow for large |x|
        out: Array = 0.5 * x * (1.0 + np.tanh(0.5 * x))
        return out
    if fn == "relu":
        return np.maximum(x, 0)
    # gelu, tanh approximation
    c = x.dtype.type(np.sqrt(2.0 / np.pi))
    inner = c * (x + x.dtype.type(0.044715) * x * x * x)
    gelu: Array = (0.5 * x * (1.0 + np.tanh(inner))).astype(x.dtype, copy=False)
    return gelu


def attention(q: Array, k: Array, v: Array, heads: int, kv_heads: int, batch: int, seq: int, causal: bool) -> Array:
    """Scaled dot-product attention on ``(features, tokens)`` activations (tokens = batch x sequence)."""
    dim = q.shape[0]
    hd = dim // heads
    q4 = q.reshape(heads, hd, batch, seq).transpose(2, 0, 3, 1)
    k4 = k.reshape(kv_heads, hd, batch, seq).transpose(2, 0, 3, 1)
    v4 = v.reshape(kv_heads, hd, batch, seq).transpose(2, 0, 3, 1)
    if kv_heads != heads:
        k4 = np.repeat(k4, heads // kv_heads, axis=1)
        v4 = np.repeat(v4, heads // kv_heads, axis=1)
    scores = (q4 @ k4.transpose(0, 1, 3, 2)) * q.dtype.type(1.0 / np.sqrt(hd))
    if causal:
        scores = np.where(np.triu(np.ones((seq, seq), dtype=bool), 1), -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = weights @ v4
    result: Array = np.ascontiguousarray(out.transpose(1, 3, 0, 2).reshape(dim, batch * seq))
    return result


# --------------------------------------------------------------------------- executable ops


@dataclass
class Op:
    """One executable layer: compute on its inputs; optional per-call conversion before it."""

    layer: Layer
    inputs: list[int]
    """Indices of earlier ops; -1 is the model input."""
    compute: Callable[[list[Array], Any], Array]
    convert: Callable[[], Any] | None = None
    """Run before every call when conversion is per call (host work, outside busy time)."""
    dense_path: bool = True
    handle: Any = None


def _dense_linear(weight: Array, precision: Precision) -> Callable[[list[Array], Any], Array]:
    wr = np.ascontiguousarray(round_input(weight, precision))

    def compute(args: list[Array], _: Any) -> Array:
        out: Array = wr @ round_input(args[0], precision)
        return out

    return compute


def _compress(weight32: Array, decision_layer: Layer) -> NMWeight | VNMWeight:
    pattern = decision_layer.pattern
    assert pattern is not None
    if pattern.block is None:
        return NMWeight.compress(weight32, pattern.n, pattern.m)
    return VNMWeight.compress(weight32, pattern.n, pattern.m, pattern.block)


def _nonlinear(layer: Layer, weight: Array | None, dtype: type[np.floating[Any]], workload: Workload) -> Callable[[list[Array], Any], Array]:
    fn = layer.function
    gain = None if weight is None else weight.astype(dtype)
    if layer.op == "norm":
        assert gain is not None
        norm = _rmsnorm if fn == "rmsnorm" else _layernorm
        return lambda args, _: norm(args[0], gain)
    if layer.op == "embedding":
        assert gain is not None
        table = np.ascontiguousarray(gain.T)
        return lambda args, _: np.ascontiguousarray(table[:, args[0]])
    if layer.op == "activation":
        assert fn is not None
        return lambda args, _: _activation(fn, args[0])
    if layer.op == "elementwise":
        if fn == "mul":
            def mul(args: list[Array], _: Any) -> Array:
                out = args[0] * args[1]
                for extra in args[2:]:
                    out = out * extra
                return out

            return mul

        def add(args: list[Array], _: Any) -> Array:
            out = args[0] + args[1]
            for extra in args[2:]:
                out = out + extra
            return out

        return add
    if layer.op == "attention":
        heads = layer.heads or 1
        kv_heads = layer.kv_heads or heads
        batch, seq = workload.tokens.batch, workload.tokens.sequence
        return lambda args, _: attention(args[0], args[1], args[2], heads, kv_heads, batch, seq, layer.causal)
    raise UserError(f"layer {layer.name!r}: op {layer.op!r} cannot be executed")


def build_ops(
    workload: Workload,
    shapes: Sequence[LayerShape],
    tensors: dict[str, Array],
    *,
    mode: str,
    decisions: dict[str, Decision] | None = None,
) -> list[Op]:
    """Executable ops for one model variant.

    ``mode``: ``reference`` (fp64, dense), ``dense`` (dense at each layer's
    precision) or ``candidate`` (sparse layers per ``decisions``, converted
    once or per call as the workload says).
    """
    index = {s.name: i for i, s in enumerate(shapes)}
    ops: list[Op] = []
    for layer, shape in zip(workload.layers, shapes, strict=True):
        inputs = [-1 if name == "input" else index[name] for name in shape.inputs]
        precision: Precision = "fp64" if mode == "reference" else workload.dtype_of(layer)
        dtype = compute_dtype(precision)
        weight = tensors.get(layer.name)
        if layer.op != "linear":
            ops.append(Op(layer, inputs, _nonlinear(layer, weight, dtype, workload)))
            continue
        assert weight is not None
        sparse = mode == "candidate" and decisions is not None and decisions[layer.name].path is KernelPath.SPARSE
        if not sparse:
            ops.append(Op(layer, inputs, _dense_linear(weight, precision)))
            continue
        # Round the weight to the input format once, before compressing, and round the activations
        # here: the kernel then multiplies in fp32 exactly as matmul(x, precision) would (rounding is
        # idempotent) without re-rounding the stored values on every call.
        weight32 = np.ascontiguousarray(round_input(weight, precision), dtype=np.float32)

        def compute(args: list[Array], handle: Any, _p: Precision = precision) -> Array:
            out: Array = handle.matmul(round_input(args[0], _p), "fp32")
            return out

        def convert(_w: Array = weight32, _l: Layer = layer) -> Any:
            return _compress(_w, _l)

        op = Op(layer, inputs, compute, dense_path=False)
        if workload.conversion == "per_call":
            op.convert = convert
        else:
            op.handle = convert()
        ops.append(op)
    return ops


@dataclass
class ForwardTrace:
    """Per-call timing inside forwards: busy time and per-layer compute time (ms)."""

    busy_ms: list[float] = field(default_factory=list)
    dense_ms: list[float] = field(default_factory=list)
    gaps_ms: list[list[float]] = field(default_factory=list)
    """Per op, per call: time from the previous op's end (or the forward's start) to this op's compute."""


def forward(ops: Sequence[Op], x: Array, trace: ForwardTrace | None = None, keep: bool = False) -> tuple[Array, list[Array]]:
    """Run the ops on the model input; returns the output and (with ``keep``) every layer output."""
    values: list[Array] = []
    clock = time.perf_counter
    busy = 0.0
    dense = 0.0
    gaps: list[float] = []
    end = clock()
    for op in ops:
        args = [x if i < 0 else values[i] for i in op.inputs]
        handle = op.convert() if op.convert is not None else op.handle
        start = clock()
        out = op.compute(args, handle)
        gaps.append(start - end)
        end = clock()
        spent = end - start
        busy += spent
        if op.dense_path:
            dense += spent
        values.append(out)
    if trace is not None:
        trace.busy_ms.append(busy * 1000.0)
        trace.dense_ms.append(dense * 1000.0)
        if not trace.gaps_ms:
            trace.gaps_ms = [[] for _ in ops]
        for samples, gap in zip(trace.gaps_ms, gaps, strict=True):
            samples.append(gap * 1000.0)
    return values[-1], (values if keep else [])


def _input_for(x: Array, precision: Precision) -> Array:
    if np.issubdtype(x.dtype, np.integer):
        return x
    return np.ascontiguousarray(x, dtype=compute_dtype(precision))


# --------------------------------------------------------------------------- quality


def quality(output: Array, reference: Array, labels: npt.NDArray[np.int64] | None = None, reference_accuracy: float | None = None) -> QualityDelta:
    """Cosine and relative error of ``output`` versus ``reference`` (and accuracy with labels)."""
    a = np.asarray(output, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    cosine = float(a @ b / denom) if denom > 0 else 0.0
    ref_norm = float(np.linalg.norm(b))
    rel = float(np.linalg.norm(a - b) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(a - b))
    accuracy = None if labels is None else accuracy_of(output, labels)
    return QualityDelta(cosine=cosine, rel_err=rel, accuracy=accuracy, dense_accuracy=reference_accuracy)


def accuracy_of(output: Array, labels: npt.NDArray[np.int64]) -> float:
    """Fraction of tokens whose argmax over output features equals the label."""
    return float(np.mean(np.argmax(output, axis=0) == labels))


# --------------------------------------------------------------------------- graph stage


def _graph_layer(workload: Workload, layer: Layer, shape: LayerShape) -> GraphLayer:
    tokens = workload.tokens.total
    dtype = workload.dtype_of(layer)
    size = _ITEMSIZE[dtype]
    params = 0
    flops = 0.0
    moved = 0.0
    weight_shape = None
    width_in = shape.in_widths[0]
    out = shape.out_width
    if layer.op == "linear":
        assert layer.shape is not None
        weight_shape = list(layer.shape)
        params = out * width_in
        flops = 2.0 * params * tokens
        moved = float(size * (params + width_in * tokens + out * tokens))
    elif layer.op == "embedding":
        assert layer.shape is not None
        weight_shape = list(layer.shape)
        params = layer.shape[0] * layer.shape[1]
        moved = float(size * (2 * out * tokens) + 8 * tokens)
    elif layer.op == "norm":
        params = out
        flops = 4.0 * out * tokens
        moved = float(size * (2 * out * tokens + out))
    elif layer.op == "attention":
        seq = workload.tokens.sequence
        flops = 4.0 * workload.tokens.batch * seq * seq * out
        moved = float(size * (sum(shape.in_widths) + out) * tokens)
    else:
        flops = float(out * tokens * len(shape.in_widths))
        moved = float(size * (sum(shape.in_widths) + out) * tokens)
    return GraphLayer(
        name=layer.name,
        op=OpKind(layer.op),
        weight_shape=weight_shape,
        input_shape=[tokens, width_in],
        output_shape=[tokens, out],
        dtype=dtype,
        intended=layer.sparsity,
        params=params,
        flops=flops,
        bytes=moved,
    )


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
    ctx = _Ctx(workload, rounds, progress or _no_progress)
    base_dir = source_path.parent if source_path is not None else None
    with _threads(workload.threads):
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
        layers=[_graph_layer(workload, layer, shape) for layer, shape in zip(workload.layers, shapes, strict=True)],
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
    return Prepared(shapes, weights, inputs, pruned, dense_ref_out, graph, decisions)


def lower_stage(workload: Workload, prepared: Prepared, *, rounds: int | None = None) -> LowerStage:
    """The lower stage: decisions, bytes, and (with ``rounds``) the timed conversion of each sparse layer."""
    layers = [
        _lower_layer(workload, layer, prepared.decisions[layer.name], prepared.pruned.get(layer.name), rounds)
        for layer in workload.layers
    ]
    return LowerStage(backend=get_profile(workload.backend).name, layers=layers)


def plan(workload: Workload, source_path: Path | None = None) -> tuple[GraphStage, LowerStage]:
    """Graph and lower stages only (no timing): what would run sparse, what falls back and why."""
    with _threads(workload.threads):
        prepared = prepare(workload, source_path.parent if source_path is not None else None)
        return prepared.graph, lower_stage(workload, prepared)


def _replay(ctx: _Ctx, base_dir: Path | None, source_path: Path | None) -> RunRecord:
    workload = ctx.workload
    rounds = ctx.repeats
    warmup = workload.warmup
    n_layers = len(workload.layers)
    prepared = prepare(workload, base_dir, ctx.progress)
    shapes, weights, inputs, pruned = prepared.shapes, prepared.weights, prepared.inputs, prepared.pruned
    dense_tensors = weights.tensors
    dense_ref_out = prepared.dense_ref_out
    graph = prepared.graph
    decisions = prepared.decisions
    lower = lower_stage(workload, prepared, rounds=rounds)
    ctx.tick("lower", n_layers, n_layers)

    # ---- candidate, dense baseline
    candidate_ops = build_ops(workload, shapes, pruned, mode="candidate", decisions=decisions)
    dense_ops = build_ops(workload, shapes, dense_tensors, mode="dense")
    precision = workload.precision
    x_run = _input_for(inputs.x, precision)
    candidate_out, candidate_values = forward(candidate_ops, x_run, keep=True)
    pruned_ref_ops = build_ops(workload, shapes, pruned, mode="reference")

    # ---- kernel: per layer chosen vs dense, numerics vs fp64 of the same pruned weights
    kernel_layers: list[KernelLayer] = []
    by_class: dict[str, float] = {}
    for i, (layer, op) in enumerate(zip(workload.layers, candidate_ops, strict=True)):
        ctx.tick("kernel", i, n_layers)
        args = [x_run if j < 0 else candidate_values[j] for j in op.inputs]
        klayer = _kernel_layer(workload, layer, op, dense_ops[i], pruned_ref_ops[i], args, candidate_values[i], rounds, warmup)
        cls = kernel_class(layer.op, decisions[layer.name].path, workload.dtype_of(layer)).value
        p50 = median(klayer.samples_ms)
        klayer.by_class_ms = {cls: p50}
        by_class[cls] = by_class.get(cls, 0.0) + p50
        kernel_layers.append(klayer)
    ctx.tick("kernel", n_layers, n_layers)
    kernel = KernelStage(layers=kernel_layers, by_class_ms=by_class)
    del candidate_values

    # ---- schedule: whole forward, candidate interleaved with the dense baseline
    ctx.tick("schedule", 0, 1)
    trace = ForwardTrace()
    samples = interleaved(
        {
            "candidate": lambda: forward(candidate_ops, x_run, trace),
            "dense": lambda: forward(dense_ops, x_run),
        },
        rounds=rounds,
        warmup=warmup,
    )
    busy = trace.busy_ms[-rounds:]
    dense_busy = trace.dense_ms[-rounds:]
    span = samples["candidate"]
    overhead = [s - b for s, b in zip(span, busy, strict=True)]
    dense_share = float(np.median([d / b if b > 0 else 1.0 for d, b in zip(dense_busy, busy, strict=True)]))
    per_call = sum(1 for op in candidate_ops if op.convert is not None)
    schedule = ScheduleStage(
        span_samples_ms=span,
        busy_samples_ms=busy,
        host_wait_ms=median(overhead),
        kernel_wait_ms=None,
        threads=workload.threads if workload.threads is not None else _blas_threads(),
        launches_per_iteration=len(candidate_ops) + per_call,
        dense_share=dense_share,
        layer_idle_samples_ms={
            layer.name: samples[-rounds:] for layer, samples in zip(workload.layers, trace.gaps_ms, strict=True)
        },
    )
    ctx.tick("schedule", 1, 1)

    # ---- outcome: SLA, speedup, quality, equal latency
    ctx.tick("outcome", 0, 2)
    dense_samples = samples["dense"]
    speedup = median(dense_samples) / median(span)
    labels = inputs.labels
    dense_accuracy = accuracy_of(dense_ref_out, labels) if labels is not None else None
    candidate_quality = quality(candidate_out, dense_ref_out, labels, dense_accuracy)
    equal = _equal_latency(ctx, shapes, dense_tensors, candidate_ops, x_run, span, dense_samples, dense_ref_out, labels, dense_accuracy, candidate_quality)
    ctx.tick("outcome", 1, 2)
    outcome = OutcomeStage(
        latency_samples_ms=span,
        budget_ms=workload.budget_ms,
        dense_baseline_samples_ms=dense_samples,
        effective_speedup=speedup,
        quality=candidate_quality,
        equal_latency=equal,
    )
    verdicts: list[Verdict] = []
    if workload.budget_ms is not None:
        p = percentiles(span)
        verdicts.append(
            Verdict(
                check="sla",
                status="pass" if p.p99 <= workload.budget_ms else "fail",
                detail=f"p99 {p.p99:.3f} ms vs budget {workload.budget_ms:g} ms (p50 {p.p50:.3f}, p95 {p.p95:.3f})",
            )
        )
    ctx.tick("outcome", 2, 2)

    files: list[FileDigest] = []
    workload_digest = file_digest(source_path) if source_path is not None else None
    for digest in (workload_digest, weights.source, inputs.source):
        if digest is not None:
            files.append(digest)
    return RunRecord(
        name=workload.name,
        source=RunSource(kind="replay", files=files),
        workload=WorkloadRef(
            name=workload.name, seed=workload.seed, file=workload_digest, weights=weights.source, knobs=workload.knobs()
        ),
        graph=graph,
        lower=lower,
        kernel=kernel,
        schedule=schedule,
        outcome=outcome,
        verdicts=verdicts,
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


def equal_latency_step(ratio: Callable[[int], float], steps: int) -> tuple[int, bool]:
    """Smallest narrowing step in ``1 .. steps-1`` whose latency ratio (narrowed / candidate) is at most 1.

    ``ratio(step)`` measures it; bisection assumes it falls as the step grows
    (fewer neurons, less work). Returns ``(step, reached)``; when even the
    largest step is slower, ``(steps - 1, False)``.
    """
    lo, hi = 1, steps - 1
    if ratio(hi) > 1.0:
        return hi, False
    while lo < hi:
        mid = (lo + hi) // 2
        if ratio(mid) <= 1.0:
            hi = mid
        else:
            lo = mid + 1
    ratio(lo)
    return lo, True


def _equal_latency(
    ctx: _Ctx,
    shapes: Sequence[LayerShape],
    dense_tensors: dict[str, Array],
    candidate_ops: list[Op],
    x_run: Array,
    span: list[float],
    dense_samples: list[float],
    dense_ref_out: Array,
    labels: npt.NDArray[np.int64] | None,
    dense_accuracy: float | None,
    candidate_quality: QualityDelta,
) -> EqualLatencyQuality | None:
    """Narrow the dense model until it is as fast as the candidate; compare qualities."""
    workload = ctx.workload
    if not ffn_groups(workload):
        return None
    rounds = max(5, ctx.repeats // 2)
    cache: dict[int, tuple[list[Op], float, float, float]] = {}

    def narrowed_ops(step: int) -> list[Op]:
        tensors = narrow(workload, dense_tensors, step / FRACTION_STEPS)
        return build_ops(workload, shapes, tensors, mode="dense")

    def ratio(step: int) -> float:
        if step not in cache:
            ops = narrowed_ops(step)
            timed = interleaved(
                {"candidate": lambda: forward(candidate_ops, x_run), "narrowed": lambda: forward(ops, x_run)},
                rounds=rounds,
                warmup=1,
            )
            narrowed_p50, candidate_p50 = median(timed["narrowed"]), median(timed["candidate"])
            cache[step] = (ops, narrowed_p50 / candidate_p50, narrowed_p50, candidate_p50)
        return cache[step][1]

    if median(dense_samples) <= median(span):
        step, reached = 0, True
        latency, candidate_latency = median(dense_samples), median(span)
    else:
        step, reached = equal_latency_step(ratio, FRACTION_STEPS)
        latency, candidate_latency = cache[step][2], cache[step][3]
    ops = narrowed_ops(step) if step not in cache else cache[step][0]
    out, _ = forward(ops, x_run)
    narrowed_quality = quality(out, dense_ref_out, labels, dense_accuracy)
    wins = (not reached) or candidate_quality.cosine > narrowed_quality.cosine
    return EqualLatencyQuality(
        narrowed_ffn_fraction=step / FRACTION_STEPS,
        narrowed_latency_ms=latency,
        candidate_latency_ms=candidate_latency,
        narrowed=narrowed_quality,
        candidate=candidate_quality,
        latency_matched=reached,
        sparsity_wins=wins,
    )
