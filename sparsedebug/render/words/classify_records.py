"""Words for classification records: an evidence line's detail (with its gate), and the suggested fix
(``records.classification.Fix``) from its action code, rule, layer and values; the rule's own suggested test
(``render.words.classify.RULE_FIX``) when no recipe names more."""

from __future__ import annotations

from sparsedebug.records.classification import Evidence
from sparsedebug.render.words.classify import RULE_FIX
from sparsedebug.render.words.notes import say


def evidence_words(line: Evidence) -> str:
    """What an evidence line's value rests on, and why it may not fire when a gate holds it back."""
    detail = say(line.detail)
    return detail if line.gate is None else f"{detail} ({say(line.gate)})"


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
    """A fix of the memory and precision recipes in words from its parts, else the rule's own suggested test
    (``render.words.mechanisms_records`` words the other codes first and falls back to this)."""
    where = _where(names_layer, layer_role)
    if code == "raise_reuse":
        return "raise tokens per call (or use a larger tile) so each weight byte feeds more FLOPs, then re-time"
    if code == "block_size":
        return f"raise block size V from {was} to {value} ({'all sparse layers' if layer is None else layer}) and re-time"
    if code == "set_precision":
        return f"run in {value}{where} and check the numeric error and quality recover"
    if code == "keep_precision":
        return f"keep the changed layers in {value}{where} and compare outputs against the baseline"
    return RULE_FIX.get(rule, f"rule {rule}")
