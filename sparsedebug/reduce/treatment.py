"""How the backend's rules treat a workload's layer shapes, so that shrinking cannot change it.

Halving widths can turn an aligned dimension into one the backend refuses: cuSPARSELt
wants both weight dimensions to be multiples of 16, so ``down_proj`` at ``[512, 1376]``
converts in fp16 while ``[64, 172]`` falls back with ``shape_not_aligned``. A reproducer
shrunk that far still reproduces a ``dtype_unsupported`` fallback (fp32 is refused
before any shape check), but once its dtype is fixed it falls back for another reason:
it no longer stands for the original.

:func:`treatment` asks the workload's backend profile, for every linear layer and every
precision a layer can be given (``fp32``, ``fp16``, ``bf16``), what it would decide about
that layer's shape: the layer's own pattern, or ``2:4`` for a dense layer (the pattern a
fix or a candidate would give it). Weights are assumed compliant: compliance is a
property of values, not of the shape. :func:`scale_keeping_treatment` shrinks widths and
refuses a result whose treatment differs from the workload it came from.
"""

from __future__ import annotations

from typing import get_args

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import parse_pattern
from sparsedebug.reduce.shrink import scale_widths
from sparsedebug.sources.workload.lowering import LayerQuery, get_profile
from sparsedebug.sources.workload.schema import Dtype, Workload

# Every precision a workload layer can be given.
PRECISIONS: tuple[str, ...] = get_args(Dtype)

# Pattern a dense layer is asked about: what it would get were it made sparse.
PROBE_PATTERN = "2:4"

# (layer name, precision) -> ``sparse`` or ``dense:<reason>``.
Treatment = dict[tuple[str, str], str]


def treatment(workload: Workload) -> Treatment:
    """The backend's decision for every linear layer's shape under every precision."""
    profile = get_profile(workload.backend)
    out: Treatment = {}
    for layer in workload.layers:
        if layer.op != "linear" or layer.shape is None:
            continue
        pattern = layer.pattern or parse_pattern(PROBE_PATTERN)
        for precision in PRECISIONS:
            query = LayerQuery(
                name=layer.name, op=layer.op, out=layer.shape[0], k=layer.shape[1], dtype=precision, pattern=pattern, compliant=True
            )
            decision = profile.decide(query)
            reason = decision.reason.value if decision.reason is not None else ""
            out[(layer.name, precision)] = decision.path.value + (f":{reason}" if reason else "")
    return out


def treatment_change(before: Workload, after: Workload) -> str | None:
    """The first layer and precision the backend treats differently in ``after`` (layers matched by name), or None."""
    old, new = treatment(before), treatment(after)
    for key, decision in new.items():
        if key in old and old[key] != decision:
            name, precision = key
            shape_before = before.layer(name).shape
            shape_after = after.layer(name).shape
            return (
                f"{name} {shape_after} in {precision} would be {decision} on {after.backend}, "
                f"where {shape_before} is {old[key]}"
            )
    return None


def scale_keeping_treatment(workload: Workload, factor: int) -> Workload:
    """``scale_widths(workload, factor)``, refused (``UserError``) when the backend would treat a shape differently."""
    scaled = scale_widths(workload, factor)
    change = treatment_change(workload, scaled)
    if change is not None:
        raise UserError(f"widths / {factor} change how the backend treats a shape: {change}")
    return scaled
