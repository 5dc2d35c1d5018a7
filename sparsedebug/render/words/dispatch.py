"""Words for what a trace shows about dispatch: each cause of a path change (``records.run.DispatchCause``), and
the change that undoes a cause on every layer that shares it."""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.records.note_codes.facts import CauseCode
from sparsedebug.records.notes import NoteValue
from sparsedebug.records.run import DispatchCause, SlowPathTrigger


def cause_words(cause: DispatchCause) -> str:
    """``query not contiguous (last-dim stride 2, was 1)``, ``key dtype fp16 -> fp32``, ``an attn_mask is now passed``."""
    if cause.code == "non_contiguous":
        return f"{cause.tensor} not contiguous (last-dim stride {cause.now or '?'}, was 1)"
    if cause.code == "dtype_change":
        return f"{cause.tensor} dtype {cause.was} -> {cause.now}"
    if cause.code == "attn_mask":
        return "an attn_mask is now passed"
    if cause.code == "dropout":
        return f"dropout_p {cause.now} (was 0)"
    return f"head dim {cause.was} -> {cause.now}"


def trigger_words(trigger: SlowPathTrigger) -> str:
    """One slow-path trigger as the trace shows it: ``key not contiguous (last-dim stride 128)``, ``fp16/fp32 inputs``."""
    value = trigger.value if trigger.value is not None else "?"
    return {
        "non_contiguous": f"{trigger.tensor or 'an input'} not contiguous (last-dim stride {value})",
        "fp32_inputs": f"{value} inputs",
        "mixed_dtypes": f"mixed input dtypes {value}",
        "attn_mask": "attn_mask passed",
        "dropout": f"dropout_p {value}",
        "head_dim": f"head dim {value}",
    }[trigger.code]


def causes_from_values(v: Mapping[str, NoteValue]) -> list[str]:
    """The causes a note carries (``records.run.cause_values``), each in words."""
    def strs(key: str) -> list[str]:
        value = v.get(key)
        return [str(x) for x in value] if isinstance(value, list) else []

    codes, tensors, was, now = strs("cause_codes"), strs("cause_tensors"), strs("cause_was"), strs("cause_now")
    out = []
    for i, code in enumerate(codes):
        cause = DispatchCause.model_validate({
            "code": code, "tensor": tensors[i] or None if i < len(tensors) else None,
            "was": was[i] or None if i < len(was) else None, "now": now[i] or None if i < len(now) else None,
        })
        out.append(cause_words(cause))
    return out


def listed(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def fix_for_group(code: CauseCode, layers: list[str], tensors: list[str], restore: str | None = None) -> str:
    """The change that undoes one cause on every layer that shares it, in words."""
    where = layers[0] if len(layers) == 1 else f"{listed(layers)} ({len(layers)} layers)"
    roles = listed(tensors) if tensors else "inputs"
    if code == "non_contiguous":
        return f"make the {roles} of {where} contiguous (call .contiguous() on their producers' outputs) and re-trace"
    if code == "dtype_change":
        return f"cast the {roles} of {where} back to {restore or 'their baseline dtype'} and re-trace"
    if code == "attn_mask":
        return f"drop the attn_mask of {where} (use is_causal=True for a causal mask) and re-trace"
    if code == "dropout":
        return f"set dropout_p=0 for {where} at inference and re-trace"
    return f"restore the head dimension of {where} (a multiple of 8, at most 256, keeps the fused kernels) and re-trace"
