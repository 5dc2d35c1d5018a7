"""Workload surgery for the reduction: diff two workloads, apply a subset of the differences, keep
some layers, scale widths and halve tokens, always keeping a graph that validates."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from sparsedebug.core.errors import UserError
from sparsedebug.records.reduce import Change, FieldDiff
from sparsedebug.sources.replay.sources import graph_source
from sparsedebug.sources.workload.graph import resolved_inputs
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.schema import MODEL_INPUT, Layer, Workload


def _layer_diffs(good: Layer, bad: Layer) -> list[FieldDiff]:
    g = good.model_dump(exclude_none=True)
    b = bad.model_dump(exclude_none=True)
    return [
        FieldDiff(field=key, was=None if key not in g else str(g[key]), now=None if key not in b else str(b[key]))
        for key in dict.fromkeys([*g, *b]) if g.get(key) != b.get(key)
    ]


def _knob_value(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        return str(value.model_dump(exclude_none=True))
    return None if value is None else str(value)


def diff_workloads(good: Workload, bad: Workload) -> list[Change]:
    """Every knob and layer that differs between ``good`` and ``bad``, knobs first, layers in graph order."""
    changes: list[Change] = []
    for knob in KNOB_FIELDS:
        g, b = getattr(good, knob), getattr(bad, knob)
        if g != b:
            changes.append(Change(key=f"knob:{knob}", kind="knob", name=knob, change="changed",
                                  diffs=[FieldDiff(field=knob, was=_knob_value(g), now=_knob_value(b))]))
    good_layers = {layer.name: layer for layer in good.layers}
    bad_layers = {layer.name: layer for layer in bad.layers}
    source = graph_source(bad)
    for index, layer in enumerate(bad.layers):
        old = good_layers.get(layer.name)
        if old is None:
            changes.append(Change(key=f"layer:{layer.name}", kind="layer", name=layer.name, change="added",
                                  diffs=[FieldDiff(field="entry", now=source.entry_text(layer))]))
        elif not _same_layer(good, old, bad, layer, index):
            changes.append(Change(key=f"layer:{layer.name}", kind="layer", name=layer.name, change="changed", diffs=_layer_diffs(old, layer)))
    for layer in good.layers:
        if layer.name not in bad_layers:
            changes.append(Change(key=f"layer:{layer.name}", kind="layer", name=layer.name, change="removed",
                                  diffs=[FieldDiff(field="op", was=str(layer.op))]))
    return changes


def _same_layer(good: Workload, old: Layer, bad: Workload, new: Layer, index: int) -> bool:
    """Equal layers; inputs compared as written unless one side names them (then resolved)."""
    if old.inputs is None and new.inputs is None:
        return old == new
    return _explicit(good, old) == _explicit(bad, new, index)


def _explicit(workload: Workload, layer: Layer, index: int | None = None) -> Layer:
    """The layer with its inputs written out, so 'previous layer' and an explicit name compare equal."""
    position = index if index is not None else workload.layers.index(layer)
    return layer.model_copy(update={"inputs": resolved_inputs(workload, position)})


def apply_changes(good: Workload, bad: Workload, keys: Sequence[str]) -> Workload:
    """``good`` with the changes named by ``keys`` taken from ``bad``; ``UserError`` if the result is invalid."""
    selected = set(keys)
    update: dict[str, Any] = {}
    for knob in KNOB_FIELDS:
        if f"knob:{knob}" in selected:
            update[knob] = getattr(bad, knob)
    bad_layers = {layer.name: layer for layer in bad.layers}
    good_names = {layer.name for layer in good.layers}
    layers: list[Layer] = []
    for layer in good.layers:
        key = f"layer:{layer.name}"
        if key in selected and layer.name not in bad_layers:
            continue  # removed in bad
        layers.append(bad_layers[layer.name] if key in selected else layer)
    for index, layer in enumerate(bad.layers):
        if layer.name in good_names or f"layer:{layer.name}" not in selected:
            continue
        previous = {item.name for item in bad.layers[:index]}
        position = 0
        for i, item in enumerate(layers):
            if item.name in previous:
                position = i + 1
        layers.insert(position, bad_layers[layer.name])
    update["layers"] = layers
    update["name"] = bad.name if selected else good.name
    variant = good.model_copy(update=update)
    return revalidate(variant)


def block_of(name: str) -> str | None:
    match = re.match(r"^(.*?\.\d+)\.", name)
    return match.group(1) if match else None


def keep_layers(workload: Workload, keep: set[str]) -> Workload:
    """``workload`` with only the layers in ``keep``; a consumer of a dropped layer reads that layer's first input.

    The model input width follows the first kept layer that reads it.
    ``UserError`` when the result is not a valid graph.
    """
    explicit = [_explicit(workload, layer, i) for i, layer in enumerate(workload.layers)]
    first_input = {layer.name: (layer.inputs or [MODEL_INPUT])[0] for layer in explicit}

    def resolve(name: str) -> str:
        seen = set()
        while name != MODEL_INPUT and name not in keep:
            if name in seen:
                break
            seen.add(name)
            name = first_input.get(name, MODEL_INPUT)
        return name

    layers = []
    for layer in explicit:
        if layer.name not in keep:
            continue
        inputs = list(dict.fromkeys(resolve(name) for name in layer.inputs or [MODEL_INPUT]))
        layers.append(layer.model_copy(update={"inputs": inputs}))
    if not layers:
        raise UserError("no layers left")
    update: dict[str, Any] = {"layers": layers}
    for layer in layers:
        if layer.inputs == [MODEL_INPUT] and layer.shape is not None and layer.op != "embedding":
            update["input_features"] = layer.shape[1] if layer.op == "linear" else layer.shape[0]
            break
    return revalidate(workload.model_copy(update=update))


def scale_widths(workload: Workload, factor: int, *, floor: int = 8) -> Workload:
    """Every layer dimension and the input width divided by ``factor``.

    ``UserError`` if a width is not divisible, would drop below ``floor``, or the result is invalid.
    """
    def div(value: int) -> int:
        if value % factor or value // factor < floor:
            raise UserError(f"width {value} cannot be divided by {factor} (floor {floor})")
        return value // factor

    layers = [
        layer.model_copy(update={"shape": [div(d) for d in layer.shape]}) if layer.shape is not None and layer.op != "embedding" else layer
        for layer in workload.layers
    ]
    update: dict[str, Any] = {"layers": layers}
    if workload.input_features is not None:
        update["input_features"] = div(workload.input_features)
    return revalidate(workload.model_copy(update=update))


def half_tokens(workload: Workload) -> Workload:
    tokens = workload.tokens
    if tokens.batch > 1:
        new = tokens.model_copy(update={"batch": tokens.batch // 2})
    elif tokens.sequence >= 16:
        new = tokens.model_copy(update={"sequence": tokens.sequence // 2})
    else:
        raise UserError("tokens already minimal")
    return revalidate(workload.model_copy(update={"tokens": new}))


# Workload fields that are knobs (repeats, warmup, budget, name and description are not: they change no measurement).
KNOB_FIELDS: tuple[str, ...] = (
    "model",
    "seed",
    "tokens",
    "input_features",
    "backend",
    "conversion",
    "precision",
    "threads",
    "pruning",
    "weights",
    "calibration",
)
