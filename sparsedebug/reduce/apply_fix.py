"""Apply one bounded fix to a copy of a workload: the workload surgery behind step 4.

A classification's fix maps onto a workload as a knob (conversion policy, precision,
threads), a layer change (exclude it from sparsity, pad its input width to a multiple
of M, cast it to the sparse layers' dtype) or a block size; advice is not a change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsedebug.core.errors import UserError
from sparsedebug.records.run import KernelPath

if TYPE_CHECKING:
    from sparsedebug.records.classification import Fix
    from sparsedebug.sources.workload.schema import Workload



def apply_fix(workload: Workload, fix: Fix) -> tuple[Workload | None, str]:
    """Apply a classification's fix to a copy of ``workload``; ``None`` and why when it does not map.

    Maps: knob (conversion, precision, threads), layer (exclude: the layer goes
    dense; pad: the layer's input width is padded up to a multiple of M, with
    every layer that produces or carries that width), block (a larger V for one
    V:N:M layer or all of them). Advice is not a workload change.
    """
    from sparsedebug.sources.workload.load import revalidate

    if fix.kind == "knob":
        if fix.knob == "conversion" and fix.value in ("once", "per_call"):
            old = workload.conversion
            new = workload.model_copy(update={"conversion": fix.value})
            return revalidate(new), f"conversion {old} -> {fix.value}"
        if fix.knob == "precision" and isinstance(fix.value, str):
            old_p = workload.precision
            new = workload.model_copy(update={"precision": fix.value, "layers": [
                layer.model_copy(update={"dtype": None}) for layer in workload.layers
            ]})
            return revalidate(new), f"precision {old_p} -> {fix.value} (per-layer dtype overrides cleared)"
        if fix.knob == "threads" and fix.value is not None:
            threads = int(fix.value)
            new = workload.model_copy(update={"threads": threads})
            return revalidate(new), f"threads {workload.threads or 'default'} -> {threads}"
        return None, f"knob {fix.knob}={fix.value} is not a workload knob sparsedebug can set"
    if workload.model is not None and fix.kind in ("layer", "block"):
        return _model_fix(workload, fix)
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
    return None, f"advice, not a workload change: {fix.text}"


def _model_fix(workload: Workload, fix: Fix) -> tuple[Workload | None, str]:
    """A layer or block fix on a model workload: the layer's entry is rewritten; shapes are the checkpoint's."""
    from sparsedebug.sources.replay.checkpoint.workload import override_layer

    assert workload.model is not None
    if fix.kind == "block":
        return None, f"block size: model {workload.model.name} is pruned per its pruning block; set pruning.pattern instead"
    if fix.layer is None:
        return None, f"advice, not a workload change: {fix.text}"
    name = fix.layer.removesuffix(".weight")
    if fix.action == "exclude":
        new, how = override_layer(workload, name, sparsity="dense")
        return new, f"{how} (excluded)"
    if fix.action == "cast" and isinstance(fix.value, str):
        return override_layer(workload, name, dtype=fix.value)
    if fix.action == "pad":
        return None, f"{name}: a checkpoint's shapes are fixed; padding it would change the model, not the lowering"
    return None, f"advice, not a workload change: {fix.text}"


_PAD_SEARCH = 1024
"""Largest padding (elements) tried on one dimension."""


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
    from sparsedebug.sources.workload.graph import resolved_inputs

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
    from sparsedebug.sources.workload.graph import check_graph, resolved_inputs
    from sparsedebug.sources.workload.load import revalidate

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
