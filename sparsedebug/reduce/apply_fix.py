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
    if fix.kind in ("layer", "block"):
        from sparsedebug.sources.replay.sources import graph_source

        return graph_source(workload).apply_layer_fix(fix)
    return None, f"advice, not a workload change: {fix.text or fix.code}"
