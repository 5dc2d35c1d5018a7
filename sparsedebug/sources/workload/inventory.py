"""The layer inventory of a workload: per layer its op, shapes, params, dense FLOPs and bytes moved.

The graph stage of a replay records it, and the target cost model projects from it
(bytes and FLOPs of the non-linear ops), so both read one definition.
"""

from __future__ import annotations

from sparsedebug.core.dtypes import dtype_info
from sparsedebug.records.run import (
    GraphLayer,
    OpKind,
)
from sparsedebug.sources.workload.graph import LayerShape, check_graph
from sparsedebug.sources.workload.schema import Layer, Workload


def graph_layer(workload: Workload, layer: Layer, shape: LayerShape) -> GraphLayer:
    """One layer's inventory entry: dense-equivalent FLOPs and bytes of one call at the workload's token count."""
    tokens = workload.tokens.total
    dtype = workload.dtype_of(layer)
    size = dtype_info(dtype).itemsize
    params = 0
    flops = 0.0
    moved = 0.0
    weight_shape = None
    width_in = shape.in_widths[0]
    out = shape.out_width
    if layer.op == "linear":
        assert layer.shape is not None
        weight_shape = list(layer.shape)
        params = out * width_in
        flops = 2.0 * params * tokens
        moved = float(size * (params + width_in * tokens + out * tokens))
    elif layer.op == "embedding":
        assert layer.shape is not None
        weight_shape = list(layer.shape)
        params = layer.shape[0] * layer.shape[1]
        moved = float(size * (2 * out * tokens) + 8 * tokens)
    elif layer.op == "norm":
        params = out
        flops = 4.0 * out * tokens
        moved = float(size * (2 * out * tokens + out))
    elif layer.op == "attention":
        seq = workload.tokens.sequence
        flops = 4.0 * workload.tokens.batch * seq * seq * out
        moved = float(size * (sum(shape.in_widths) + out) * tokens)
    else:
        flops = float(out * tokens * len(shape.in_widths))
        moved = float(size * (sum(shape.in_widths) + out) * tokens)
    return GraphLayer(
        name=layer.name,
        op=OpKind(layer.op),
        weight_shape=weight_shape,
        input_shape=[tokens, width_in],
        output_shape=[tokens, out],
        dtype=dtype,
        intended=layer.sparsity,
        params=params,
        flops=flops,
        bytes=moved,
    )


def inventory(workload: Workload) -> list[GraphLayer]:
    """Every layer's inventory entry, in graph order (the graph is checked first)."""
    shapes = check_graph(workload)
    return [graph_layer(workload, layer, shape) for layer, shape in zip(workload.layers, shapes, strict=True)]
