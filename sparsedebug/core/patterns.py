"""The path predicates every step shares: declared sparse, fell back, path changed, precision changed.

Bisect, classify, ``fallbacks``, the gate, the memo and the deployment report all ask
the same four questions of a layer; they ask them here so that their answers agree.
Which layers of a pair changed precision, by their labels or by a move onto an fp32
path, is :func:`precision_changes`: the one list classify's ``precision.dtype_change``,
the attribution, the gate's ``precision_drift`` and ``fallbacks`` all read.
N:M patterns themselves are parsed by :func:`sparsedebug.kernels.masks.parse_pattern`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.core.dispatch import backend_changed, dispatch_causes, dispatch_changed, moved_to_fp32
from sparsedebug.core.dtypes import canonical_dtype, dtype_in_text
from sparsedebug.core.kernel_names import classify_kernel
from sparsedebug.core.stats import median
from sparsedebug.records.comparability import MODEL_MIN_SHARE
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import (
    DENSE,
    DispatchCause,
    FallbackReason,
    KernelClass,
    KernelLayer,
    KernelPath,
    LowerLayer,
    RunRecord,
)


def declared_sparse(intended: str | None) -> bool:
    """The layer was declared (or inferred) sparse: its intent (a canonical ``SparsityIntent``) is a pattern, not ``dense``."""
    return intended is not None and intended != DENSE


def is_fallback(intended: str | None, path: str | None, reason: str | None) -> bool:
    """:func:`fell_back` on plain values (path and reason as their record strings)."""
    return declared_sparse(intended) and path == KernelPath.DENSE.value and reason != FallbackReason.INTENDED_DENSE.value


def fell_back(intended: str | None, lower: LowerLayer) -> bool:
    """Declared sparse but runs dense for a reason other than being meant dense: a dense fallback."""
    return is_fallback(intended, lower.path.value, lower.reason.value if lower.reason is not None else None)


def fallback_cause_set(run: RunRecord, reason: FallbackReason | str | None) -> list[str]:
    """Every layer of ``run`` declared sparse that fell back to dense for ``reason``, in lowering order: the layers
    sharing one fallback cause (what a bounded fix for that cause covers). Empty for no reason."""
    if reason is None:
        return []
    intended = {g.name: g.intended for g in run.graph.layers}
    return [lo.name for lo in run.lower.layers
            if lo.reason is not None and lo.reason.value == str(reason) and fell_back(intended.get(lo.name), lo)]


def kernel_classes(lower: LowerLayer) -> list[str]:
    """The sorted kernel classes of a layer's kernels, read as the layer's own class was.

    Each name is classified with the layer's dtype (its dispatch's first input dtype, else a TensorRT layer's
    precision), so an ``nvjet`` or Inductor-template GEMM gets the class its dispatch gives it; a name that tells
    no class (``other``) counts as the layer's class: an unknown name is no evidence of another path.
    """
    dispatched = next((d for d in lower.dispatch.input_dtypes if d is not None), None) if lower.dispatch is not None else None
    dtype = canonical_dtype(dispatched) or (lower.engine.precision if lower.engine is not None else None)
    classes = {classify_kernel(name, dtype) for name in lower.kernels}
    if lower.kernel_class is not None and KernelClass.OTHER in classes:
        classes = (classes - {KernelClass.OTHER}) | {lower.kernel_class}
    return sorted(cls.value for cls in classes)


def path_changed(before: LowerLayer, after: LowerLayer) -> bool:
    """The layer's kernel path differs: dense/sparse, its dominant kernel class, the classes it runs, or its
    dispatch under the same op (a new SDPA backend; a GEMM input turned non-contiguous or changed dtype).

    A layer whose class is the same on both sides, with the same classes and backend, is never a path change:
    what its dispatcher saw differently (a layout, a dtype) then changed no kernel path (a dtype change is
    :func:`precision_changes`' to report).
    """
    if before.path != after.path:
        return True
    same_class = before.kernel_class is not None and before.kernel_class == after.kernel_class
    if before.kernel_class is not None and after.kernel_class is not None and not same_class:
        return True
    if before.kernels and after.kernels and kernel_classes(before) != kernel_classes(after):
        return True
    return backend_changed(before, after) if same_class else dispatch_changed(before, after)


# Layout and view ops the framework inserts around a layer (a non-contiguous input made contiguous, heads split).
LAYOUT_OPS = frozenset({
    "reshape", "view", "_unsafe_view", "_reshape_alias", "transpose", "permute", "t", "contiguous", "copy", "copy_",
    "clone", "expand", "as_strided", "flatten", "unflatten", "unsqueeze", "squeeze", "split", "chunk", "narrow", "select",
    "slice", "movedim", "swapaxes",
})


def layout_op(name: str) -> bool:
    """A layer named after a layout or view op (``reshape#0 [2048x4096]``, ``aten::transpose``, ``...contiguous``).

    Such a layer appearing or disappearing between two runs is part of a neighbouring layer's
    lowering (the framework re-laid out its inputs), not a change of the model graph.
    """
    op = name.split(" ", 1)[0].split("#", 1)[0].removeprefix("aten::").rsplit(".", 1)[-1]
    return op in LAYOUT_OPS


def path_text(lower: LowerLayer) -> str:
    """``sparse/sparse_gemm``: the path and, when known, the dominant kernel class."""
    return lower.path.value + (f"/{lower.kernel_class.value}" if lower.kernel_class is not None else "")


def precision_from(label: str | None, dtype: str | None) -> str | None:
    """The format a precision label names (``"fp16 in / fp32 acc"`` -> fp16), else the dtype's (canonical names)."""
    return dtype_in_text(label) or canonical_dtype(dtype) or dtype_in_text(dtype)


def layer_precision(kernel: KernelLayer | None, dtype: str | None) -> str | None:
    """The format a layer computes in: its kernel's precision label, else its graph dtype (canonical names)."""
    return precision_from(kernel.precision if kernel is not None else None, dtype)


def precision_changed(before: str | None, after: str | None) -> bool:
    """Two precision labels name different known formats (unknown on either side is no evidence)."""
    b, a = dtype_in_text(before), dtype_in_text(after)
    return b is not None and a is not None and b != a


def layer_precisions(run: RunRecord) -> dict[str, str]:
    """The format each layer computes in (:func:`layer_precision`), where it is known."""
    kernels = {layer.name: layer for layer in run.kernel.layers}
    dtypes: dict[str, str | None] = {layer.name: layer.dtype for layer in run.graph.layers}
    names = [*dtypes, *(name for name in kernels if name not in dtypes)]
    out: dict[str, str] = {}
    for name in names:
        precision = layer_precision(kernels.get(name), dtypes.get(name))
        if precision is not None:
            out[name] = precision
    return out


@dataclass(frozen=True)
class PrecisionChange:
    """One layer that computes in another precision than in the baseline."""

    layer: str
    # The format it computed in in the baseline (canonical name; None when unknown).
    before: str | None
    # The format it computes in now (fp32 for a move onto an fp32/SIMT path seen only in its kernels).
    after: str | None
    # ``fp16 -> fp32 (dense_tc_gemm -> fp32_gemm)``, ``attention -> fp32_gemm``, ``fp16 -> fp32 inputs``.
    how: str
    # Seen in the lowering only (kernel class or dispatched input dtypes), not in the precision labels.
    by_path: bool
    # What the dispatcher saw differently, when the trace shows it (``core.dispatch.dispatch_causes``).
    cause: tuple[DispatchCause, ...] = ()


def precision_changes(base: RunRecord, cand: RunRecord) -> list[PrecisionChange]:
    """Every layer of ``cand`` whose precision changed against ``base``, in the candidate's order.

    A layer changed when its precision labels name different formats (:func:`precision_changed`, either
    way), or when the baseline ran it on a tensor-core half-precision path (declared narrower than fp32)
    and it now runs an fp32/SIMT one, by kernel class or dispatched input dtype
    (``core.dispatch.moved_to_fp32``): a trace recorded without shapes or dtypes still shows the kernels.
    """
    b_prec, c_prec = layer_precisions(base), layer_precisions(cand)
    b_lower = {layer.name: layer for layer in base.lower.layers}
    c_lower = {layer.name: layer for layer in cand.lower.layers}
    declared = {g.name: canonical_dtype(g.dtype) for g in base.graph.layers}
    names = [*(layer.name for layer in cand.lower.layers), *(name for name in c_prec if name not in c_lower)]
    out: list[PrecisionChange] = []
    for name in dict.fromkeys(names):
        old, new = b_lower.get(name), c_lower.get(name)
        cause = tuple(dispatch_causes(old.dispatch, new.dispatch)) if old is not None and new is not None else ()
        if name in b_prec and name in c_prec and precision_changed(b_prec[name], c_prec[name]):
            how = f"{b_prec[name]} -> {c_prec[name]}"
            if old is not None and new is not None and old.kernel_class and new.kernel_class and old.kernel_class != new.kernel_class:
                how += f" ({old.kernel_class.value} -> {new.kernel_class.value})"
            out.append(PrecisionChange(name, b_prec[name], c_prec[name], how, by_path=False, cause=cause))
            continue
        if old is None or new is None or declared.get(name) in ("fp32", "fp64") or not moved_to_fp32(old, new):
            continue
        was = old.kernel_class.value if old.kernel_class is not None else "?"
        now = new.kernel_class.value if new.kernel_class is not None else "?"
        how = f"{was} -> {now}" if was != now else f"{declared.get(name)} -> fp32 inputs"
        out.append(PrecisionChange(name, b_prec.get(name) or declared.get(name), "fp32", how, by_path=True, cause=cause))
    return out


def kernel_named(run: RunRecord) -> bool:
    """A record whose 'layers' are kernel names (a trace without layer annotations or CPU ops)."""
    layers = run.lower.layers
    return bool(layers) and all(layer.kernels == [layer.name] for layer in layers)


def kernel_names(run: RunRecord) -> set[str]:
    """Every kernel name the run's lowering records."""
    return {kernel for layer in run.lower.layers for kernel in layer.kernels}


def unrelated_by_kernels(base: RunRecord, cand: RunRecord) -> Note | None:
    """Where layers are kernel names (a CUDA-graph replay: :func:`kernel_named`) the kernels stand in for the model's
    identity: one model's sparse build swaps some GEMM kernels and keeps the rest (13 of 14 on the shared H200 pair),
    another model shares few. The facts of a pair sharing under ``MODEL_MIN_SHARE`` of the smaller set, else None."""
    names_b, names_c = kernel_names(base), kernel_names(cand)
    common, smaller = len(names_b & names_c), min(len(names_b), len(names_c))
    if not smaller or common >= MODEL_MIN_SHARE * smaller:
        return None
    return note("locate.differ.kernels", common=common, smaller=smaller, base=base.name, cand=cand.name,
                base_kernels=len(names_b), cand_kernels=len(names_c))


def fallback_flop_share(run: RunRecord) -> float | None:
    """FLOPs of the layers that fell back over the FLOPs declared sparse (the one meaning of the name,
    in classify and in the report); the share of declared-sparse layers when no FLOPs are recorded;
    None when nothing is declared sparse."""
    lower = {layer.name: layer for layer in run.lower.layers}
    intended = [g for g in run.graph.layers if declared_sparse(g.intended)]
    if not intended:
        return None
    fell = [g for g in intended if g.name in lower and fell_back(g.intended, lower[g.name])]
    total = sum(g.flops for g in intended)
    if total > 0:
        return sum(g.flops for g in fell) / total
    return len(fell) / len(intended)


@dataclass(frozen=True)
class KernelTimeShares:
    """Where a run's summed per-layer kernel p50 goes: fallbacks and dense layers, over the layers timed.

    The one definition of "share of kernel time" (classify's ``compute.fallback_time`` rule, the
    report, the memo and the gate): each timed layer counts its median per-call kernel time once;
    layers without kernel samples are left out and counted in ``untimed``.
    """

    total_ms: float
    fallback_ms: float
    dense_ms: float
    timed: int
    untimed: int
    # The fallback layer with the largest kernel p50 (None without a timed fallback).
    worst_fallback: str | None

    @property
    def fallback_share(self) -> float | None:
        """Fallback layers' kernel time over all timed kernel time; None without timed kernel time."""
        return self.fallback_ms / self.total_ms if self.total_ms > 0 else None

    @property
    def dense_share(self) -> float | None:
        """Kernel time of the layers that run dense (fallbacks and intended dense) over all timed kernel time."""
        return self.dense_ms / self.total_ms if self.total_ms > 0 else None


def kernel_time_shares(run: RunRecord) -> KernelTimeShares | None:
    """Kernel-time shares of ``run`` (see :class:`KernelTimeShares`); None when no layer has kernel samples."""
    times = {layer.name: median(layer.samples_ms) for layer in run.kernel.layers if layer.samples_ms}
    if not times:
        return None
    lower = {layer.name: layer for layer in run.lower.layers}
    intent = {layer.name: layer.intended for layer in run.graph.layers}
    fell = [name for name in times if name in lower and fell_back(intent.get(name), lower[name])]
    dense = [name for name in times if name in lower and lower[name].path == KernelPath.DENSE]
    layers = {layer.name for layer in run.graph.layers} | {layer.name for layer in run.kernel.layers}
    return KernelTimeShares(
        total_ms=sum(times.values()),
        fallback_ms=sum(times[name] for name in fell),
        dense_ms=sum(times[name] for name in dense),
        timed=len(times),
        untimed=len(layers - set(times)),
        worst_fallback=max(fell, key=lambda name: times[name], default=None),
    )
