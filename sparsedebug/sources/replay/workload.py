"""The workload format: a seeded model graph, its intended sparsity, and the knobs that matter.

A workload is a YAML file validated by :class:`Workload` (unknown fields are
refused; ``sparsedebug schema workload`` prints its JSON Schema). The model graph
is an ordered list of layers; each layer reads the outputs of earlier layers
(``inputs``, by name; the previous layer by default, ``input`` for the model
input). Activations are ``(features, tokens)`` matrices, so a linear layer of
``shape: [out, in]`` maps ``in`` features to ``out``.

Per op kind, ``shape`` means:

* ``linear``: ``[out, in]`` (the weight, as in PyTorch); ``sparsity`` is
  ``dense``, ``N:M`` (per row, e.g. ``2:4``) or ``V:N:M`` (blocks of ``V`` rows
  share one choice, e.g. ``32:2:4``).
* ``embedding``: ``[vocab, dim]``; must be the first layer, the model input is
  then token ids.
* ``norm``: ``[dim]`` (``fn``: ``rmsnorm`` or ``layernorm``).
* ``attention``: ``[dim]`` with ``heads`` (and ``kv_heads`` for grouped-query
  attention); ``inputs`` are the q, k and v layers; causal by default.
* ``activation`` (``fn``: ``silu``, ``gelu``, ``relu``) and ``elementwise``
  (``fn``: ``add`` or ``mul`` over two or more inputs): ``shape`` is optional
  (``[dim]``, checked when given).

:func:`check_graph` checks what a schema cannot: unique names, inputs that exist,
widths that agree between consecutive layers, ``K`` divisible by ``M``. Every
message names the layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from sparsedebug.core.budget import MAX_REPEATS
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import atomic_write_text, load_data, validate
from sparsedebug.kernels.masks import Pattern, parse_pattern
from sparsedebug.records.base import Record

OpName = Literal["linear", "attention", "norm", "activation", "embedding", "elementwise"]
Dtype = Literal["fp32", "fp16", "bf16"]
MODEL_INPUT = "input"
"""Name by which a layer reads the model input."""

_DTYPE_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "torch.float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "torch.float16": "fp16",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
}
_FNS: dict[str, tuple[str, ...]] = {
    "norm": ("rmsnorm", "layernorm"),
    "activation": ("silu", "gelu", "relu"),
    "elementwise": ("add", "mul"),
}
_DEFAULT_FN = {"norm": "rmsnorm", "activation": "silu", "elementwise": "add"}

# Upper bounds of the schema (documented in the README); what fits in memory and time is
# checked from the shapes before a replay allocates anything (sparsedebug.sources.replay.cost).
MAX_WARMUP = 1_000
MAX_BATCH = 65_536
MAX_SEQUENCE = 1_048_576
MAX_DIM = 1_048_576
MAX_LAYERS = 10_000
MAX_THREADS = 4_096


def _dtype_alias(value: Any) -> Any:
    if isinstance(value, str):
        return _DTYPE_ALIASES.get(value.strip().lower(), value.strip().lower())
    return value


DtypeField = Annotated[Dtype, BeforeValidator(_dtype_alias)]


class Tokens(Record):
    """Token count of one forward: batch x sequence."""

    batch: int = Field(1, ge=1, le=MAX_BATCH, description="Sequences per forward.")
    sequence: int = Field(ge=1, le=MAX_SEQUENCE, description="Tokens per sequence.")

    @property
    def total(self) -> int:
        """batch * sequence: the token dimension of every activation."""
        return self.batch * self.sequence


def _weights_shorthand(value: Any) -> Any:
    """``weights: file.npz`` is short for ``weights: {path: file.npz}``."""
    return {"path": value} if isinstance(value, str) else value


class WeightsSpec(Record):
    """Weights from a ``.npz`` or ``.safetensors`` file, mapped to layer names."""

    path: str = Field(description="File path; relative paths are relative to the workload file.")
    tensors: dict[str, str] = Field(
        default_factory=dict,
        description="layer name -> tensor name in the file; by default the layer name, then '<layer>.weight'.",
    )
    strict: bool = Field(
        True, description="Every linear and embedding layer must be in the file; otherwise absent layers are seeded."
    )


class CalibrationSpec(Record):
    """Calibration inputs (and optional labels) from a ``.npz`` file."""

    path: str = Field(description=".npz file; relative paths are relative to the workload file.")
    inputs: str = Field(
        "inputs", description="Array of model inputs: (tokens, features) floats, or (tokens,) ids with an embedding."
    )
    labels: str | None = Field(
        None, description="Array of (tokens,) integer labels: task accuracy is argmax of the last layer's output."
    )


class PruningSpec(Record):
    """How the weights were pruned to the intended pattern (method applied; schedule recorded)."""

    method: Literal["magnitude", "wanda", "none"] = Field(
        "magnitude",
        description=(
            "magnitude: keep the largest |w|; wanda: keep the largest |w| * input-feature norm on the calibration "
            "(or seeded) inputs; none: the weights are already pruned, only checked for compliance."
        ),
    )
    schedule: str = Field("one-shot", description="How pruning was scheduled (recorded for the report).")
    calibration: str | None = Field(None, description="What data pruning was calibrated on (recorded for the report).")


class Layer(Record):
    """One layer of the model graph."""

    name: str = Field(min_length=1)
    op: OpName
    shape: list[int] | None = Field(None, description="linear: [out, in]; embedding: [vocab, dim]; others: [dim].")
    inputs: list[str] | None = Field(None, description="Layers read, by name ('input' = model input); default: previous.")
    dtype: DtypeField | None = Field(None, description="Override of the workload precision for this layer.")
    sparsity: str = Field("dense", description="'dense', 'N:M' (per row) or 'V:N:M' (blocked); linear layers.")
    fn: str | None = Field(None, description="norm: rmsnorm|layernorm; activation: silu|gelu|relu; elementwise: add|mul.")
    heads: int | None = Field(None, ge=1, le=MAX_DIM, description="attention: number of query heads.")
    kv_heads: int | None = Field(None, ge=1, le=MAX_DIM, description="attention: key/value heads (grouped-query); default heads.")
    causal: bool = Field(True, description="attention: causal mask.")

    @field_validator("shape")
    @classmethod
    def _positive(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(dim < 1 for dim in value):
            raise ValueError(f"dimensions must be positive, got {value}")
        if value is not None and any(dim > MAX_DIM for dim in value):
            raise ValueError(f"dimensions must be at most {MAX_DIM}, got {value}")
        return value

    @field_validator("sparsity")
    @classmethod
    def _pattern(cls, value: str) -> str:
        text = value.strip()
        if text == "dense":
            return text
        try:
            return str(parse_pattern(text))
        except UserError as exc:
            raise ValueError(str(exc)) from None

    @property
    def pattern(self) -> Pattern | None:
        """The intended pattern, or None when dense."""
        return None if self.sparsity == "dense" else parse_pattern(self.sparsity)

    @property
    def function(self) -> str | None:
        """``fn`` or the op kind's default."""
        return self.fn if self.fn is not None else _DEFAULT_FN.get(self.op)


class Workload(Record):
    """A replayable workload: seed, model graph, intended sparsity, token count and knobs."""

    schema_version: int = 1
    kind: Literal["workload"] = "workload"
    name: str = Field(min_length=1)
    description: str | None = None
    seed: int = Field(0, ge=0)
    tokens: Tokens
    input_features: int | None = Field(None, ge=1, le=MAX_DIM, description="Width of the model input; default from the first layer.")
    layers: list[Layer] = Field(min_length=1, max_length=MAX_LAYERS)
    repeats: int = Field(20, ge=3, le=MAX_REPEATS, description="Timed repetitions of every measurement.")
    warmup: int = Field(2, ge=0, le=MAX_WARMUP, description="Untimed repetitions before timing.")
    backend: str = Field("cpu-numpy", description="Backend support profile used for lowering (see `sparsedebug lower`).")
    budget_ms: float | None = Field(None, gt=0, description="Latency budget (SLA) for p99 of one forward.")
    weights: Annotated[WeightsSpec | None, BeforeValidator(_weights_shorthand)] = Field(
        None, description="Weights file: a path, or {path, tensors, strict}."
    )
    calibration: CalibrationSpec | None = None
    conversion: Literal["once", "per_call"] = Field(
        "once", description="Compress sparse weights once at load, or on every call (inside the timed call)."
    )
    precision: DtypeField = Field("fp32", description="Input precision of every layer unless the layer overrides dtype.")
    threads: int | None = Field(None, ge=1, le=MAX_THREADS, description="BLAS threads during the replay; default: leave as is.")
    pruning: PruningSpec = Field(default_factory=PruningSpec)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from sparsedebug.sources.replay.lowering import PROFILES

        if value not in PROFILES:
            raise ValueError(f"unknown backend profile {value!r}; known: {', '.join(sorted(PROFILES))}")
        return value

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; ``KeyError`` if none."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def dtype_of(self, layer: Layer) -> Dtype:
        """Effective dtype of ``layer``: its own, else the workload precision."""
        return layer.dtype if layer.dtype is not None else self.precision

    def knobs(self) -> dict[str, str]:
        """The knobs an engineer turns, as strings, for the run record."""
        return {
            "backend": self.backend,
            "conversion": self.conversion,
            "precision": self.precision,
            "threads": "default" if self.threads is None else str(self.threads),
            "pruning.method": self.pruning.method,
            "pruning.schedule": self.pruning.schedule,
            "pruning.calibration": self.pruning.calibration or "-",
            "tokens": f"{self.tokens.batch}x{self.tokens.sequence}",
        }


# --------------------------------------------------------------------------- graph checks


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
    """
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
        if layer.fn is not None and layer.fn not in _FNS.get(layer.op, ()):
            allowed = ", ".join(_FNS.get(layer.op, ())) or "none"
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


# --------------------------------------------------------------------------- load / save


def _layer_names(data: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    if isinstance(data, dict) and isinstance(data.get("layers"), list):
        for i, item in enumerate(data["layers"]):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                names[i] = item["name"]
    return names


def parse_workload(data: Any, source: str) -> Workload:
    """Validate parsed data as a workload and check its graph; errors name the layer."""
    try:
        workload = validate(Workload, data, source)
    except UserError as exc:
        names = _layer_names(data)
        lines = []
        for line in str(exc).splitlines():
            for index, name in names.items():
                prefix = f"{source}: layers.{index}."
                if line.startswith(prefix):
                    line = f"{source}: layers.{index} ({name}): {line[len(prefix):]}"
                    break
            lines.append(line)
        raise UserError("\n".join(lines)) from None
    try:
        check_graph(workload)
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None
    return workload


def load_workload(path: Path) -> Workload:
    """Load, validate and graph-check a workload YAML (or JSON) file."""
    return parse_workload(load_data(path), str(path))


class _FlowDumper(yaml.SafeDumper):
    """Safe YAML dumper that writes short lists of scalars on one line (``shape: [512, 1376]``)."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(item, int | float | str) for item in data) and len(data) <= 8
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_FlowDumper.add_representer(list, _represent_list)


def dump_workload(workload: Workload) -> str:
    """The workload as YAML text: top-level fields explicit, layers without their default fields."""
    data = workload.model_dump(mode="json", exclude_none=True)
    data["layers"] = [layer.model_dump(mode="json", exclude_defaults=True) for layer in workload.layers]
    return yaml.dump(data, Dumper=_FlowDumper, sort_keys=False, allow_unicode=True, width=120)


def save_workload(workload: Workload, path: Path) -> None:
    """Write ``workload`` to ``path`` as YAML, atomically."""
    atomic_write_text(path, dump_workload(workload))


def revalidate(workload: Workload) -> Workload:
    """Re-run validation on a workload built with ``model_copy(update=...)`` (which skips it)."""
    try:
        fresh = Workload.model_validate(workload.model_dump())
    except ValidationError as exc:
        from sparsedebug.core.io import format_validation_error

        raise UserError(format_validation_error(f"workload {workload.name!r}", exc)) from None
    check_graph(fresh)
    return fresh


# --------------------------------------------------------------------------- builders


def absolute_paths(workload: Workload, base_dir: Path | None) -> Workload:
    """Weights and calibration paths made absolute so the reproducer stands alone anywhere."""
    if base_dir is None:
        return workload
    update: dict[str, Any] = {}
    for field in ("weights", "calibration"):
        spec = getattr(workload, field)
        if spec is not None and not Path(spec.path).is_absolute():
            update[field] = spec.model_copy(update={"path": str((base_dir / spec.path).resolve())})
    return workload.model_copy(update=update) if update else workload
