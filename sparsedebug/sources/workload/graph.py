"""A workload's layer graph checked before anything runs: every layer's input widths resolved and its shape checked."""

from __future__ import annotations

from pydantic import ConfigDict

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import check_block
from sparsedebug.records.base import Record
from sparsedebug.sources.workload.model_spec import GRAPH_ONLY_FIELDS
from sparsedebug.sources.workload.schema import MODEL_INPUT, OP_FUNCTIONS, Layer, Workload


class LayerShape(Record):
    """Widths a layer reads and writes, as resolved by :func:`check_graph`."""

    model_config = ConfigDict(frozen=True)

    name: str
    inputs: tuple[str, ...]
    in_widths: tuple[int, ...]
    out_width: int


def resolved_inputs(workload: Workload, index: int) -> list[str]:
    """The names layer ``index`` reads: its ``inputs``, else the previous layer (or the model input)."""
    layer = workload.layers[index]
    if layer.inputs is not None:
        return list(layer.inputs)
    return [MODEL_INPUT if index == 0 else workload.layers[index - 1].name]


def model_input_width(workload: Workload) -> int:
    """Width of the model input (features), or the vocabulary size when it is token ids."""
    if workload.input_features is not None:
        return workload.input_features
    first = workload.layers[0]
    if first.shape is None:
        raise UserError(f"layer {first.name!r}: the first layer needs a shape (or set input_features)")
    if first.op in ("linear", "embedding"):
        dims = _need_shape(first, 2, "[out, in]" if first.op == "linear" else "[vocab, dim]")
        return dims[1] if first.op == "linear" else dims[0]
    return first.shape[0]


def _need_shape(layer: Layer, dims: int, what: str) -> list[int]:
    if layer.shape is None or len(layer.shape) != dims:
        got = "none" if layer.shape is None else str(layer.shape)
        raise UserError(f"layer {layer.name!r}: {layer.op} needs shape {what}, got {got}")
    return layer.shape


def check_graph(workload: Workload) -> list[LayerShape]:
    """Check the graph beyond the schema and resolve every layer's widths.

    Raises ``UserError`` naming the layer for: duplicate names, inputs that are
    not earlier layers, widths that disagree between consecutive layers, ``K``
    not divisible by ``M``, a pattern on an op that cannot hold one, bad ``fn``,
    heads that do not divide the width, and an embedding anywhere but first.
    A model workload's override entries are checked by :func:`check_model_workload` instead
    (:func:`sparsedebug.sources.workload.load.check_workload` picks the check).
    """
    if not workload.layers:
        raise UserError("layers: a workload without a model needs at least one layer")
    check_graph_pruning(workload)
    widths: dict[str, int] = {}
    shapes: list[LayerShape] = []
    uses_ids = workload.layers[0].op == "embedding"
    for index, layer in enumerate(workload.layers):
        where = f"layer {layer.name!r}"
        if layer.name == MODEL_INPUT:
            raise UserError(f"{where}: the name 'input' is reserved for the model input")
        if layer.name in widths:
            raise UserError(f"{where}: duplicate layer name")
        names = resolved_inputs(workload, index)
        in_widths: list[int] = []
        for name in names:
            if name == MODEL_INPUT:
                if uses_ids and layer.op != "embedding":
                    raise UserError(f"{where}: reads the model input, which is token ids; only the embedding can")
                in_widths.append(model_input_width(workload))
            elif name in widths:
                in_widths.append(widths[name])
            else:
                raise UserError(f"{where}: input {name!r} is not an earlier layer (or 'input')")
        if layer.fn is not None and layer.fn not in OP_FUNCTIONS.get(layer.op, ()):
            allowed = ", ".join(OP_FUNCTIONS.get(layer.op, ())) or "none"
            raise UserError(f"{where}: fn {layer.fn!r} is not valid for {layer.op} (allowed: {allowed})")
        if layer.op not in ("linear", "embedding") and layer.sparsity != "dense":
            raise UserError(f"{where}: {layer.op} has no weight matrix to prune; sparsity must be dense")
        if layer.op != "attention" and (layer.heads is not None or layer.kv_heads is not None):
            raise UserError(f"{where}: heads/kv_heads only apply to attention")
        out = _resolve_width(workload, index, layer, names, in_widths, where)
        widths[layer.name] = out
        shapes.append(LayerShape(name=layer.name, inputs=tuple(names), in_widths=tuple(in_widths), out_width=out))
    return shapes


def _resolve_width(
    workload: Workload, index: int, layer: Layer, names: list[str], in_widths: list[int], where: str
) -> int:
    if layer.op in ("linear", "norm", "activation", "embedding") and len(names) != 1:
        raise UserError(f"{where}: {layer.op} reads exactly one input, got {len(names)}")
    if layer.op == "linear":
        out, k = _need_shape(layer, 2, "[out, in]")
        if in_widths[0] != k:
            raise UserError(f"{where}: shape [out, in] = {layer.shape} expects {k} input features but {names[0]!r} gives {in_widths[0]}")
        pattern = layer.pattern
        if pattern is not None and k % pattern.m != 0:
            raise UserError(f"{where}: K={k} is not divisible by M={pattern.m} of pattern {layer.sparsity}")
        if pattern is not None:
            check_block(out, pattern, f"{where}: sparsity")
        return out
    if layer.op == "embedding":
        vocab, dim = _need_shape(layer, 2, "[vocab, dim]")
        if index != 0 or names != [MODEL_INPUT]:
            raise UserError(f"{where}: an embedding must be the first layer and read the model input")
        if layer.sparsity != "dense":
            pattern = layer.pattern
            assert pattern is not None
            if dim % pattern.m != 0:
                raise UserError(f"{where}: K={dim} is not divisible by M={pattern.m} of pattern {layer.sparsity}")
            check_block(vocab, pattern, f"{where}: sparsity")
        if in_widths[0] != vocab:
            raise UserError(f"{where}: vocab {vocab} differs from input_features {in_widths[0]}")
        return dim
    if layer.op == "norm":
        (dim,) = _need_shape(layer, 1, "[dim]")
        if in_widths[0] != dim:
            raise UserError(f"{where}: shape [{dim}] but {names[0]!r} gives {in_widths[0]} features")
        return dim
    if layer.op == "attention":
        (dim,) = _need_shape(layer, 1, "[dim]")
        if len(names) != 3:
            raise UserError(f"{where}: attention reads three inputs (q, k, v), got {len(names)}")
        heads = layer.heads
        if heads is None:
            raise UserError(f"{where}: attention needs heads")
        kv_heads = layer.kv_heads or heads
        if dim % heads != 0:
            raise UserError(f"{where}: dim {dim} is not divisible by heads {heads}")
        if heads % kv_heads != 0:
            raise UserError(f"{where}: heads {heads} is not a multiple of kv_heads {kv_heads}")
        kv = dim // heads * kv_heads
        for name, width, want in zip(names, in_widths, (dim, kv, kv), strict=True):
            if width != want:
                raise UserError(f"{where}: input {name!r} gives {width} features, expected {want}")
        if workload.tokens.sequence < 1:
            raise UserError(f"{where}: attention needs a sequence")
        return dim
    # activation / elementwise
    if layer.op == "elementwise" and len(names) < 2:
        raise UserError(f"{where}: elementwise {layer.function} reads two or more inputs, got {len(names)}")
    if len(set(in_widths)) != 1:
        detail = ", ".join(f"{n}={w}" for n, w in zip(names, in_widths, strict=True))
        raise UserError(f"{where}: inputs have different widths ({detail})")
    if layer.shape is not None:
        (dim,) = _need_shape(layer, 1, "[dim]")
        if dim != in_widths[0]:
            raise UserError(f"{where}: shape [{dim}] but its inputs give {in_widths[0]} features")
    return in_widths[0]


def check_model_workload(workload: Workload) -> None:
    """What a model workload must satisfy before its checkpoint is opened; ``UserError`` naming the field or layer."""
    name = getattr(workload.model, "name", "-")
    for field in GRAPH_ONLY_FIELDS:
        if getattr(workload, field) is not None:
            raise UserError(f"{field}: a model workload takes it from its checkpoint ({name}); remove it")
    seen: set[str] = set()
    for layer in workload.layers:
        where = f"layer {layer.name!r}"
        if layer.op != "linear":
            raise UserError(f"{where}: a model workload overrides linear layers only, not {layer.op}")
        if layer.shape is not None or layer.inputs is not None:
            raise UserError(f"{where}: shape and inputs come from the checkpoint; remove them")
        if layer.name in seen:
            raise UserError(f"{where}: duplicate layer entry")
        seen.add(layer.name)


def check_graph_pruning(workload: Workload) -> None:
    """A declared graph prunes per layer: the model-only fields of the pruning block are refused."""
    pruning = workload.pruning
    if pruning.method == "sparsegpt":
        raise UserError("pruning.method: sparsegpt needs a model workload (model: ...); declared graphs take magnitude or wanda")
    for field, default in (("pattern", None), ("layers", "all"), ("calibration_tokens", None)):
        if getattr(pruning, field) != default:
            raise UserError(f"pruning.{field}: applies to model workloads only; a declared graph sets sparsity per layer")
