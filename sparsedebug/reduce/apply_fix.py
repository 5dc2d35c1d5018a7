"""Apply one bounded fix to a copy of a workload: the workload surgery behind step 4.

A classification's fix maps onto a workload as a knob (conversion policy, precision,
threads), a layer change (exclude it from sparsity, pad its input width to a multiple
of M, cast it to the sparse layers' dtype) or a block size; advice is not a change.
Knobs are the workload's own; a layer or block change is the graph source's
(:meth:`sparsedebug.sources.replay.protocol.GraphSource.apply_layer_fix`: a declared
graph's layers, or a checkpoint's override entries).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsedebug.records.notes import Note, NoteValue, embed, note

if TYPE_CHECKING:
    from sparsedebug.records.classification import Fix
    from sparsedebug.sources.workload.schema import Workload

# A member a padding earlier in the set already made sparse (it shares the width padded): covered, not refused.
_COVERED = "targets.pad_already_sparse"


def apply_fix(workload: Workload, fix: Fix) -> tuple[Workload | None, Note]:
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
            return revalidate(new), note("targets.fix_knob", knob="conversion", old=old, new=fix.value, layers=target_layers(fix))
        if fix.knob == "precision" and isinstance(fix.value, str):
            old_p = workload.precision
            new = workload.model_copy(update={"precision": fix.value, "layers": [
                layer.model_copy(update={"dtype": None}) for layer in workload.layers
            ]})
            return revalidate(new), note("targets.fix_precision", old=old_p, new=fix.value)
        if fix.knob == "threads" and fix.value is not None:
            threads = int(fix.value)
            new = workload.model_copy(update={"threads": threads})
            return revalidate(new), note("targets.fix_knob", knob="threads", old=workload.threads or "default", new=threads)
        return None, note("targets.fix_unknown_knob", knob=fix.knob, value=fix.value)
    if fix.kind == "layer" and len(target_layers(fix)) > 1:
        return _apply_to_set(workload, fix)
    if fix.kind in ("layer", "block"):
        from sparsedebug.sources.replay.sources import graph_source

        return graph_source(workload).apply_layer_fix(fix)
    from sparsedebug.sources.replay.protocol import fix_is_advice

    return None, fix_is_advice(fix)


def target_layers(fix: Fix) -> list[str]:
    """Every layer a fix covers (``Fix.targets``, in order, once each); empty when it names no set."""
    return list(dict.fromkeys(name for target in fix.targets for name in target.layers))


def _apply_to_set(workload: Workload, fix: Fix) -> tuple[Workload | None, Note]:
    """One layer action (pad, cast, exclude) on every layer of the fix's set, in order, each on the workload the
    previous ones left; ``None`` and the member that refuses it (with why) when one does: the fix covers its whole
    set or is not applied. A member a padding earlier in the set already made sparse is covered."""
    from sparsedebug.sources.replay.sources import graph_source

    layers = target_layers(fix)
    causes = sorted({str(target.cause) for target in fix.targets})
    current = workload
    changed: list[str] = []
    dims: list[str] = []
    covered: list[str] = []
    old: list[str] = []
    new: list[str] = []
    for name in layers:
        fixed, how = graph_source(current).apply_layer_fix(fix.model_copy(update={"layer": name, "targets": []}))
        if fixed is None and how.code == _COVERED and changed:
            covered.append(name)
            continue
        if fixed is None:
            return None, note("targets.fix_set_refused", action=fix.action, causes=causes, layers=layers, layer=name,
                              **embed("why", how))
        current = fixed
        named = how.values.get("layer")
        changed.append(named if isinstance(named, str) else name)
        dims.append(_text(how.values.get("dim", "")))
        old.append(_text(how.values.get("old")))
        new.append(_text(how.values.get("new", "dense")))
    return current, note("targets.fix_set", action=fix.action, causes=causes, layers=changed, dims=dims, old=old, new=new,
                         covered=covered)


def _text(value: NoteValue) -> str:
    """A member's old or new value (a dtype, a sparsity, a padded width) as the name a note list holds."""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
