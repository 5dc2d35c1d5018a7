"""The ``model:`` block of a workload: a real checkpoint as the workload's graph.

A model workload names a real model instead of declaring a graph::

    model: minilm-l6            # or {name: ..., text: FILE, eval_tokens: N}
    pruning: {method: wanda, pattern: "2:4", layers: mlp, calibration_tokens: 1024}
    layers:                     # optional per-layer overrides, by the checkpoint's own names
      - {name: encoder.layer.3.output.dense, dtype: fp32, sparsity: "2:4"}

Its layers are the model's linears under the checkpoint's tensor names. Each is
pruned to ``pruning.pattern`` when ``pruning.layers`` selects it, else dense,
and runs at the workload ``precision``. An entry under ``layers`` is that
layer's whole declaration and replaces the pruning block for it: its
``sparsity`` (``dense`` when not written) and its ``dtype`` (the workload
precision when not written). Entries need no ``op`` (every entry is a linear)
and no ``shape`` (the checkpoint has it).

What can be checked without opening the checkpoint is checked here; names and
shapes are checked against the model when it is loaded
(:mod:`sparsedebug.sources.replay.checkpoint.workload`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from sparsedebug.core.budget import MAX_TEXT_TOKENS
from sparsedebug.core.errors import UserError
from sparsedebug.records.base import Record

# Workload fields of a declared graph that a model workload takes from its checkpoint instead.
GRAPH_ONLY_FIELDS = ("weights", "calibration", "input_features")


class ModelRef(Record):
    """A real model as the workload's graph, and the text its quality is measured on."""

    name: str = Field(
        min_length=1,
        description=(
            "A registered model (`sparsedebug models list`: minilm-l6, smollm2-135m; fetched on first use), a Llama "
            "`.gguf` file or a BERT folder; relative paths are relative to the workload file."
        ),
    )
    text: str | None = Field(
        None, description="UTF-8 text file to calibrate and evaluate on; default: the standard library's pydoc_data.topics."
    )
    eval_tokens: int | None = Field(
        None, ge=1, le=MAX_TEXT_TOKENS, description="Evaluation tokens of the quality figures; default: see sparsedebug.sources.replay.checkpoint.data."
    )


def model_shorthand(value: Any) -> Any:
    """``model: minilm-l6`` is short for ``model: {name: minilm-l6}``."""
    return {"name": value} if isinstance(value, str) else value


def linear_by_default(data: Any) -> Any:
    """In a model workload every ``layers`` entry is a linear: ``op`` may be left out."""
    if not isinstance(data, dict) or data.get("model") is None or not isinstance(data.get("layers"), list):
        return data
    layers = [
        {**item, "op": "linear"} if isinstance(item, dict) and "op" not in item else item for item in data["layers"]
    ]
    return {**data, "layers": layers}


def model_knobs(ref: ModelRef | None, pattern: str | None, layers: str, calibration_tokens: int | None) -> dict[str, str]:
    """The model and the model-only pruning fields as knobs (none without a model block)."""
    if ref is None:
        return {}
    return {
        "model": ref.name,
        "pruning.pattern": pattern or "-",
        "pruning.layers": layers,
        "pruning.calibration_tokens": "default" if calibration_tokens is None else str(calibration_tokens),
    }


def absolute_model(ref: ModelRef | None, base_dir: Path) -> ModelRef | None:
    """Relative model and text paths made absolute (a registered model name is left as it is; no model, none)."""
    from sparsedebug.sources.models.registry import MODELS

    if ref is None:
        return None
    update: dict[str, str] = {}
    if ref.name not in MODELS and not Path(ref.name).is_absolute():
        resolved = (base_dir / ref.name).resolve()
        if not resolved.exists() and "/" not in ref.name and not Path(ref.name).suffix:  # a bare word means a registered name
            raise UserError(
                f"model.name: {ref.name!r} is not a registered model ({', '.join(sorted(MODELS))}) and {resolved} does "
                "not exist; give a registered name, a Llama .gguf file or a BERT folder"
            )
        update["name"] = str(resolved)
    if ref.text is not None and not Path(ref.text).is_absolute():
        update["text"] = str((base_dir / ref.text).resolve())
    return ref.model_copy(update=update) if update else ref
