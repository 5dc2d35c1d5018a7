"""Layer and block fixes on a declared graph: exclude a layer from sparsity, pad it to an aligned shape, cast it, or
change the block size of V:N:M layers (the workload surgery a classification's fix maps onto)."""

from __future__ import annotations

from sparsedebug.core.errors import UserError
from sparsedebug.records.classification import Fix
from sparsedebug.records.run import KernelPath
from sparsedebug.sources.workload.graph import check_graph, resolved_inputs
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.schema import Workload


def apply_graph_fix(workload: Workload, fix: Fix) -> tuple[Workload | None, str]:
    """A layer fix (exclude, pad, cast) or a block fix on a copy of ``workload``; ``None`` and why when it does not map."""
    if fix.kind == "layer" and fix.layer is not None:
        names = [layer.name for layer in workload.layers]
        if fix.layer not in names:
            return None, f"layer {fix.layer} is not in workload {workload.name}"
        if fix.action == "exclude":
            layers = [
                layer.model_copy(update={"sparsity": "dense"}) if layer.name == fix.layer else layer
                for layer in workload.layers
            ]
            old_s = workload.layers[names.index(fix.layer)].sparsity
            return revalidate(workload.model_copy(update={"layers": layers})), f"{fix.layer}: sparsity {old_s} -> dense (excluded)"
        if fix.action == "pad":
            return _pad_layer(workload, fix.layer)
        if fix.action == "cast" and isinstance(fix.value, str):
            target = workload.layers[names.index(fix.layer)]
            old_dtype = workload.dtype_of(target)
            layers = [
                layer.model_copy(update={"dtype": fix.value}) if layer.name == fix.layer else layer
                for layer in workload.layers
            ]
            return revalidate(workload.model_copy(update={"layers": layers})), f"{fix.layer}: dtype {old_dtype} -> {fix.value}"
    if fix.kind == "block" and fix.value is not None:
        target_v = int(fix.value)
        changed = []
        layers = []
        for layer in workload.layers:
            pattern = layer.pattern
            if pattern is not None and pattern.block is not None and (fix.layer is None or fix.layer == layer.name):
                changed.append(f"{layer.name} {layer.sparsity} -> {target_v}:{pattern.n}:{pattern.m}")
                layer = layer.model_copy(update={"sparsity": f"{target_v}:{pattern.n}:{pattern.m}"})
            layers.append(layer)
        if not changed:
            return None, "no V:N:M layer to change the block size of"
        return revalidate(workload.model_copy(update={"layers": layers})), "block size: " + ", ".join(changed)
    return None, f"advice, not a workload change: {fix.text or fix.code}"


# Largest padding (elements) tried on one dimension.
_PAD_SEARCH = 1024


def _accepts(workload: Workload, name: str, out: int, k: int) -> bool:
    """Whether the workload's backend profile takes ``name`` sparse at shape (out, k)."""
    from sparsedebug.kernels.masks import parse_pattern
    from sparsedebug.sources.workload.lowering import LayerQuery, get_profile

    layer = next(layer for layer in workload.layers if layer.name == name)
    if k % parse_pattern(layer.sparsity).m:
        return False
    query = LayerQuery(
        name=name, op="linear", out=out, k=k, dtype=workload.dtype_of(layer), pattern=layer.pattern, compliant=None
    )
    return get_profile(workload.backend).decide(query).path == KernelPath.SPARSE


def _width_group(workload: Workload, consumer: str) -> tuple[set[str], set[str]] | str:
    """The linear producers and width-carrying ops behind ``consumer``'s input, or why it cannot be padded."""
    index = {layer.name: i for i, layer in enumerate(workload.layers)}
    producers: set[str] = set()
    carriers: set[str] = set()
    frontier = list(resolved_inputs(workload, index[consumer]))
    while frontier:
        src = frontier.pop()
        if src == "input" or src not in index:
            return f"{consumer}: its input width comes from the model input; pad the input instead"
        layer = workload.layers[index[src]]
        if layer.op == "linear":
            producers.add(src)
        elif layer.op in ("activation", "elementwise"):
            if src not in carriers:
                carriers.add(src)
                frontier.extend(resolved_inputs(workload, index[src]))
        else:
            return f"{consumer}: its input width passes through {layer.op} {src}, which cannot be padded"
    group = producers | carriers
    outside = [
        layer.name
        for i, layer in enumerate(workload.layers)
        if layer.name != consumer and layer.name not in carriers and any(s in group for s in resolved_inputs(workload, i))
    ]
    if outside:
        return f"{consumer}: that width also feeds {', '.join(outside)}; padding would change them too"
    return producers, carriers


def _pad_layer(workload: Workload, name: str) -> tuple[Workload | None, str]:
    """Pad ``name`` to the smallest shape the backend profile takes sparse, keeping the graph consistent.

    A misaligned input width K is padded together with the linear layers that
    produce it (through activations and elementwise ops); a misaligned output
    width is padded as the input width of its single linear consumer, which
    widens this layer and its siblings. Widths that reach the model input, a norm,
    attention or another consumer cannot be padded this way. The workload cannot
    hold zero rows, so the added rows are seeded weights like the rest: timing is
    that of zero padding, while quality also sees the extra neurons.
    """
    shapes = {s.name: s for s in check_graph(workload)}
    target = next(layer for layer in workload.layers if layer.name == name)
    if target.op != "linear" or target.pattern is None:
        return None, f"{name} is not a sparse linear layer"
    out, k = shapes[name].out_width, shapes[name].in_widths[0]
    if _accepts(workload, name, out, k):
        return None, f"{name}: shape ({out}, {k}) already lowers sparse; padding changes nothing"
    new_k = next((k + d for d in range(1, _PAD_SEARCH) if _accepts(workload, name, out, k + d)), None)
    new_out = next((out + d for d in range(1, _PAD_SEARCH) if _accepts(workload, name, out + d, k)), None)
    widths: dict[str, int] = {}  # consumer -> padded input width
    if new_k is not None:
        widths[name] = new_k
        what = f"K {k} -> {new_k}"
    elif new_out is not None:
        consumers: list[str] = []
        frontier = [name]
        seen: set[str] = set()
        while frontier:
            src = frontier.pop()
            for i, layer in enumerate(workload.layers):
                if src in resolved_inputs(workload, i) and layer.name not in seen:
                    seen.add(layer.name)
                    if layer.op == "linear":
                        consumers.append(layer.name)
                    elif layer.op in ("activation", "elementwise"):
                        frontier.append(layer.name)
                    else:
                        return None, f"{name}: its output feeds {layer.op} {layer.name}, which cannot be padded"
        if len(consumers) != 1:
            return None, f"{name}: its output width reaches {len(consumers)} linear layers; pad needs exactly one"
        widths[consumers[0]] = new_out
        what = f"out {out} -> {new_out}"
    else:
        return None, f"{name}: no padding of up to {_PAD_SEARCH} on one dimension makes ({out}, {k}) lower sparse"
    (consumer, width), = widths.items()
    group = _width_group(workload, consumer)
    if isinstance(group, str):
        return None, group
    producers, _ = group
    layers = []
    for layer in workload.layers:
        if layer.name in producers and layer.shape is not None:
            layer = layer.model_copy(update={"shape": [width, layer.shape[1]]})
        if layer.name == consumer and layer.shape is not None:
            layer = layer.model_copy(update={"shape": [layer.shape[0], width]})
        layers.append(layer)
    try:
        fixed = revalidate(workload.model_copy(update={"layers": layers}))
    except UserError as exc:
        return None, f"{name}: padding {what} breaks the graph: {exc}"
    return fixed, (
        f"{name}: padded {what}; {', '.join(sorted(producers))} widened to {width} outputs and {consumer} to {width} "
        f"inputs (added rows are seeded weights, not zeros: timing as zero padding, quality sees the extra neurons)"
    )
