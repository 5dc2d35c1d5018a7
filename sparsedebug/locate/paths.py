"""The dense-fallback counter: which layers changed kernel path between a baseline and a candidate.

Layers are matched by name. A layer *changed* when its kernel class (or, for
records without kernel classes such as replays, its sparse/dense path) differs,
or when the set of kernel classes it ran differs (a GEMM that now also runs an
fp32 kernel). A changed layer is *unintended* when the candidate did not declare
it sparse (``graph.intended`` is ``dense`` or the layer is missing from the
candidate graph): a neighbouring operator that fell onto another (often fp32 or
slower) path is exactly what a sparse rollout misses. Separately, every
candidate layer declared sparse that ran dense is a *dense fallback*.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sparsedebug.records.run import LowerLayer, RunRecord
from sparsedebug.sources.importers.kernel_names import classify_kernel


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PathChange(_Model):
    """One layer whose kernel path differs between baseline and candidate."""

    layer: str
    base_class: str | None
    cand_class: str | None
    base_path: str
    cand_path: str
    base_classes: list[str] = Field(default_factory=list)
    cand_classes: list[str] = Field(default_factory=list)
    cand_intended: str | None
    declared_sparse: bool
    unintended: bool
    base_ms: float | None = Field(None, description="Baseline median per-call kernel time of the layer.")
    cand_ms: float | None = Field(None, description="Candidate median per-call kernel time of the layer.")


class DenseFallback(_Model):
    """A candidate layer declared sparse that ran dense."""

    layer: str
    intended: str
    reason: str | None
    kernel_class: str | None


class FallbackReport(_Model):
    """Every path change between two runs, the unintended ones, and the candidate's dense fallbacks."""

    base: str
    cand: str
    matched_layers: int
    changed: list[PathChange]
    unintended: list[PathChange]
    dense_fallbacks: list[DenseFallback]
    only_in_base: list[str]
    only_in_cand: list[str]
    by_class_ms_base: dict[str, float] = Field(default_factory=dict)
    by_class_ms_cand: dict[str, float] = Field(default_factory=dict)


def _classes(layer: LowerLayer) -> list[str]:
    return sorted({classify_kernel(name).value for name in layer.kernels})


def _is_sparse(intended: str | None) -> bool:
    return intended is not None and intended.strip().lower() not in ("", "dense")


def _median_ms(record: RunRecord) -> dict[str, float]:
    out: dict[str, float] = {}
    for layer in record.kernel.layers:
        if layer.samples_ms:
            ordered = sorted(layer.samples_ms)
            mid = len(ordered) // 2
            out[layer.name] = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0
    return out


def compare_paths(base: RunRecord, cand: RunRecord) -> FallbackReport:
    """List every layer whose kernel class/path changed from ``base`` to ``cand``; flag the unintended ones."""
    base_lower = {layer.name: layer for layer in base.lower.layers}
    cand_lower = {layer.name: layer for layer in cand.lower.layers}
    cand_intent = {layer.name: layer.intended for layer in cand.graph.layers}
    base_ms = _median_ms(base)
    cand_ms = _median_ms(cand)
    changed: list[PathChange] = []
    matched = 0
    for name, before in base_lower.items():
        after = cand_lower.get(name)
        if after is None:
            continue
        matched += 1
        before_classes, after_classes = _classes(before), _classes(after)
        if before.kernel_class is not None and after.kernel_class is not None:
            differs = before.kernel_class != after.kernel_class or before_classes != after_classes
        else:
            differs = before.path != after.path
        if not differs:
            continue
        intended = cand_intent.get(name)
        declared = _is_sparse(intended)
        changed.append(
            PathChange(
                layer=name,
                base_class=before.kernel_class.value if before.kernel_class else None,
                cand_class=after.kernel_class.value if after.kernel_class else None,
                base_path=before.path.value,
                cand_path=after.path.value,
                base_classes=before_classes,
                cand_classes=after_classes,
                cand_intended=intended,
                declared_sparse=declared,
                unintended=not declared,
                base_ms=base_ms.get(name),
                cand_ms=cand_ms.get(name),
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
        if layer.path.value == "dense" and _is_sparse(cand_intent.get(layer.name))
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
