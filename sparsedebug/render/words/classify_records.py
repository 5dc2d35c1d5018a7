"""Words for classification records: an evidence line's detail (with its gate), and the suggested fix
(``records.classification.Fix``) from its action code, rule, layer and values; the rule's own suggested test
(``render.words.classify.RULE_FIX``) when no recipe names more."""

from __future__ import annotations

from sparsedebug.records.classification import Evidence
from sparsedebug.render.words.classify import RULE_FIX
from sparsedebug.render.words.notes import words


def evidence_words(line: Evidence) -> str:
    """What an evidence line's value rests on, and why it may not fire when a gate holds it back."""
    detail = words(line.detail)
    return detail if line.gate is None else f"{detail} ({words(line.gate)})"


def _where(names_layer: str | None, role: str | None) -> str:
    if names_layer is None:
        return ""
    return f" (largest error: {names_layer})" if role == "largest_error" else f" (changed: {names_layer})"


def fix_phrase(
    code: str | None,
    rule: str,
    *,
    value: str | int | None = None,
    layer: str | None = None,
    was: str | int | None = None,
    names_layer: str | None = None,
    layer_role: str | None = None,
) -> str:
    """A fix in words from its parts (the memo passes them as claim terms, the renderers from the record)."""
    where = _where(names_layer, layer_role)
    subject = layer if layer is not None else "the layer"
    if code == "convert_once":
        if rule.startswith("memory."):
            return "convert weights once at load so no conversion traffic is paid per call"
        return "convert weights once at load instead of on every call, and re-time"
    if code == "raise_reuse":
        return "raise tokens per call (or use a larger tile) so each weight byte feeds more FLOPs, then re-time"
    if code == "block_size":
        return f"raise block size V from {was} to {value} ({'all sparse layers' if layer is None else layer}) and re-time"
    if code == "set_precision":
        return f"run in {value}{where} and check the numeric error and quality recover"
    if code == "keep_precision":
        return f"keep the changed layers in {value}{where} and compare outputs against the baseline"
    if code == "set_threads":
        return f"set threads to {value} (the logical core count) and re-time"
    if code == "cuda_graph":
        return "capture the forward in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace"
    if code == "batch_calls":
        return "batch calls so per-call overhead is paid once per batch, then re-time"
    if code == "isolate_run":
        return "pin threads and isolate the run, then re-trace"
    if code == "exclude_layer":
        return f"exclude {subject} from sparsity and check latency does not move"
    if code == "pad_shape":
        return f"pad {subject} to an aligned shape so it takes the sparse path, and re-time"
    if code == "cast_layer":
        return f"cast {subject} to {value} so it takes the sparse path, and re-time"
    return RULE_FIX.get(rule, f"rule {rule}")
