"""From linked GPU ops and layer calls to the graph, lower and kernel stages of a run record.

Per layer (in order of first launch): the op kind and shapes come from the CPU
ops of its first call (``trace_ops``), its path from the classes of the kernels
it ran (``kernel_names``): sparse when a sparse GEMM kernel ran, dense otherwise.
Per-call kernel time samples sum the GPU time of each call's kernels. A layer
without CPU ops (kernel names) gets its kind from its kernel classes, the only
evidence there is.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sparsedebug.core.kernel_names import GEMM_CLASSES, PRECEDENCE, primary_class
from sparsedebug.records.notes import note
from sparsedebug.records.run import (
    DispatchEvidence,
    FallbackReason,
    GraphLayer,
    KernelClass,
    KernelLayer,
    KernelPath,
    LowerLayer,
    OpKind,
)
from sparsedebug.sources.importers.trace.read.events import GpuOp, HostRange
from sparsedebug.sources.importers.trace.structure.layers import (
    LayerCall,
    LayerResolver,
    backward_ops,
    op_label,
    ops_under,
    top_level_ops,
)
from sparsedebug.sources.importers.trace.structure.ops import (
    LINEAR_OPS,
    dispatch_evidence,
    first_dtype,
    layer_kind,
    name_hint,
    op_kind,
    tensor_inputs,
    weight_shape,
)

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}
_CLASS_ORDER = {cls: i for i, cls in enumerate(PRECEDENCE)}


@dataclass
class Layer:
    """The GPU ops of one layer and its calls, in launch order."""

    name: str
    ops: list[GpuOp] = field(default_factory=list)
    calls: list[LayerCall] = field(default_factory=list)


@dataclass
class LayerRecords:
    """The three per-layer stage entries of one layer."""

    graph: GraphLayer
    lower: LowerLayer
    kernel: KernelLayer


def group_layers(ops: list[GpuOp], calls: dict[int, LayerCall]) -> list[Layer]:
    """Layers in order of first launch; ``calls`` maps id(op) to its call."""
    layers: dict[str, Layer] = {}
    seen: set[tuple[str, int]] = set()
    for op in sorted(ops, key=lambda op: (op.launch_ts if op.launch_ts is not None else op.ts, op.ts)):
        call = calls[id(op)]
        layer = layers.get(call.name)
        if layer is None:
            layer = layers[call.name] = Layer(call.name)
        layer.ops.append(op)
        if (call.name, id(call)) not in seen:
            seen.add((call.name, id(call)))
            layer.calls.append(call)
    return list(layers.values())


def _kind_from_kernels(name: str, classes: set[KernelClass]) -> OpKind:
    if classes & GEMM_CLASSES:
        return OpKind.LINEAR
    if KernelClass.ATTENTION in classes:
        return OpKind.ATTENTION
    hint = name_hint(name)
    if hint is not None:
        return hint
    if classes and classes <= {KernelClass.ELEMENTWISE, KernelClass.COPY}:
        return OpKind.ELEMENTWISE
    return OpKind.OTHER


def _primary(ops: list[HostRange], kind: OpKind) -> HostRange | None:
    """The op the model called for this layer: the outermost op of the layer's kind, else the first op with inputs."""
    for op in ops:
        if kind is OpKind.LINEAR and (op.name in LINEAR_OPS or op.name.startswith("triton_tem_")):
            return op
        if kind is OpKind.ATTENTION and op_kind(op.name) is OpKind.ATTENTION:
            return op
    return next((op for op in ops if tensor_inputs(op)), None)


def _hint_name(call: LayerCall) -> str | None:
    if call.range is None:
        return None
    if call.identity == "module":
        base, _sep, tail = call.range.name.rpartition("_")
        return base if base and tail.isdigit() else call.range.name
    return call.range.name if call.identity == "annotation" else None


def _op_facts(resolver: LayerResolver, call: LayerCall) -> tuple[OpKind | None, HostRange | None, list[HostRange]]:
    """Kind, the op the model called, and the ops under it; a backward call's are its forward call's (the layer it differentiates)."""
    source = resolver.calls.get(call.forward_key, call) if call.forward_key is not None else call
    under = ops_under(resolver, source)
    if not under:
        return None, None, []
    kind = layer_kind((op.name for op in under), _hint_name(source))
    return kind, _primary(under, kind), under


def _dispatch(resolver: LayerResolver, call: LayerCall, kind: OpKind, primary: HostRange, under: list[HostRange]) -> DispatchEvidence | None:
    """What the dispatcher chose for this call.

    A backward call's evidence is its own ops' (the GEMMs or attention backward
    its autograd nodes ran), not its forward's: none when it ran no op of the
    layer's kind.
    """
    if call.forward_key is None or not call.nodes:
        return dispatch_evidence(primary, under, kind)
    ran = backward_ops(resolver, call)
    own = _primary(ran, kind)
    return dispatch_evidence(own, ran, kind) if own is not None and op_kind(own.name) is kind else None


def _linear_graph(name: str, kind: OpKind, dtype: str, primary: HostRange, intended: str) -> GraphLayer | None:
    weight = weight_shape(primary)
    dims = primary.dims if isinstance(primary.dims, list) else []
    index = 1 if primary.name in ("aten::addmm", "aten::_addmm_activation") else 0
    x = dims[index] if index < len(dims) else None
    if weight is None or not (isinstance(x, list) and x and all(isinstance(d, int) for d in x)) or x[-1] != weight[1]:
        return None
    rows = 1
    for d in x[:-1]:
        rows *= d
    size = DTYPE_BYTES.get(dtype)
    has_bias = primary.name in ("aten::addmm", "aten::_addmm_activation") or (len(dims) > 2 and isinstance(dims[2], list) and bool(dims[2]))
    return GraphLayer(
        name=name, op=kind, weight_shape=weight, input_shape=list(x), output_shape=[*x[:-1], weight[0]], dtype=dtype, intended=intended,
        params=weight[0] * weight[1] + (weight[0] if has_bias else 0), flops=2.0 * rows * weight[0] * weight[1],
        bytes=float(size * (rows * weight[1] + weight[0] * weight[1] + rows * weight[0])) if size else 0.0,
    )


def _graph_layer(name: str, kind: OpKind, dtype: str, primary: HostRange | None, sparse: bool) -> GraphLayer:
    intended = "2:4" if sparse else "dense"
    if primary is not None and kind is OpKind.LINEAR:
        linear = _linear_graph(name, kind, dtype, primary, intended)
        if linear is not None:
            return linear
    shape = next((s for _i, _d, s, _st in tensor_inputs(primary) if s is not None), None) if primary is not None else None
    return GraphLayer(name=name, op=kind, input_shape=shape, dtype=dtype, intended=intended)


def _samples(layer: Layer) -> list[float]:
    per_call: dict[Any, float] = defaultdict(float)
    for position, op in enumerate(layer.ops):
        key = ("op", position) if op.call is None else op.call
        per_call[key] += op.dur / 1e3
    # a call whose kernels the profiler recorded as 0 us long holds no timing (a run record's samples are positive times)
    return [ms for ms in per_call.values() if ms > 0]


def layer_records(layer: Layer, resolver: LayerResolver) -> LayerRecords:
    """Graph, lower and kernel entries of one layer."""
    call = layer.calls[0]
    classes = {op.cls for op in layer.ops}
    cls = primary_class(classes)
    kind, primary, under = _op_facts(resolver, call)
    if kind is None:
        kind = _kind_from_kernels(layer.name, classes)
    dtype = first_dtype(primary) or "unknown"
    sparse = KernelClass.SPARSE_GEMM in classes
    dispatch: DispatchEvidence | None = None
    if primary is not None and kind in (OpKind.LINEAR, OpKind.ATTENTION):
        dispatch = _dispatch(resolver, call, kind, primary, under)
    by_class: dict[str, float] = defaultdict(float)
    for op in layer.ops:
        by_class[op.cls.value] += op.dur / 1e3
    lower = LowerLayer(
        name=layer.name,
        path=KernelPath.SPARSE if sparse else KernelPath.DENSE,
        reason=None if sparse else FallbackReason.OBSERVED_DENSE,
        detail=note("sources.classes_seen", classes=[c.value for c in sorted(classes, key=lambda c: _CLASS_ORDER[c])]),
        kernel_class=cls,
        kernels=list(dict.fromkeys(op.name for op in layer.ops)),
        phase=call.phase,
        identity=call.identity,
        dispatch=dispatch,
    )
    kernel = KernelLayer(name=layer.name, samples_ms=_samples(layer), by_class_ms=dict(by_class), precision=None if dtype == "unknown" else dtype)
    graph = _graph_layer(layer.name, kind, dtype, primary, sparse)
    source = resolver.calls.get(call.forward_key, call) if call.forward_key is not None else call
    graph.ops = [f"{call.phase}:{op_label(op)}" for op in top_level_ops(resolver, source)]
    return LayerRecords(graph, lower, kernel)


def tokens(layers: list[GraphLayer]) -> int | None:
    """Tokens per call: the rows of the first linear layer's input."""
    for layer in layers:
        if layer.op is OpKind.LINEAR and layer.input_shape:
            rows = 1
            for d in layer.input_shape[:-1]:
                rows *= d
            return rows
    return None


def dense_share(groups: list[list[GpuOp]], sparse_layers: set[str]) -> float | None:
    """Median over iterations of the fraction of GPU op time spent in layers that ran dense."""
    shares = []
    for group in groups:
        total = sum(op.dur for op in group)
        if total > 0:
            shares.append(sum(op.dur for op in group if op.layer not in sparse_layers) / total)
    if not shares:
        return None
    shares.sort()
    mid = len(shares) // 2
    return shares[mid] if len(shares) % 2 else (shares[mid - 1] + shares[mid]) / 2.0


def layer_idle(ops: list[GpuOp], with_calls: set[str]) -> dict[str, list[float]]:
    """Per layer with known call boundaries, per call: device idle (ms) between the latest earlier op end and the call's first op.

    ``ops`` are sorted by start. Kernel-name layers get no samples: a call
    boundary is only known from an annotation, a module or an op.
    """
    first_of_call: dict[Any, int] = {}
    for index, op in enumerate(ops):
        if op.call is not None and op.layer in with_calls and op.call not in first_of_call:
            first_of_call[op.call] = index
    idle: dict[str, list[float]] = defaultdict(list)
    latest_end = float("-inf")
    firsts = set(first_of_call.values())
    for index, op in enumerate(ops):
        if index in firsts and op.layer is not None and latest_end != float("-inf"):
            idle[op.layer].append(max(0.0, op.ts - latest_end) / 1e3)  # the trace's first call has no gap before it
        if op.end > latest_end:
            latest_end = op.end
    return dict(idle)
