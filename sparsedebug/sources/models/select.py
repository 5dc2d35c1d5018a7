"""Layer selections: ``all``, ``mlp``, ``attention``, or comma-separated name globs."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern, check_block
from sparsedebug.sources.models.base import Linear

KEYWORDS = ("all", "mlp", "attention")


def select_layers(selection: str, linears: Iterable[Linear]) -> list[Linear]:
    """The linear layers a selection names, in model order.

    ``all`` is every linear layer, ``mlp`` and ``attention`` those of that role;
    anything else is comma-separated ``fnmatch`` globs over the checkpoint's
    layer names (``blk.*.ffn_down``, ``encoder.layer.[0-2].*``), any of which
    may also be a keyword. A selection that matches nothing is a ``UserError``
    naming an example layer.
    """
    layers = list(linears)
    parts = [part.strip() for part in selection.split(",")]
    if not selection.strip() or any(not part for part in parts):
        raise UserError(f"layers {selection!r}: empty selection; use all, mlp, attention or name globs")
    chosen: list[Linear] = []
    for layer in layers:
        if any(_matches(part, layer) for part in parts):
            chosen.append(layer)
    for part in parts:
        if not any(_matches(part, layer) for layer in layers):
            example = layers[0].name if layers else "(none)"
            raise UserError(f"layers {selection!r}: {part!r} matches no linear layer (names look like {example!r})")
    return chosen


def _matches(part: str, layer: Linear) -> bool:
    if part == "all":
        return True
    if part in ("mlp", "attention"):
        return layer.role == part
    return fnmatchcase(layer.name, part) or fnmatchcase(f"{layer.name}.weight", part)


def check_pattern_fits(layers: Iterable[Linear], pattern: Pattern) -> None:
    """Every selected layer's input width must be divisible by the pattern's M, and a ``V:N:M`` block may not be
    taller than every selected layer (each would be one block: V would say nothing)."""
    chosen = list(layers)
    for layer in chosen:
        if layer.in_features % pattern.m:
            raise UserError(f"layer {layer.name}: {layer.in_features} inputs are not divisible by M={pattern.m} of {pattern}")
    if chosen and pattern.block is not None:
        tallest = max(chosen, key=lambda layer: layer.out_features)
        check_block(tallest.out_features, pattern, f"pattern {pattern} (the tallest selected layer, {tallest.name})")
