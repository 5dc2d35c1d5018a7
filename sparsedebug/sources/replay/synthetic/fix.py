"""Layer and block fixes on a declared graph: exclude a layer from sparsity, pad it to an aligned shape, cast it, or
change the block size of V:N:M layers (the workload surgery a classification's fix maps onto)."""

from __future__ import annotations

from sparsedebug.core.errors import UserError
from sparsedebug.records.classification import Fix
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import KernelPath
from sparsedebug.sources.replay.protocol import fix_is_advice
from sparsedebug.sources.workload.graph import check_graph, resolved_inputs
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.schema import Workload


def apply_graph_fix(workload: Workload, fix: Fix) -> tuple[Workload | None, Note]:
    """A layer fix (exclude, pad, cast) or a block fix on a copy of ``workload``; ``None`` and why when it does not map."""
    if fix.kind == "layer" and fix.layer is not None:
        names = [layer.name for layer in workload.layers]
        if fix.layer not in names:
            return None, note("targets.fix_layer_missing", layer=fix.layer, workload=workload.name)
        if fix.action == "exclude":
            layers = [
                layer.model_copy(update={"sparsity": "dense"}) if layer.name == fix.layer else layer
                for layer in workload.layers
            ]
            old_s = workload.layers[names.index(fix.layer)].sparsity
            return revalidate(workload.model_copy(update={"layers": layers})), note("targets.fix_excluded", layer=fix.layer, old=old_s)
        if fix.action == "pad":
            return _pad_layer(workload, fix.layer)
        if fix.action == "cast" and isinstance(fix.value, str):
            target = workload.layers[names.index(fix.layer)]
            old_dtype = workload.dtype_of(target)
            layers = [
                layer.model_copy(update={"dtype": fix.value}) if layer.name == fix.layer else layer
                for layer in workload.layers
            ]
            cast = note("targets.fix_cast", layer=fix.layer, old=old_dtype, new=fix.value)
            return revalidate(workload.model_copy(update={"layers": layers})), cast
    if fix.kind == "block" and fix.value is not None:
        target_v = int(fix.value)
        changed: list[str] = []
        old: list[str] = []
        new: list[str] = []
        layers = []
        for layer in workload.layers:
            pattern = layer.pattern
            if pattern is not None and pattern.block is not None and (fix.layer is None or fix.layer == layer.name):
                sparsity = f"{target_v}:{pattern.n}:{pattern.m}"
                changed.append(layer.name)
                old.append(layer.sparsity)
                new.append(sparsity)
                layer = layer.model_copy(update={"sparsity": sparsity})
            layers.append(layer)
        if not changed:
            return None, note("targets.fix_no_vnm_layer")
        return revalidate(workload.model_copy(update={"layers": layers})), note("targets.fix_block", layers=changed, old=old, new=new)
    return None, fix_is_advice(fix)


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


def _width_group(workload: Workload, consumer: str) -> tuple[set[str], set[str]] | Note:
    """The linear producers and width-carrying ops behind ``consumer``'s input, or why it cannot be padded."""
    index = {layer.name: i for i, layer in enumerate(workload.layers)}
    producers: set[str] = set()
    carriers: set[str] = set()
    frontier = list(resolved_inputs(workload, index[consumer]))
    while frontier:
        src = frontier.pop()
        if src == "input" or src not in index:
            return note("targets.pad_width_from_input", layer=consumer)
        layer = workload.layers[index[src]]
        if layer.op == "linear":
            producers.add(src)
        elif layer.op in ("activation", "elementwise"):
            if src not in carriers:
                carriers.add(src)
                frontier.extend(resolved_inputs(workload, index[src]))
        else:
            return note("targets.pad_width_through", layer=consumer, op=layer.op, through=src)
    group = producers | carriers
    outside = [
        layer.name
        for i, layer in enumerate(workload.layers)
        if layer.name != consumer and layer.name not in carriers and any(s in group for s in resolved_inputs(workload, i))
    ]
    if outside:
        return note("targets.pad_width_shared", layer=consumer, feeds=outside)
    return producers, carriers


def _pad_layer(workload: Workload, name: str) -> tuple[Workload | None, Note]:
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
        return None, note("targets.pad_not_sparse_linear", layer=name)
    out, k = shapes[name].out_width, shapes[name].in_widths[0]
    if _accepts(workload, name, out, k):
        return None, note("targets.pad_already_sparse", layer=name, out=out, k=k)
    new_k = next((k + d for d in range(1, _PAD_SEARCH) if _accepts(workload, name, out, k + d)), None)
    new_out = next((out + d for d in range(1, _PAD_SEARCH) if _accepts(workload, name, out + d, k)), None)
    widths: dict[str, int] = {}  # consumer -> padded input width
    if new_k is not None:
        widths[name] = new_k
        dim, old_width = "K", k
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
                        return None, note("targets.pad_output_feeds", layer=name, op=layer.op, consumer=layer.name)
        if len(consumers) != 1:
            return None, note("targets.pad_consumers", layer=name, count=len(consumers))
        widths[consumers[0]] = new_out
        dim, old_width = "out", out
    else:
        return None, note("targets.pad_none_found", layer=name, search=_PAD_SEARCH, out=out, k=k)
    (consumer, width), = widths.items()
    group = _width_group(workload, consumer)
    if isinstance(group, Note):
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
        return None, note("targets.pad_breaks_graph", layer=name, dim=dim, old=old_width, new=width, error=str(exc))
    return fixed, note(
        "targets.padded", layer=name, dim=dim, old=old_width, new=width, producers=sorted(producers), consumer=consumer,
    )
