"""A real checkpoint as the replay's graph source: the model's own forward, with the replay's kernels per linear.

:class:`CheckpointSource` is the :class:`~sparsedebug.sources.replay.protocol.GraphSource`
of a workload with ``model:``. Every linear runs through ``Transformer.linear``,
here on :class:`~sparsedebug.sources.replay.checkpoint.kernels.ModelKernels`:

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
    batch: its chosen kernel alone (a per-call conversion is timed apart in the
    lower stage and sits in the host gap before the layer, never in the kernel's
    samples) against the dense product of the unpruned weight, and the chosen kernel's
    error against an fp64 product of the same pruned weight.
``schedule``
    Whole forwards of the timed batch, the candidate against the dense model;
    busy time is the span minus the host work before each linear's compute
    (per-call conversion).
``outcome``
    Quality against the dense model on the evaluation text
    (:mod:`~sparsedebug.sources.replay.checkpoint.quality`), and the dense model
    narrowed by calibration importance for the equal-latency comparison
    (:mod:`~sparsedebug.sources.replay.checkpoint.narrow`).

On the target clock the checkpoint's forward is its linears (projected from
the GPU's measured GEMM rows) and, per block, the ops between them: the
attention core, two norms, the FFN activation (and SwiGLU's product) and two
residual adds (estimated from bytes, as the declared graphs' non-linear ops
are; see :mod:`sparsedebug.sources.replay.checkpoint.target`).

The loaded model, the text's batches, the pruned weights, the dense model's
outputs and the neuron importance are pure functions of the workload and are
kept for the rest of the process, so a walk replaying one model several times
computes them once; timings are measured every time. So is the quality of every
variant evaluated (the candidate's, a narrowed dense model's): a pure function of
the model, the evaluation text and, per linear, its weight (by what it was pruned
from and how), precision, sparse pattern and conversion; a walk that replays the
candidate again, or a baseline whose kernels are the dense model's at step 0 of the
narrowing, evaluates each variant once (:func:`quality_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from sparsedebug.core.stats import median
from sparsedebug.kernels.masks import Pattern
from sparsedebug.records.classification import Fix
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import GraphStage, KernelPath, LowerStage, QualityDelta, WorkloadRef
from sparsedebug.records.target import Launch, TargetClock
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
from sparsedebug.sources.replay.checkpoint.narrow import ModelNarrowing, ffn_blocks, narrowable, neuron_importance
from sparsedebug.sources.replay.checkpoint.prune import ModelCache, calibration_knobs, pruned_weights, weight_keys
from sparsedebug.sources.replay.checkpoint.quality import Outputs, evaluate, evidence_of, quality_delta
from sparsedebug.sources.replay.checkpoint.target import model_calls
from sparsedebug.sources.replay.checkpoint.workload import (
    ModelLayer,
    checkpoint_weights,
    decide,
    graph_stage,
    lower_stage,
    model_key,
    open_model,
    override_layer,
    resolve_layers,
    static_stages,
)
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS
from sparsedebug.sources.replay.protocol import KernelCase, Narrowing, Progress, ScheduleParts, TargetCall, fix_is_advice
from sparsedebug.sources.target.model import target_model
from sparsedebug.sources.target.project import project_calls, target_clock, with_tokens
from sparsedebug.sources.workload.lowering import Decision, flag_slower_than_dense, kernel_class
from sparsedebug.sources.workload.model_spec import ModelRef
from sparsedebug.sources.workload.schema import Layer, Workload

_CACHE = ModelCache()
# Quality figures of the variants evaluated, by :func:`quality_key` (small records: more are kept than of the arrays).
_QUALITY = ModelCache(keep=64)


# One linear of a variant as its quality depends on it: name, what its weight is a function of, precision, sparse
# pattern (None: dense) and whether it converts per call.
KernelSpec = tuple[str, Hashable, str, str | None, bool]


def quality_key(evaluation: str, linears: list[KernelSpec]) -> tuple[Hashable, ...]:
    """What a variant's quality on the evaluation text is a pure function of: the model and the text
    (``evaluation``) and every linear's :data:`KernelSpec`. Variants with one key compute the same outputs."""
    return (evaluation, tuple(sorted(linears)))


def kernel_specs(kernels: ModelKernels, weights: Mapping[str, Hashable]) -> list[KernelSpec]:
    """Every linear of ``kernels`` as a :data:`KernelSpec` (``weights``: what each weight is a function of)."""
    return [
        (name, weights[name], kernel.precision, str(kernel.pattern) if kernel.pattern is not None else None, kernel.per_call)
        for name, kernel in kernels.kernels.items()
    ]  # fmt: skip


def holds(workload: Workload) -> bool:
    """Whether ``workload``'s graph is a checkpoint (``model:``) rather than declared layers."""
    return workload.model is not None


@dataclass
class CheckpointSource:
    """The graph source of a model workload (its model and text paths made absolute by the caller)."""

    workload: Workload

    @property
    def ref(self) -> ModelRef:
        """The workload's ``model:`` block."""
        ref = self.workload.model
        assert ref is not None, "a CheckpointSource holds a model workload"
        return ref

    @property
    def shrinkable(self) -> bool:
        """A checkpoint's graph is the checkpoint's: reduce halves its tokens only."""
        return False

    @property
    def label(self) -> str:
        """``model NAME``."""
        return f"model {self.ref.name}"

    def check_cost(self, repeats: int | None, source: str | None, *, timed: bool) -> None:
        """Nothing to estimate before the checkpoint is open: its size is the checkpoint's, its tokens and repeats
        are bounded by the schema, and the text length is checked when the text is cut."""
        return None

    def _layers(self) -> tuple[LoadedModel, list[ModelLayer]]:
        loaded = open_model(self.ref)
        return loaded, resolve_layers(self.workload, loaded.model.linears)

    def static_stages(self) -> tuple[GraphStage, LowerStage]:
        """Graph and lower stages without pruning or timing (compliance checked on the checkpoint's weights)."""
        return static_stages(self.workload)

    def layer_count(self) -> int:
        """The checkpoint's linears."""
        return len(open_model(self.ref).model.linears)

    def target_calls(self, paths: Mapping[str, str] | None = None, tokens: int | None = None) -> list[TargetCall]:
        """The checkpoint's linears and the ops between them as target calls (linears as lowered unless ``paths``)."""
        loaded, layers = self._layers()
        if paths is None:
            decisions = decide(self.workload, layers, checkpoint_weights(loaded))
            paths = {name: decision.path.value for name, decision in decisions.items()}
        sized = self.workload if tokens is None else with_tokens(self.workload, tokens)
        return model_calls(loaded.model, layers, sized, paths)

    def apply_layer_fix(self, fix: Fix) -> tuple[Workload | None, Note]:
        """A layer fix rewrites the layer's entry; shapes are the checkpoint's, and blocks follow the pruning block."""
        if fix.kind == "block":
            return None, note("targets.fix_block_checkpoint", model=self.ref.name)
        if fix.layer is None:
            return None, fix_is_advice(fix)
        name = fix.layer.removesuffix(".weight")
        if fix.action == "exclude":
            new, was = override_layer(self.workload, name, sparsity="dense")
            return new, note("targets.fix_excluded", layer=name, old=was.sparsity)
        if fix.action == "cast" and isinstance(fix.value, str):
            new, was = override_layer(self.workload, name, dtype=fix.value)
            return new, note("targets.fix_cast", layer=name, old=was.dtype or self.workload.precision, new=fix.value)
        if fix.action == "pad":
            return None, note("targets.fix_pad_checkpoint", layer=name)
        return None, fix_is_advice(fix)

    def entry_text(self, layer: Layer) -> str:
        """An entry is the layer's whole declaration: its dtype and sparsity."""
        return f"{layer.op}: dtype {self.workload.dtype_of(layer)}, sparsity {layer.sparsity}"

    def model_file(self) -> Path | None:
        """The checkpoint's weights file (fetched on first use)."""
        return Path(open_model(self.ref).weights.path)

    def prepare(self, progress: Progress) -> CheckpointPrepared:
        """Open, cut the text, prune, decide; the kernel sets of the candidate and the dense model."""
        workload, ref = self.workload, self.ref
        progress("graph", 0, 3)
        loaded = open_model(ref)
        key = "|".join(str(part) for part in model_key(ref))
        layers = resolve_layers(workload, loaded.model.linears)
        data = model_data(workload, loaded, key)
        progress("graph", 1, 3)
        weights = pruned_weights(_CACHE, workload, loaded, key, layers, data)
        pruned = weight_keys(workload, key, layers, data)
        progress("graph", 2, 3)
        graph = graph_stage(layers, workload.tokens.total, loaded.weights.sha256)
        progress("graph", 3, 3)
        decisions = decide(workload, layers, weights)
        paths = {name: decision.path.value for name, decision in decisions.items()}
        target = target_clock(workload, calls=model_calls(loaded.model, layers, workload, paths))
        precisions = {layer.name: layer.dtype for layer in layers}
        sparse: dict[str, Pattern] = {
            layer.name: layer.pattern for layer in layers if decisions[layer.name].path is KernelPath.SPARSE and layer.pattern
        }
        return CheckpointPrepared(
            workload, ref, loaded, key, data, layers, decisions, weights, {name: pruned.get(name, ("checkpoint", key)) for name in weights},
            graph, target,
            candidate=candidate_kernels(weights, precisions, sparse, workload.conversion == "per_call"),
            dense=dense_kernels(checkpoint_weights(loaded), precisions),
        )  # fmt: skip


@dataclass
class _Forwards:
    """The candidate (traced) and dense forwards of the timed batch."""

    model: Transformer
    data: ModelData
    candidate_kernels: ModelKernels
    dense_kernels: ModelKernels
    names: list[str]
    trace: ForwardTrace = field(default_factory=ForwardTrace)

    def candidate(self) -> object:
        """One traced candidate forward (the trace is attached for that forward only)."""
        kernels = self.candidate_kernels
        kernels.trace = self.trace
        try:
            return timed_forward(kernels, lambda: self.model.hidden(self.data.timed, kernels))
        finally:
            kernels.trace = None

    def dense(self) -> object:
        """One dense forward."""
        return self.model.hidden(self.data.timed, self.dense_kernels)

    def parts(self, span: list[float], kept: list[int]) -> ScheduleParts:
        """Busy time is the span minus the host work before each linear's compute; the dense share excludes sparse kernels."""
        host = [self.trace.host_ms[i] for i in kept]
        sparse = [self.trace.sparse_ms[i] for i in kept]
        busy = [max(s - h, 0.0) for s, h in zip(span, host, strict=True)]
        per_call = sum(1 for kernel in self.candidate_kernels.kernels.values() if kernel.per_call)
        return ScheduleParts(
            busy_samples_ms=busy,
            dense_share=median([(b - sp) / b if b > 0 else 1.0 for b, sp in zip(busy, sparse, strict=True)]),
            layer_idle_samples_ms={name: [values[i] for i in kept] for name, values in self.trace.layer_host_ms.items()},
            launches_per_iteration=len(self.names) + per_call,
        )


@dataclass
class CheckpointPrepared:
    """One model replay made concrete: the model and its data, the pruned weights, decisions and kernel sets."""

    workload: Workload
    ref: ModelRef
    loaded: LoadedModel
    key: str
    data: ModelData
    layers: list[ModelLayer]
    decisions: dict[str, Decision]
    weights: dict[str, Array]
    # What each weight is a pure function of (``prune.weight_keys``): the quality cache's key.
    weight_keys: dict[str, Hashable]
    graph: GraphStage
    target: TargetClock | None
    candidate: ModelKernels
    dense: ModelKernels

    @property
    def model(self) -> Transformer:
        """The checkpoint's network."""
        return self.loaded.model

    def lower(self, rounds: int | None) -> LowerStage:
        """Per linear: path, reason, kernels, compressed bytes, and the timed conversion of the sparse ones."""
        stage = lower_stage(self.workload, self.layers, self.decisions, self.weights, rounds)
        if self.target is not None:
            flag_slower_than_dense(stage.layers, self.target)
        return stage

    def _captured(self) -> dict[str, Array]:
        captured: dict[str, Array] = {}

        def hook(name: str, x: Array, y: Array) -> None:
            captured[name] = np.array(x, dtype=np.float32, copy=True)

        self.model.hidden(self.data.timed, self.candidate, hook)
        return captured

    def kernel_cases(self) -> list[KernelCase]:
        """Every linear on its input in one candidate forward of the timed batch."""
        inputs = self._captured()
        cases = []
        for layer in self.layers:
            x = inputs[layer.name]
            chosen, dense = self.candidate.kernels[layer.name], self.dense.kernels[layer.name]
            weight = self.weights[layer.name]

            def errors(chosen: Callable[[Array], Array] = chosen, x: Array = x, weight: Array = weight) -> tuple[float, float]:
                out = np.asarray(chosen(x), dtype=np.float64)
                reference = x.astype(np.float64) @ weight.astype(np.float64).T
                diff = np.abs(out - reference)
                ref_norm = float(np.linalg.norm(reference))
                max_abs = float(diff.max()) if diff.size else 0.0
                return max_abs, float(np.linalg.norm(diff) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(diff))

            cases.append(
                KernelCase(
                    name=layer.name, precision=layer.dtype,
                    kernel_class=kernel_class("linear", self.decisions[layer.name].path, layer.dtype).value,
                    chosen=partial(chosen.compute, x, chosen.prepared()), dense=partial(dense, x), errors=errors,
                )
            )  # fmt: skip
        return cases

    def forwards(self) -> _Forwards:
        """The candidate and the dense forward of the timed batch."""
        return _Forwards(self.model, self.data, self.candidate, self.dense, [layer.name for layer in self.layers])

    @property
    def _evaluation(self) -> str:
        """The model and the evaluation text, as a key."""
        return f"{self.key}|{self.data.corpus.sha256}|{self.data.study.split.evaluation_tokens}"

    def _reference(self) -> Outputs:
        return _CACHE.get(("reference", self._evaluation), lambda: evaluate(self.model, self.data.evaluation))

    def _quality(self, model: Transformer, kernels: ModelKernels) -> QualityDelta:
        evidence = evidence_of(self.loaded, self.ref.name, self.data)
        return quality_delta(evaluate(model, self.data.evaluation, kernels), self._reference(), evidence)

    def candidate_quality(self) -> QualityDelta:
        """Real-text quality against the dense model on the evaluation text (evaluated once per variant, :func:`quality_key`)."""
        key = quality_key(self._evaluation, kernel_specs(self.candidate, self.weight_keys))
        return _QUALITY.get(key, lambda: self._quality(self.model, self.candidate))

    def _narrowed_quality(self, importance: Hashable, step: int, measure: Callable[[], QualityDelta]) -> QualityDelta:
        """A narrowed dense model's quality, evaluated once per variant: step 0 is the dense model on its dense
        kernels (the key a dense candidate's quality has), a further step the FFNs narrowed by ``importance``."""
        checkpoint: Hashable = ("checkpoint", self.key)
        precisions = {layer.name: layer.dtype for layer in self.layers}
        specs: list[KernelSpec] = [
            (name, checkpoint if step == 0 else ("narrowed", importance, step), precisions[name], None, False) for name in self.weights
        ]
        return _QUALITY.get(quality_key(self._evaluation, specs), measure)

    def narrowing(self) -> Narrowing | None:
        """The dense model narrowed by calibration importance (None when its FFNs cannot be rebuilt narrower)."""
        model = self.model
        if not narrowable(model):
            return None
        calibration = self.data.calibration
        importance_key = ("importance", f"{self.key}|{self.data.corpus.sha256}|{len(calibration.ids)}")
        return ModelNarrowing(
            model,
            lambda: _CACHE.get(importance_key, lambda: neuron_importance(model, ffn_blocks(model), calibration)),
            {layer.name: layer.dtype for layer in self.layers}, self.data.timed, self._quality,
            note("targets.importance_calibration", tokens=len(calibration.ids), text=self.data.corpus.source),
            self._narrowed_target_ms, partial(self._narrowed_quality, importance_key),
        )  # fmt: skip

    def _narrowed_target_ms(self, step: int, launch: Launch) -> float | None:
        """The dense model with every FFN narrowed by ``step / FRACTION_STEPS``, its forward projected onto the target."""
        found = target_model(self.workload.backend)
        if found is None:
            return None
        width = ffn_blocks(self.model)[0].width
        keep = max(1, int(round(width * (1.0 - step / FRACTION_STEPS))))
        calls = model_calls(self.model, self.layers, self.workload, {}, ffn_keep=keep)
        forward = project_calls(found, calls, launch)[1].dense
        return forward.total_ms if forward is not None else None

    def reference(self, workload_file: FileDigest | None) -> tuple[list[FileDigest], WorkloadRef]:
        """The workload file and the checkpoint by digest; knobs with the model's and the calibration text."""
        workload = self.workload
        knobs = workload.knobs() | calibration_knobs(workload, self.data)
        files = [d for d in (workload_file, self.loaded.weights) if d is not None]
        ref = WorkloadRef(name=workload.name, seed=workload.seed, file=workload_file, weights=self.loaded.weights, knobs=knobs)
        return files, ref
