"""Weights and inputs of a workload: seeded or loaded, then pruned to the intended pattern.

Seeded weights are drawn per layer from ``SeedSequence([seed, crc32(layer name)])``,
so changing one layer (as delta debugging does) leaves every other layer's
weights unchanged. Loaded weights come from a ``.npz`` or ``.safetensors`` file;
each tensor must match the declared shape and be finite, or the load fails
naming the layer. Everything is held as float64; the replay rounds to the
workload precision where it computes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest
from sparsedebug.kernels.masks import check_compliance
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.sources.workload.graph import check_graph, model_input_width
from sparsedebug.sources.workload.schema import Layer, Workload

Array = npt.NDArray[np.float64]


def layer_rng(seed: int, name: str) -> np.random.Generator:
    """The random generator of one named item (layer or input) under ``seed``."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode("utf-8"))]))


def has_weight(layer: Layer) -> bool:
    """Whether the layer owns a parameter tensor (linear, embedding, norm gain)."""
    return layer.op in ("linear", "embedding", "norm")


def declared_shape(layer: Layer) -> tuple[int, ...]:
    """Shape of the layer's parameter tensor as declared."""
    assert layer.shape is not None
    return tuple(layer.shape)


def seeded_weight(seed: int, layer: Layer) -> Array:
    """A seeded weight: linear N(0, 1/in), embedding N(0, 1), norm gain 1 + N(0, 0.05^2)."""
    rng = layer_rng(seed, layer.name)
    shape = declared_shape(layer)
    if layer.op == "linear":
        scaled: Array = rng.standard_normal(shape) / np.sqrt(shape[1])
        return scaled
    if layer.op == "embedding":
        return rng.standard_normal(shape)
    return 1.0 + 0.05 * rng.standard_normal(shape)


@dataclass
class Weights:
    """Parameter tensors by layer name, where they came from, and which were loaded."""

    tensors: dict[str, Array]
    source: FileDigest | None = None
    loaded: list[str] = field(default_factory=list)


def _resolve(path_text: str, base_dir: Path | None) -> Path:
    path = Path(path_text)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path


def read_tensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """All tensors of a ``.npz`` or ``.safetensors`` file as numpy arrays (bf16 widened to fp32)."""
    from sparsedebug.sources.checkpoint import read_checkpoint

    if path.suffix.lower() not in (".npz", ".safetensors"):
        raise UserError(f"{path}: weights must be a .npz or .safetensors file")
    return {tensor.name: tensor.values for tensor in read_checkpoint(path)}


def _tensor_name(layer: Layer, workload: Workload, available: dict[str, Any]) -> str | None:
    spec = workload.weights
    assert spec is not None
    if layer.name in spec.tensors:
        return spec.tensors[layer.name]
    for candidate in (layer.name, f"{layer.name}.weight"):
        if candidate in available:
            return candidate
    return None


def build_weights(workload: Workload, base_dir: Path | None = None) -> Weights:
    """Seeded weights, replaced by the workload's weights file where it has them.

    Raises ``UserError`` naming the layer for a tensor of the wrong shape or
    dtype, NaN/inf values, a mapped tensor missing from the file, or (strict
    mode) a linear/embedding layer the file does not have.
    """
    check_graph(workload)
    tensors = {layer.name: seeded_weight(workload.seed, layer) for layer in workload.layers if has_weight(layer)}
    spec = workload.weights
    if spec is None:
        return Weights(tensors)
    path = _resolve(spec.path, base_dir)
    available = read_tensors(path)
    known = {layer.name for layer in workload.layers}
    for name in spec.tensors:
        if name not in known:
            raise UserError(f"{path}: weights.tensors maps {name!r}, which is not a layer of the workload")
    loaded: list[str] = []
    for layer in workload.layers:
        if not has_weight(layer):
            continue
        tensor = _tensor_name(layer, workload, available)
        if tensor is None or tensor not in available:
            if layer.name in spec.tensors:
                raise UserError(f"{path}: layer {layer.name!r}: tensor {spec.tensors[layer.name]!r} is not in the file")
            if spec.strict and layer.op in ("linear", "embedding"):
                raise UserError(
                    f"{path}: layer {layer.name!r}: no tensor {layer.name!r} or {layer.name + '.weight'!r} "
                    "(map it in weights.tensors, or set weights.strict: false to seed it)"
                )
            continue
        arr = available[tensor]
        where = f"{path}: layer {layer.name!r} (tensor {tensor!r})"
        if not np.issubdtype(arr.dtype, np.floating):
            raise UserError(f"{where}: dtype {arr.dtype} is not floating point")
        if tuple(arr.shape) != declared_shape(layer):
            raise UserError(f"{where}: shape {list(arr.shape)} does not match the declared {list(declared_shape(layer))}")
        values = arr.astype(np.float64)
        if not np.isfinite(values).all():
            bad = int(np.count_nonzero(~np.isfinite(values)))
            raise UserError(f"{where}: {bad} NaN or inf value(s)")
        tensors[layer.name] = values
        loaded.append(layer.name)
    return Weights(tensors, source=file_digest(path), loaded=loaded)


# --------------------------------------------------------------------------- inputs


@dataclass
class Inputs:
    """Model input (``(features, tokens)`` floats, or ``(tokens,)`` ids), optional labels, provenance."""

    x: npt.NDArray[Any]
    labels: npt.NDArray[np.int64] | None = None
    source: FileDigest | None = None


def build_inputs(workload: Workload, base_dir: Path | None = None, *, out_width: int | None = None) -> Inputs:
    """Seeded model inputs, or the workload's calibration inputs (and labels) when given.

    ``out_width`` (the last layer's width) bounds the labels.
    """
    tokens = workload.tokens.total
    ids = workload.layers[0].op == "embedding"
    width = model_input_width(workload)
    spec = workload.calibration
    if spec is None:
        rng = layer_rng(workload.seed, "input")
        if ids:
            return Inputs(rng.integers(0, width, size=tokens, dtype=np.int64))
        return Inputs(rng.standard_normal((width, tokens)))
    path = _resolve(spec.path, base_dir)
    arrays = read_tensors(path) if path.suffix.lower() == ".npz" else {}
    if path.suffix.lower() != ".npz":
        raise UserError(f"{path}: calibration data must be a .npz file")
    if spec.inputs not in arrays:
        raise UserError(f"{path}: calibration.inputs: no array {spec.inputs!r} (has {', '.join(sorted(arrays)) or 'none'})")
    raw = arrays[spec.inputs]
    where = f"{path}: array {spec.inputs!r}"
    if ids:
        if raw.shape != (tokens,) or not np.issubdtype(raw.dtype, np.integer):
            raise UserError(f"{where}: expected ({tokens},) integer token ids, got {raw.dtype} {list(raw.shape)}")
        if raw.min() < 0 or raw.max() >= width:
            raise UserError(f"{where}: token ids must lie in [0, {width})")
        x: npt.NDArray[Any] = raw.astype(np.int64)
    else:
        if raw.shape != (tokens, width) or not np.issubdtype(raw.dtype, np.floating):
            raise UserError(f"{where}: expected ({tokens}, {width}) floats (tokens x features), got {raw.dtype} {list(raw.shape)}")
        x = np.ascontiguousarray(raw.astype(np.float64).T)
        if not np.isfinite(x).all():
            raise UserError(f"{where}: NaN or inf value(s)")
    labels = None
    if spec.labels is not None:
        if spec.labels not in arrays:
            raise UserError(f"{path}: calibration.labels: no array {spec.labels!r}")
        lab = arrays[spec.labels]
        if lab.shape != (tokens,) or not np.issubdtype(lab.dtype, np.integer):
            raise UserError(f"{path}: array {spec.labels!r}: expected ({tokens},) integer labels, got {lab.dtype} {list(lab.shape)}")
        if out_width is not None and (lab.min() < 0 or lab.max() >= out_width):
            raise UserError(f"{path}: array {spec.labels!r}: labels must lie in [0, {out_width}) (the last layer's width)")
        labels = lab.astype(np.int64)
    return Inputs(x, labels, file_digest(path))


# --------------------------------------------------------------------------- pruning


def pruning_mask(layer: Layer, weight: Array, scores: Array | None = None) -> npt.NDArray[np.bool_] | None:
    """The keep-mask of the layer's intended pattern (None when dense)."""
    from sparsedebug.kernels.pruning import pattern_mask

    pattern = layer.pattern
    return None if pattern is None else pattern_mask(weight, pattern, scores)


def prune(
    workload: Workload, tensors: dict[str, Array], input_norms: dict[str, Array] | None = None
) -> dict[str, Array]:
    """Weights pruned to each layer's intended pattern by the workload's pruning method.

    ``magnitude`` keeps the largest ``|w|`` per group; ``wanda`` the largest
    ``|w| * ||x_j||`` with ``input_norms[layer]`` the per-input-feature norms
    of the layer's input on the calibration (or seeded) inputs; ``none``
    returns the weights as given (lowering then checks compliance).
    """
    from sparsedebug.kernels.pruning import wanda_scores

    method = workload.pruning.method
    out = dict(tensors)
    if method == "none":
        return out
    for layer in workload.layers:
        if layer.pattern is None or layer.op != "linear":
            continue
        weight = tensors[layer.name]
        scores = None
        if method == "wanda":
            if input_norms is None or layer.name not in input_norms:
                raise UserError(f"layer {layer.name!r}: wanda pruning needs the layer's input norms")
            scores = wanda_scores(weight, input_norms[layer.name])
        mask = pruning_mask(layer, weight, scores)
        assert mask is not None
        out[layer.name] = np.where(mask, weight, 0.0)
    return out


def is_compliant(layer: Layer, weight: Array) -> bool | None:
    """Whether ``weight`` complies with the layer's pattern (None when dense)."""
    pattern = layer.pattern
    if pattern is None or layer.op != "linear":
        return None
    return check_compliance(weight, pattern.n, pattern.m, pattern.block).compliant
