"""A model workload resolved against its checkpoint: every linear's intent, the graph and lower stages.

:func:`open_model` loads the workload's model (fetched into the cache on first
use, which says so on stderr) and keeps it for the rest of the process, so a walk
that replays the same model several times reads it once. :func:`resolve_layers`
gives every linear, in forward order, its intended sparsity and dtype (the
pruning block, then the per-layer entries; see
:mod:`sparsedebug.sources.workload.model_spec`). :func:`static_stages` is the
graph and lower stages without timing (what ``sparsedebug lower`` prints and
what ``reduce`` probes); :func:`override_layer` rewrites one layer's entry (what
a layer fix does to a model workload).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sparsedebug.core.dtypes import dtype_info
from sparsedebug.core.errors import UserError
from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.masks import Pattern, check_block, check_compliance, parse_pattern
from sparsedebug.kernels.precision import round_input
from sparsedebug.kernels.vnm import compress
from sparsedebug.records.run import GraphLayer, GraphStage, KernelPath, LowerLayer, LowerStage, OpKind
from sparsedebug.sources.models.base import Array, Linear
from sparsedebug.sources.workload.lowering import Decision, LayerQuery, get_profile, kernel_class
from sparsedebug.sources.workload.schema import Dtype, Layer, Workload

if TYPE_CHECKING:
    from sparsedebug.sources.models.load import LoadedModel
    from sparsedebug.sources.workload.model_spec import ModelRef

# Methods that prune the checkpoint's weights (their result complies with the pattern by construction).
PRUNING_METHODS = ("magnitude", "wanda", "sparsegpt")

_MODELS: dict[tuple[str, int, int], LoadedModel] = {}
_KEEP_MODELS = 2


def stderr_log(message: str) -> None:
    """Model fetch and load messages go to stderr (stdout may hold JSON)."""
    print(message, file=sys.stderr, flush=True)


def model_key(ref: ModelRef) -> tuple[str, int, int]:
    """What identifies a loaded model within the process: its name or path, and the file's size and mtime."""
    path = Path(ref.name)
    target = path / "model.safetensors" if path.is_dir() else path
    if target.is_file():
        stat = target.stat()
        return str(target.resolve()), stat.st_size, stat.st_mtime_ns
    return ref.name, 0, 0


def open_model(ref: ModelRef, log: Callable[[str], None] = stderr_log) -> LoadedModel:
    """The loaded model of ``ref`` (fetched on first use); kept for the rest of the process."""
    from sparsedebug.sources.models.load import load_model

    key = model_key(ref)
    loaded = _MODELS.get(key)
    if loaded is None:
        loaded = load_model(ref.name, log)
        while len(_MODELS) >= _KEEP_MODELS:
            _MODELS.pop(next(iter(_MODELS)))
        _MODELS[key] = loaded
    return loaded


@dataclass(frozen=True)
class ModelLayer:
    """One linear of the model with what the workload intends for it."""

    linear: Linear
    sparsity: str
    dtype: Dtype
    # True when the workload's ``layers`` has an entry for it.
    entry: bool

    @property
    def name(self) -> str:
        """The checkpoint's name of the linear (without ``.weight``)."""
        return self.linear.name

    @property
    def pattern(self) -> Pattern | None:
        """The intended pattern, or None when dense."""
        return None if self.sparsity == "dense" else parse_pattern(self.sparsity)


def entry_name(layer: Layer) -> str:
    """A ``layers`` entry's linear name (``.weight`` may be written)."""
    return layer.name.removesuffix(".weight")


def resolve_layers(workload: Workload, linears: Mapping[str, Linear]) -> list[ModelLayer]:
    """Every linear of the model in forward order, with its intended sparsity and dtype.

    ``UserError`` naming the entry when it names no linear of the model, and
    naming the layer when its input width is not a multiple of the pattern's M.
    """
    from sparsedebug.sources.models.select import select_layers

    assert workload.model is not None
    entries = {entry_name(layer): layer for layer in workload.layers}
    example = next(iter(linears), "(none)")
    for name in entries:
        if name not in linears:
            raise UserError(f"layer {name!r}: model {workload.model.name} has no linear of that name (names look like {example!r})")
    selected: set[str] = set()
    pruning = workload.pruning
    if pruning.pattern is not None:
        try:
            selected = {layer.name for layer in select_layers(pruning.layers, linears.values())}
        except UserError as exc:
            raise UserError(f"pruning.layers: {exc}") from None
    out: list[ModelLayer] = []
    for name, linear in linears.items():
        entry = entries.get(name)
        if entry is not None:
            layer = ModelLayer(linear, entry.sparsity, workload.dtype_of(entry), True)
        else:
            sparsity = pruning.pattern if name in selected and pruning.pattern is not None else "dense"
            layer = ModelLayer(linear, sparsity, workload.precision, False)
        pattern = layer.pattern
        if pattern is not None and linear.in_features % pattern.m:
            raise UserError(f"layer {name!r}: K={linear.in_features} is not divisible by M={pattern.m} of pattern {pattern}")
        if pattern is not None and entry is not None:
            check_block(linear.out_features, pattern, f"layer {name!r}: sparsity")
        out.append(layer)
    pruned = [linears[name] for name in selected if name in linears and name not in entries]
    if pruning.pattern is not None and pruned:
        tallest = max(pruned, key=lambda linear: linear.out_features)
        check_block(tallest.out_features, parse_pattern(pruning.pattern), f"pruning.pattern (the tallest selected layer, {tallest.name})")
    return out


def graph_stage(layers: list[ModelLayer], tokens: int, revision: str) -> GraphStage:
    """The graph stage: one linear layer per entry, dense-equivalent FLOPs and bytes of one call."""
    rows = []
    for layer in layers:
        lin = layer.linear
        params = lin.out_features * lin.in_features
        size = dtype_info(layer.dtype).itemsize
        rows.append(
            GraphLayer(
                name=layer.name, op=OpKind.LINEAR, weight_shape=[lin.out_features, lin.in_features],
                input_shape=[tokens, lin.in_features], output_shape=[tokens, lin.out_features], dtype=layer.dtype,
                intended=layer.sparsity, params=params, flops=2.0 * params * tokens,
                bytes=float(size * (params + lin.in_features * tokens + lin.out_features * tokens)),
            )
        )  # fmt: skip
    return GraphStage(layers=rows, tokens=tokens, model_revision=revision)


def decide(workload: Workload, layers: list[ModelLayer], weights: Mapping[str, Array] | None) -> dict[str, Decision]:
    """The backend profile's decision per layer.

    Layers pruned by the workload comply by construction; with ``pruning.method:
    none`` (weights already pruned) compliance is checked on ``weights``, the
    checkpoint's (a dense checkpoint does not comply).
    """
    profile = get_profile(workload.backend)
    prunes = workload.pruning.method in PRUNING_METHODS
    decisions: dict[str, Decision] = {}
    for layer in layers:
        pattern = layer.pattern
        compliant: bool | None = None
        if pattern is not None:
            if prunes:
                compliant = True
            elif weights is not None:
                compliant = check_compliance(weights[layer.name], pattern.n, pattern.m, pattern.block).compliant
        lin = layer.linear
        query = LayerQuery(
            name=layer.name, op="linear", out=lin.out_features, k=lin.in_features, dtype=layer.dtype,
            pattern=pattern, compliant=compliant,
        )  # fmt: skip
        decisions[layer.name] = profile.decide(query)
    return decisions


def lower_stage(
    workload: Workload, layers: list[ModelLayer], decisions: dict[str, Decision], weights: Mapping[str, Array], rounds: int | None
) -> LowerStage:
    """Per layer: path, reason, kernels, and for sparse layers the compressed bytes and (with ``rounds``) the timed conversion."""
    records = []
    for layer in layers:
        decision = decisions[layer.name]
        record = LowerLayer(
            name=layer.name, path=decision.path, reason=decision.reason, detail=decision.detail,
            kernel_class=kernel_class("linear", decision.path, layer.dtype), kernels=list(decision.kernels),
        )  # fmt: skip
        weight = np.ascontiguousarray(weights[layer.name], dtype=np.float32)
        pattern = layer.pattern
        if decision.path is KernelPath.SPARSE and pattern is not None:
            rounded = np.ascontiguousarray(round_input(weight, layer.dtype))
            footprint = compress(rounded, pattern).footprint()
            if rounds is not None:
                timed = interleaved({"convert": lambda: compress(rounded, pattern)}, rounds=min(rounds, 5), warmup=1)
                record.conversion_ms = median(timed["convert"])
            record.conversions_per_call = 1 if workload.conversion == "per_call" else 0
            record.value_bytes, record.metadata_bytes = footprint.value_bytes, footprint.metadata_bytes
            record.dense_bytes = footprint.dense_bytes
        else:
            record.value_bytes = record.dense_bytes = int(weight.nbytes)
            record.metadata_bytes = 0
        records.append(record)
    return LowerStage(backend=get_profile(workload.backend).name, layers=records)


def checkpoint_weights(loaded: LoadedModel) -> dict[str, Array]:
    """The checkpoint's weight of every linear, by linear name."""
    model = loaded.model
    return {name: model.weight(name) for name in model.linears}


def static_stages(workload: Workload) -> tuple[GraphStage, LowerStage]:
    """Graph and lower stages of a model workload, without pruning or timing (cheap: ``lower`` and ``reduce`` probes)."""
    assert workload.model is not None
    loaded = open_model(workload.model)
    layers = resolve_layers(workload, loaded.model.linears)
    weights = checkpoint_weights(loaded)
    decisions = decide(workload, layers, weights)
    graph = graph_stage(layers, workload.tokens.total, loaded.weights.sha256)
    return graph, lower_stage(workload, layers, decisions, weights, None)


def override_layer(workload: Workload, name: str, **update: Any) -> tuple[Workload, ModelLayer]:
    """``workload`` with the entry of linear ``name`` set to its current intent changed by ``update`` (dtype, sparsity).

    The entry states the layer's whole declaration, so the layer keeps what the
    pruning block gave it apart from what ``update`` changes. Returns the new
    workload and the layer's declaration as it was (its old values).
    """
    from sparsedebug.sources.workload.load import revalidate

    assert workload.model is not None
    current = {layer.name: layer for layer in resolve_layers(workload, open_model(workload.model).model.linears)}
    if name not in current:
        raise UserError(f"layer {name!r}: not a linear of model {workload.model.name}")
    now = current[name]
    fields: dict[str, Any] = {"name": name, "op": "linear", "sparsity": now.sparsity}
    if now.dtype != workload.precision:
        fields["dtype"] = now.dtype
    fields.update(update)
    entry = Layer.model_validate(fields)
    layers = [layer for layer in workload.layers if entry_name(layer) != name] + [entry]
    return revalidate(workload.model_copy(update={"layers": layers})), now
