"""Workload builders for tests, benchmarks and examples: Llama-style blocks and stacks, MLP chains."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparsedebug.core.errors import UserError
from sparsedebug.sources.workload.schema import MODEL_INPUT, Layer, Workload


def llama_block(
    prefix: str,
    hidden: int,
    ffn: int,
    heads: int,
    *,
    kv_heads: int | None = None,
    sparsity: str = "dense",
    input_name: str | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> list[Layer]:
    """One Llama-style decoder block (RMSNorm, q/k/v/o, causal attention, SwiGLU MLP, residuals).

    Layer names follow Hugging Face module paths (``{prefix}.self_attn.q_proj``,
    ``{prefix}.mlp.down_proj``...). ``sparsity`` applies to the seven projections;
    ``overrides`` maps a short name (``mlp.down_proj``) to extra layer fields.
    """
    kv = hidden // heads * (kv_heads or heads)
    src = input_name or MODEL_INPUT
    p = prefix
    spec: list[dict[str, Any]] = [
        {"name": f"{p}.input_layernorm", "op": "norm", "shape": [hidden], "inputs": [src]},
        {"name": f"{p}.self_attn.q_proj", "op": "linear", "shape": [hidden, hidden], "inputs": [f"{p}.input_layernorm"], "sparsity": sparsity},
        {"name": f"{p}.self_attn.k_proj", "op": "linear", "shape": [kv, hidden], "inputs": [f"{p}.input_layernorm"], "sparsity": sparsity},
        {"name": f"{p}.self_attn.v_proj", "op": "linear", "shape": [kv, hidden], "inputs": [f"{p}.input_layernorm"], "sparsity": sparsity},
        {
            "name": f"{p}.self_attn.sdpa",
            "op": "attention",
            "shape": [hidden],
            "heads": heads,
            **({"kv_heads": kv_heads} if kv_heads else {}),
            "inputs": [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"],
        },
        {"name": f"{p}.self_attn.o_proj", "op": "linear", "shape": [hidden, hidden], "sparsity": sparsity},
        {"name": f"{p}.attn_residual", "op": "elementwise", "fn": "add", "inputs": [src, f"{p}.self_attn.o_proj"]},
        {"name": f"{p}.post_attention_layernorm", "op": "norm", "shape": [hidden]},
        {"name": f"{p}.mlp.gate_proj", "op": "linear", "shape": [ffn, hidden], "sparsity": sparsity},
        {"name": f"{p}.mlp.up_proj", "op": "linear", "shape": [ffn, hidden], "inputs": [f"{p}.post_attention_layernorm"], "sparsity": sparsity},
        {"name": f"{p}.mlp.act_fn", "op": "activation", "fn": "silu", "inputs": [f"{p}.mlp.gate_proj"]},
        {"name": f"{p}.mlp.gate_up", "op": "elementwise", "fn": "mul", "inputs": [f"{p}.mlp.act_fn", f"{p}.mlp.up_proj"]},
        {"name": f"{p}.mlp.down_proj", "op": "linear", "shape": [hidden, ffn], "sparsity": sparsity},
        {"name": f"{p}.mlp_residual", "op": "elementwise", "fn": "add", "inputs": [f"{p}.attn_residual", f"{p}.mlp.down_proj"]},
    ]
    for short, extra in (overrides or {}).items():
        full = f"{p}.{short}"
        matches = [item for item in spec if item["name"] == full]
        if not matches:
            raise UserError(f"override {short!r}: no such layer in a Llama block")
        matches[0].update(extra)
    return [Layer.model_validate(item) for item in spec]


def llama_stack(
    name: str,
    *,
    blocks: int = 2,
    hidden: int = 512,
    ffn: int = 1376,
    heads: int = 8,
    kv_heads: int | None = None,
    batch: int = 1,
    sequence: int = 128,
    sparsity: str = "dense",
    overrides: dict[str, dict[str, Any]] | None = None,
    **fields: Any,
) -> Workload:
    """A Llama-style decoder stack of ``blocks`` blocks and a final norm.

    ``overrides`` maps full layer names (``layers.1.mlp.down_proj``) to extra
    fields; remaining keyword arguments are workload fields (seed, backend,
    conversion, precision, repeats, ...).
    """
    layers: list[Layer] = []
    previous: str | None = None
    for i in range(blocks):
        block = llama_block(f"layers.{i}", hidden, ffn, heads, kv_heads=kv_heads, sparsity=sparsity, input_name=previous)
        layers.extend(block)
        previous = block[-1].name
    layers.append(Layer(name="norm", op="norm", shape=[hidden], inputs=[previous] if previous else None))
    layers = _apply_overrides(layers, overrides or {})
    return Workload.model_validate(
        {
            "name": name,
            "tokens": {"batch": batch, "sequence": sequence},
            "input_features": hidden,
            "layers": [layer.model_dump(exclude_none=True) for layer in layers],
            **fields,
        }
    )


def mlp_chain(
    name: str,
    widths: Sequence[int],
    *,
    sequence: int = 16,
    sparsity: str = "dense",
    activation: str = "relu",
    **fields: Any,
) -> Workload:
    """A small MLP: linear layers ``widths[i] -> widths[i+1]`` with activations between (for tests)."""
    if len(widths) < 2:
        raise UserError("mlp_chain needs at least two widths")
    layers: list[dict[str, Any]] = []
    for i in range(len(widths) - 1):
        layers.append({"name": f"fc{i}", "op": "linear", "shape": [widths[i + 1], widths[i]], "sparsity": sparsity})
        if i < len(widths) - 2:
            layers.append({"name": f"act{i}", "op": "activation", "fn": activation})
    return Workload.model_validate({"name": name, "tokens": {"sequence": sequence}, "layers": layers, **fields})


def _apply_overrides(layers: list[Layer], overrides: dict[str, dict[str, Any]]) -> list[Layer]:
    names = {layer.name for layer in layers}
    for full in overrides:
        if full not in names:
            raise UserError(f"override {full!r}: no such layer")
    return [
        Layer.model_validate({**layer.model_dump(exclude_none=True), **overrides[layer.name]})
        if layer.name in overrides
        else layer
        for layer in layers
    ]
