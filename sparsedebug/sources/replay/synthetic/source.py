"""A declared graph as the replay's graph source: seeded or loaded weights over the layers the workload lists.

:class:`SyntheticSource` is the :class:`~sparsedebug.sources.replay.protocol.GraphSource`
of a workload without ``model:``. Its graph stage checks the graph, builds the
weights and inputs, prunes to the intended patterns (magnitude, or wanda on the
layer inputs of the dense model) and records the layer inventory; its lower
stage asks the backend profile per layer for the sparse path or a dense fallback.
The kernel stage times each layer on the input it sees in the candidate forward
(the chosen path's kernel alone, against the dense path; a per-call conversion is timed apart) and measures
its error against an fp64 product of the same pruned weights; the schedule stage
times the whole forward (busy time is the summed layer compute; the host time
before each layer, a per-call conversion included, is its idle gap). Quality is against the dense unpruned model
in fp64; the equal-latency model narrows the FFN groups by neuron magnitude
(:mod:`sparsedebug.sources.replay.synthetic.narrow`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.records.classification import Fix
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.notes import Note
from sparsedebug.records.run import GraphStage, KernelPath, LowerLayer, LowerStage, QualityDelta, WorkloadRef
from sparsedebug.records.target import TargetClock
from sparsedebug.sources.replay.cost import check_replay
from sparsedebug.sources.replay.protocol import KernelCase, Narrowing, Progress, ScheduleParts, TargetCall
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
from sparsedebug.sources.replay.synthetic.fix import apply_graph_fix
from sparsedebug.sources.replay.synthetic.narrow import GraphNarrowing, ffn_groups
from sparsedebug.sources.replay.synthetic.weights import Inputs, Weights, build_inputs, build_weights, is_compliant, prune
from sparsedebug.sources.target.project import lowered_paths, target_clock, with_tokens, workload_calls
from sparsedebug.sources.workload.graph import LayerShape, check_graph
from sparsedebug.sources.workload.inventory import graph_layer
from sparsedebug.sources.workload.lowering import Decision, LayerQuery, flag_slower_than_dense, get_profile, kernel_class
from sparsedebug.sources.workload.schema import Layer, Workload


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class SyntheticSource:
    """The graph source of a declared graph; ``base_dir`` resolves relative weight and calibration paths."""

    workload: Workload
    base_dir: Path | None = None

    @property
    def shrinkable(self) -> bool:
        """A declared graph can lose blocks and layers and be narrowed."""
        return True

    @property
    def label(self) -> str:
        """``graph of N layers``."""
        return f"graph of {len(self.workload.layers)} layers"

    def check_cost(self, repeats: int | None, source: str | None, *, timed: bool) -> None:
        """Refuse a replay whose estimated memory or work does not fit this machine."""
        check_replay(self.workload, repeats, source, timed=timed)

    def static_stages(self) -> tuple[GraphStage, LowerStage]:
        """Graph and lower stages without timing."""
        prepared = self.prepare(_no_progress)
        return prepared.graph, prepared.lower(None)

    def layer_count(self) -> int:
        """The declared layers."""
        return len(self.workload.layers)

    def target_calls(self, paths: Mapping[str, str] | None = None, tokens: int | None = None) -> list[TargetCall]:
        """The declared layers as target calls (at ``tokens`` per forward; linears as lowered unless ``paths``)."""
        sized = self.workload if tokens is None else with_tokens(self.workload, tokens)
        return workload_calls(sized, lowered_paths(sized) if paths is None else paths)

    def apply_layer_fix(self, fix: Fix) -> tuple[Workload | None, Note]:
        """Exclude, pad or cast a layer, or change the block size of V:N:M layers."""
        return apply_graph_fix(self.workload, fix)

    def entry_text(self, layer: Layer) -> str:
        """A declared layer is named by its op."""
        return layer.op

    def model_file(self) -> Path | None:
        """A declared graph has no checkpoint."""
        return None

    def prepare(self, progress: Progress) -> SyntheticPrepared:
        """Graph stage and lowering decisions, without any timing: weights, inputs, pruning, profile."""
        workload, tick = self.workload, progress
        profile = get_profile(workload.backend)
        shapes = check_graph(workload)
        tick("graph", 0, 3)
        weights = build_weights(workload, self.base_dir)
        inputs = build_inputs(workload, self.base_dir, out_width=shapes[-1].out_width)
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
            tick("lower", i, len(workload.layers))
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
        return SyntheticPrepared(workload, shapes, weights, inputs, pruned, dense_ref_out, graph, decisions, target)


@dataclass
class _Forwards:
    """The candidate (traced) and dense forwards of a declared graph."""

    candidate_ops: list[Op]
    dense_ops: list[Op]
    x: Array
    names: list[str]
    trace: ForwardTrace = field(default_factory=ForwardTrace)

    def candidate(self) -> object:
        """One traced candidate forward."""
        return forward(self.candidate_ops, self.x, self.trace)

    def dense(self) -> object:
        """One dense forward."""
        return forward(self.dense_ops, self.x)

    def parts(self, span: list[float], kept: list[int]) -> ScheduleParts:
        """Busy time is the summed layer compute; the dense share is the dense-path part of it."""
        busy = [self.trace.busy_ms[i] for i in kept]
        dense_busy = [self.trace.dense_ms[i] for i in kept]
        return ScheduleParts(
            busy_samples_ms=busy,
            dense_share=median([d / b if b > 0 else 1.0 for d, b in zip(dense_busy, busy, strict=True)]),
            layer_idle_samples_ms={name: [gaps[i] for i in kept] for name, gaps in zip(self.names, self.trace.gaps_ms, strict=True)},
            launches_per_iteration=len(self.candidate_ops) + sum(1 for op in self.candidate_ops if op.convert is not None),
        )


@dataclass
class SyntheticPrepared:
    """A declared graph made concrete: shapes, weights (dense and pruned), inputs, reference output, decisions."""

    workload: Workload
    shapes: list[LayerShape]
    weights: Weights
    inputs: Inputs
    pruned: dict[str, Array]
    dense_ref_out: Array
    graph: GraphStage
    decisions: dict[str, Decision]
    target: TargetClock | None = None
    _candidate_out: Array | None = None

    @cached_property
    def candidate_ops(self) -> list[Op]:
        """The candidate: pruned weights on the chosen paths (built when first timed, never for a static probe)."""
        return build_ops(self.workload, self.shapes, self.pruned, mode="candidate", decisions=self.decisions)

    @cached_property
    def dense_ops(self) -> list[Op]:
        """The dense baseline: unpruned weights, every layer dense."""
        return build_ops(self.workload, self.shapes, self.weights.tensors, mode="dense")

    @cached_property
    def reference_ops(self) -> list[Op]:
        """fp64 operators of the pruned weights (the kernel stage's reference)."""
        return build_ops(self.workload, self.shapes, self.pruned, mode="reference")

    @cached_property
    def x(self) -> Array:
        """The model input at the run's precision."""
        return _input_for(self.inputs.x, self.workload.precision)

    def lower(self, rounds: int | None) -> LowerStage:
        """Decisions, bytes, and (with ``rounds``) the timed conversion of each sparse layer."""
        workload = self.workload
        layers = [
            _lower_layer(workload, layer, self.decisions[layer.name], self.pruned.get(layer.name), rounds)
            for layer in workload.layers
        ]
        if self.target is not None:
            flag_slower_than_dense(layers, self.target)
        return LowerStage(backend=get_profile(workload.backend).name, layers=layers)

    def _candidate(self) -> tuple[Array, list[Array]]:
        out, values = forward(self.candidate_ops, self.x, keep=True)
        self._candidate_out = out
        return out, values

    def kernel_cases(self) -> list[KernelCase]:
        """Every layer on the input it sees in the candidate forward: chosen path, dense path, error against fp64."""
        _, values = self._candidate()
        cases = []
        for i, (layer, op) in enumerate(zip(self.workload.layers, self.candidate_ops, strict=True)):
            args = [self.x if j < 0 else values[j] for j in op.inputs]
            cases.append(self._case(layer, op, self.dense_ops[i], self.reference_ops[i], args, values[i]))
        return cases

    def _case(self, layer: Layer, op: Op, dense_op: Op, ref_op: Op, args: list[Array], output: Array) -> KernelCase:
        # The kernel alone: a per-call conversion is host work before the layer's compute, timed apart
        # (lower.conversion_ms) and counted in the host gap before the layer, never in its kernel samples.
        handle = op.convert() if op.convert is not None else op.handle

        def chosen() -> Array:
            return op.compute(args, handle)

        def errors() -> tuple[float, float]:
            ref_args = [a if np.issubdtype(a.dtype, np.integer) else a.astype(np.float64) for a in args]
            reference = np.asarray(ref_op.compute(ref_args, ref_op.handle), dtype=np.float64)
            diff = np.abs(np.asarray(output, dtype=np.float64) - reference)
            ref_norm = float(np.linalg.norm(reference))
            max_abs = float(diff.max()) if diff.size else 0.0
            return max_abs, float(np.linalg.norm(diff) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(diff))

        dtype = self.workload.dtype_of(layer)
        dense: Callable[[], object] | None = (lambda: dense_op.compute(args, dense_op.handle)) if layer.op == "linear" else None
        cls = kernel_class(layer.op, self.decisions[layer.name].path, dtype).value
        return KernelCase(name=layer.name, precision=dtype, kernel_class=cls, chosen=chosen, dense=dense, errors=errors)

    def forwards(self) -> _Forwards:
        """The candidate and the dense forward."""
        return _Forwards(self.candidate_ops, self.dense_ops, self.x, [layer.name for layer in self.workload.layers])

    def _labels(self) -> tuple[npt.NDArray[np.int64] | None, float | None]:
        labels = self.inputs.labels
        return labels, accuracy_of(self.dense_ref_out, labels) if labels is not None else None

    def candidate_quality(self) -> QualityDelta:
        """Output cosine and relative error (and accuracy with labels) against the dense unpruned model in fp64."""
        out = self._candidate_out if self._candidate_out is not None else self._candidate()[0]
        labels, dense_accuracy = self._labels()
        return quality(out, self.dense_ref_out, labels, dense_accuracy)

    def narrowing(self) -> Narrowing | None:
        """The dense model narrowed by neuron magnitude (None without an FFN group)."""
        if not ffn_groups(self.workload):
            return None
        labels, dense_accuracy = self._labels()
        return GraphNarrowing(self.workload, self.shapes, self.weights.tensors, self.x, self.dense_ref_out, labels, dense_accuracy)

    def reference(self, workload_file: FileDigest | None) -> tuple[list[FileDigest], WorkloadRef]:
        """The workload file, the weights and the calibration input, by digest; the knobs."""
        workload = self.workload
        files = [digest for digest in (workload_file, self.weights.source, self.inputs.source) if digest is not None]
        ref = WorkloadRef(
            name=workload.name, seed=workload.seed, file=workload_file, weights=self.weights.source, knobs=workload.knobs()
        )
        return files, ref


def _lower_layer(workload: Workload, layer: Layer, decision: Decision, weight: Array | None, rounds: int | None) -> LowerLayer:
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
