"""The answer to "were the sparse kernels used?" for TensorRT engines, in one line, from the runs' engine facts."""

from __future__ import annotations

from sparsedebug.records.engine import SparseUse
from sparsedebug.records.run import RunRecord

_NAMED = 4
"""Layers named in a line before the rest are counted."""


def _names(names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def use_text(use: SparseUse) -> str:
    """One run's answer: 'yes, on 3 of 8 layers with 2:4 weights', 'no: built with sparsity disabled (rebuild with ...)'."""
    if use.build_disabled:
        return f"no: `{use.run}` was built with sparsity disabled; rebuild with {' or '.join(use.enable_flags) or 'sparsity enabled'}"
    if not use.sparse_weights and not use.sparse:
        return f"no: none of `{use.run}`'s {use.weighted} layers with weights carries 2:4 weights (HasSparseWeights 0)"
    text = f"{'yes' if use.sparse else 'no'}: `{use.run}` ran a sparse tactic on {len(use.sparse)} of {len(use.sparse_weights)} layers with 2:4 weights"
    if use.not_picked:
        text += f"; eligible but not picked (a dense tactic won): {_names(use.not_picked)}"
    return text


def _change(base: RunRecord, cand: RunRecord, layers: list[str]) -> str | None:
    """The measured per-layer time change (profile medians) of the layers that matter, largest first."""
    b = {k.name: k.samples_ms[0] for k in base.kernel.layers if k.samples_ms}
    c = {k.name: k.samples_ms[0] for k in cand.kernel.layers if k.samples_ms}
    rows = [(name, b[name], c[name]) for name in layers if name in b and name in c]
    if not rows:
        return None
    rows.sort(key=lambda row: abs(row[2] - row[1]), reverse=True)
    parts = [f"`{name}` {before:.4g} -> {after:.4g} ms ({(after / before - 1) * 100:+.0f}%)" for name, before, after in rows[:_NAMED]]
    more = f" and {len(rows) - _NAMED} more" if len(rows) > _NAMED else ""
    return "per-layer time (profile median): " + "; ".join(parts) + more


def sparse_kernels_line(base: RunRecord, cand: RunRecord, b_use: SparseUse | None, c_use: SparseUse | None) -> str | None:
    """'- **Sparse kernels used**: ...' for a pair of TensorRT engines (``b_use``, ``c_use``: their sparse-kernel facts,
    ``locate.lower.sparse_use``; None when neither run has engine facts)."""
    if c_use is None and b_use is None:
        return None
    use = c_use if c_use is not None else b_use
    assert use is not None
    line = f"- **Sparse kernels used**: {use_text(use)}"
    if c_use is not None and b_use is not None:
        changed = [name for name in dict.fromkeys(c_use.sparse + c_use.not_picked + b_use.sparse)]
        change = _change(base, cand, changed)
        if change is not None:
            line += f"; {change}"
    return line + "."
