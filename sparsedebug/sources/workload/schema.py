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

:func:`sparsedebug.sources.workload.graph.check_graph` checks what a schema cannot: unique names, inputs that exist,
widths that agree between consecutive layers, ``K`` divisible by ``M``. Every
message names the layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BeforeValidator, Field, field_validator, model_validator

from sparsedebug.core.budget import MAX_REPEATS, MAX_TEXT_TOKENS
from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import atomic_write_text
from sparsedebug.kernels.masks import Pattern, parse_pattern
from sparsedebug.records.base import Record
from sparsedebug.sources.workload.model_spec import ModelRef, absolute_model, linear_by_default, model_knobs, model_shorthand

OpName = Literal["linear", "attention", "norm", "activation", "embedding", "elementwise"]
Dtype = Literal["fp32", "fp16", "bf16"]
# Name by which a layer reads the model input.
MODEL_INPUT = "input"

# The functions a norm, activation or elementwise layer may name (``fn``).
OP_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "norm": ("rmsnorm", "layernorm"),
    "activation": ("silu", "gelu", "relu"),
    "elementwise": ("add", "mul"),
}
_DEFAULT_FN = {"norm": "rmsnorm", "activation": "silu", "elementwise": "add"}

# Upper bounds of the schema (documented in docs/reference/exit-codes.md); what fits in memory and time is
# checked from the shapes before a replay allocates anything (sparsedebug.sources.replay.cost).
MAX_WARMUP = 1_000
MAX_BATCH = 65_536
MAX_SEQUENCE = 1_048_576
MAX_DIM = 1_048_576
MAX_LAYERS = 10_000
MAX_THREADS = 4_096


def _dtype_alias(value: Any) -> Any:
    if isinstance(value, str):
        return canonical_dtype(value) or value.strip().lower()
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


def _canonical_sparsity(value: str) -> str:
    """``dense`` or the canonical text of an N:M / V:N:M pattern; ``ValueError`` for pydantic otherwise."""
    text = value.strip()
    if text == "dense":
        return text
    try:
        return str(parse_pattern(text))
    except UserError as exc:
        raise ValueError(str(exc)) from None


class PruningSpec(Record):
    """How the weights were pruned to the intended pattern (method applied; schedule recorded)."""

    method: Literal["magnitude", "wanda", "sparsegpt", "none"] = Field(
        "magnitude",
        description=(
            "magnitude: keep the largest |w|; wanda: keep the largest |w| * input-feature norm on the calibration "
            "(or seeded) inputs; sparsegpt (model workloads): one-shot reconstruction with the calibration Hessian; "
            "none: the weights are already pruned, only checked for compliance."
        ),
    )
    schedule: str = Field("one-shot", description="How pruning was scheduled (recorded for the report).")
    calibration: str | None = Field(None, description="What data pruning was calibrated on (recorded for the report).")
    pattern: str | None = Field(None, description="Model workloads: the pattern the selected linears are pruned to.")
    layers: str = Field("all", description="Model workloads: the linears pruned: all, mlp, attention or name globs.")
    calibration_tokens: int | None = Field(
        None, ge=1, le=MAX_TEXT_TOKENS, description="Model workloads: calibration tokens for wanda and sparsegpt (default per architecture)."
    )

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        return None if value is None else _canonical_sparsity(value)


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
        return _canonical_sparsity(value)

    @property
    def pattern(self) -> Pattern | None:
        """The intended pattern, or None when dense."""
        return None if self.sparsity == "dense" else parse_pattern(self.sparsity)

    @property
    def function(self) -> str | None:
        """``fn`` or the op kind's default."""
        return self.fn if self.fn is not None else _DEFAULT_FN.get(self.op)


class WorkloadOrigin(Record):
    """Where a generated workload comes from: the layer of an imported trace pair it reproduces."""

    trace: str = Field(description="The candidate trace the layer was cut from.")
    layer: str
    first_stage: str = Field(description="The first divergent stage the bisect of the trace pair found.")
    mechanism: str | None = Field(None, description="The winning mechanism of the trace pair's classification.")
    replay_shows: bool = Field(description="Whether the built-in replay can show that stage and mechanism.")
    note: str = Field(description="What the built-in replay of this workload can and cannot show, and why.")
    dense_twin: str | None = Field(None, description="The workload of the same op dense (its baseline).")


class Workload(Record):
    """A replayable workload: seed, model graph, intended sparsity, token count and knobs."""

    schema_version: int = 1
    kind: Literal["workload"] = "workload"
    name: str = Field(min_length=1)
    description: str | None = None
    seed: int = Field(0, ge=0)
    tokens: Tokens
    input_features: int | None = Field(None, ge=1, le=MAX_DIM, description="Width of the model input; default from the first layer.")
    model: Annotated[ModelRef | None, BeforeValidator(model_shorthand)] = Field(
        None, description="A real model as the graph (see sparsedebug.sources.workload.model_spec); then layers are overrides."
    )
    layers: list[Layer] = Field(
        default_factory=list, max_length=MAX_LAYERS,
        description="The model graph; with model: per-linear overrides by the checkpoint's names.",
    )
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
    launch: Literal["eager", "cuda_graph"] = Field(
        "eager",
        description=(
            "How the target GPU launches work, for latency projected onto it (GPU backend profiles): one host call "
            "per op (eager) or one CUDA graph replay per forward (no per-call host cost)."
        ),
    )
    pruning: PruningSpec = Field(default_factory=PruningSpec)
    origin: WorkloadOrigin | None = Field(None, description="Set on a reproducer cut from a trace pair: the layer and what the trace showed.")

    _linear_by_default = model_validator(mode="before")(linear_by_default)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from sparsedebug.sources.workload.lowering import PROFILES

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
            "launch": self.launch,
            "pruning.method": self.pruning.method,
            "pruning.schedule": self.pruning.schedule,
            "pruning.calibration": self.pruning.calibration or "-",
            "tokens": f"{self.tokens.batch}x{self.tokens.sequence}",
        } | model_knobs(self.model, self.pruning.pattern, self.pruning.layers, self.pruning.calibration_tokens)


# --------------------------------------------------------------------------- graph checks


# --------------------------------------------------------------------------- load / save


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


# --------------------------------------------------------------------------- builders


def absolute_paths(workload: Workload, base_dir: Path | None) -> Workload:
    """Weights, calibration, model and text paths made absolute so the reproducer stands alone anywhere."""
    if base_dir is None:
        return workload
    update: dict[str, Any] = {}
    try:
        model = absolute_model(workload.model, base_dir)
    except UserError as exc:
        raise UserError(f"workload {workload.name!r}: {exc}") from None
    if model != workload.model:
        update["model"] = model
    for field in ("weights", "calibration"):
        spec = getattr(workload, field)
        if spec is not None and not Path(spec.path).is_absolute():
            update[field] = spec.model_copy(update={"path": str((base_dir / spec.path).resolve())})
    return workload.model_copy(update=update) if update else workload
