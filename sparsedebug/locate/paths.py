"""The dense-fallback counter: which layers changed kernel path between a baseline and a candidate.

Layers are matched by name. A layer *changed* when its sparse/dense path, its
dominant kernel class, or the set of kernel classes it ran differs (a GEMM that
now also runs an fp32 kernel). A changed layer is *unintended* when the candidate
did not declare it sparse (``graph.intended`` is ``dense`` or the layer is missing
from the candidate graph): a neighbouring operator that fell onto another (often
fp32 or slower) path is exactly what a sparse rollout misses. Separately, every
candidate layer declared sparse that ran dense is a *dense fallback*. The three
predicates are :mod:`sparsedebug.core.patterns`' (``path_changed``,
``declared_sparse``, ``fell_back``), the same ones bisect's ``lower`` stage uses; a
change that also changed the layer's precision says so (``precision_changes``, the
list the gate's ``precision_drift`` and classify's ``precision.dtype_change`` read).
"""

from __future__ import annotations

from sparsedebug.core.dispatch import dispatch_causes
from sparsedebug.core.patterns import declared_sparse, fell_back, kernel_classes, path_changed, precision_changes
from sparsedebug.core.stats import median
from sparsedebug.records.findings import DenseFallback, FallbackReport, PathChange
from sparsedebug.records.run import RunRecord


def _median_ms(record: RunRecord) -> dict[str, float]:
    """Median per-call kernel time of every layer with samples."""
    return {layer.name: median(layer.samples_ms) for layer in record.kernel.layers if layer.samples_ms}


def compare_paths(base: RunRecord, cand: RunRecord) -> FallbackReport:
    """List every layer whose kernel class/path changed from ``base`` to ``cand``; flag the unintended ones."""
    base_lower = {layer.name: layer for layer in base.lower.layers}
    cand_lower = {layer.name: layer for layer in cand.lower.layers}
    cand_intent = {layer.name: layer.intended for layer in cand.graph.layers}
    base_ms = _median_ms(base)
    cand_ms = _median_ms(cand)
    precision = {c.layer: c.how for c in precision_changes(base, cand)}
    changed: list[PathChange] = []
    matched = 0
    for name, before in base_lower.items():
        after = cand_lower.get(name)
        if after is None:
            continue
        matched += 1
        if not path_changed(before, after):
            continue
        intended = cand_intent.get(name)
        declared = declared_sparse(intended)
        changed.append(
            PathChange(
                layer=name,
                base_class=before.kernel_class.value if before.kernel_class else None,
                cand_class=after.kernel_class.value if after.kernel_class else None,
                base_path=before.path.value,
                cand_path=after.path.value,
                base_classes=kernel_classes(before),
                cand_classes=kernel_classes(after),
                cand_intended=intended,
                declared_sparse=declared,
                unintended=not declared,
                base_ms=base_ms.get(name),
                cand_ms=cand_ms.get(name),
                base_backend=before.dispatch.backend if before.dispatch else None,
                cand_backend=after.dispatch.backend if after.dispatch else None,
                cause=dispatch_causes(before.dispatch, after.dispatch),
                precision=precision.get(name),
            )
        )
    fallbacks = [
        DenseFallback(
            layer=layer.name,
            intended=cand_intent[layer.name],
            reason=layer.reason.value if layer.reason else None,
            kernel_class=layer.kernel_class.value if layer.kernel_class else None,
        )
        for layer in cand.lower.layers
        if fell_back(cand_intent.get(layer.name), layer)
    ]
    return FallbackReport(
        base=base.name,
        cand=cand.name,
        matched_layers=matched,
        changed=changed,
        unintended=[change for change in changed if change.unintended],
        dense_fallbacks=fallbacks,
        only_in_base=[name for name in base_lower if name not in cand_lower],
        only_in_cand=[name for name in cand_lower if name not in base_lower],
        by_class_ms_base=dict(base.kernel.by_class_ms),
        by_class_ms_cand=dict(cand.kernel.by_class_ms),
    )
