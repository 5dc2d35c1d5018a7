"""A checkpoint's forward as the target cost model projects it: its linears and, per block, the ops between them.

Every linear is a :class:`~sparsedebug.sources.target.model.LinearCall` at its
own shape and dtype, on the path the backend profile lowers it to. Per block,
the non-linear ops are listed in forward order around them: the attention
core (reading the query, key and value widths, writing the output projection's
input width), a residual add and a norm after the attention output, the FFN
activation on its producers' width (and the SwiGLU product when the FFN has two
producers), a residual add and a norm after the FFN. Their bytes and FLOPs are
the declared graphs' formulas (:func:`sparsedebug.sources.workload.inventory.graph_layer`),
so the target model estimates them the same way (basis ``estimate``). The
embedding lookup and a final norm are left out: one gather and one norm per
forward, next to the per-block ops.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.sources.models.base import Linear, Transformer
from sparsedebug.sources.replay.checkpoint.narrow import ffn_blocks
from sparsedebug.sources.replay.checkpoint.workload import ModelLayer
from sparsedebug.sources.target.model import LinearCall, OpCall
from sparsedebug.sources.workload.graph import LayerShape
from sparsedebug.sources.workload.inventory import graph_layer
from sparsedebug.sources.workload.schema import Layer, Workload


def _op(workload: Workload, name: str, op: str, out: int, in_widths: list[int], fn: str | None = None) -> OpCall:
    layer = Layer.model_validate({"name": name, "op": op, "shape": [out], "fn": fn})
    shape = LayerShape(name=name, inputs=tuple(f"{name}.in{i}" for i in range(len(in_widths))), in_widths=tuple(in_widths), out_width=out)
    entry = graph_layer(workload, layer, shape)
    return OpCall(name, op, workload.tokens.total, entry.dtype, entry.bytes, entry.flops, layer.function)


def model_calls(
    model: Transformer, layers: list[ModelLayer], workload: Workload, paths: Mapping[str, str], *, ffn_keep: int | None = None
) -> list[LinearCall | OpCall]:
    """The forward of ``model`` at ``workload``'s tokens: linears on ``paths`` (default dense), ops between them.

    ``ffn_keep`` narrows every FFN to that many neurons (the equal-latency model): its producers' outputs, its
    activation and its consumer's input.
    """
    tokens = workload.tokens.total
    conv = 1 if workload.conversion == "per_call" else 0
    by_name = {layer.name: layer for layer in layers}
    producers = {name for block in ffn_blocks(model) for name in block.producers}
    consumers = {block.consumer for block in ffn_blocks(model)}

    def linear(lin: Linear) -> LinearCall:
        out, k = lin.out_features, lin.in_features
        if ffn_keep is not None and lin.name in producers:
            out = ffn_keep
        if ffn_keep is not None and lin.name in consumers:
            k = ffn_keep
        path = paths.get(lin.name, "dense")
        return LinearCall(lin.name, out, k, tokens, by_name[lin.name].dtype, path, conv if path == "sparse" else 0)

    calls: list[LinearCall | OpCall] = []
    for index in range(model.blocks):
        block = model.block_linears(index)
        attn = [lin for lin in block if lin.role == "attention"]
        mlp = [lin for lin in block if lin.role == "mlp"]
        prefix = f"block.{index}"
        hidden = block[0].in_features
        if attn:
            calls += [linear(lin) for lin in attn[:-1]]
            width = attn[-1].in_features
            calls.append(_op(workload, f"{prefix}.attention", "attention", width, [lin.out_features for lin in attn[:-1]]))
            calls.append(linear(attn[-1]))
            calls.append(_op(workload, f"{prefix}.attention.residual", "elementwise", hidden, [hidden, hidden], "add"))
            calls.append(_op(workload, f"{prefix}.attention.norm", "norm", hidden, [hidden]))
        if mlp:
            feeding = [lin for lin in mlp[:-1] if lin.out_features == mlp[-1].in_features]
            width = ffn_keep if ffn_keep is not None and mlp[-1].name in consumers else mlp[-1].in_features
            calls += [linear(lin) for lin in mlp[:-1]]
            calls.append(_op(workload, f"{prefix}.mlp.activation", "activation", width, [width], "silu" if len(feeding) > 1 else "gelu"))
            if len(feeding) > 1:
                calls.append(_op(workload, f"{prefix}.mlp.product", "elementwise", width, [width] * len(feeding), "mul"))
            calls.append(linear(mlp[-1]))
            calls.append(_op(workload, f"{prefix}.mlp.residual", "elementwise", hidden, [hidden, hidden], "add"))
            calls.append(_op(workload, f"{prefix}.mlp.norm", "norm", hidden, [hidden]))
    return calls
