"""The classify rule table as Markdown (the documentation's table is this function's output: docs/hooks.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sparsedebug.records.classification import Mechanism
from sparsedebug.render.markdown.cells import md_cell
from sparsedebug.render.words.classify import RULE_FIX


class RuleFacts(Protocol):
    """What the table prints of a classify rule (``sparsedebug.classify.rule.Rule``)."""

    @property
    def id(self) -> str: ...
    @property
    def mechanism(self) -> Mechanism: ...
    @property
    def metric(self) -> str: ...
    @property
    def source(self) -> list[str]: ...
    @property
    def op(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def unit(self) -> str: ...
    @property
    def weight(self) -> float: ...
    @property
    def description(self) -> str: ...


def _rule_row(rule: RuleFacts) -> str:
    cells = [
        f"`{rule.id}`",
        rule.mechanism.value,
        f"`{rule.metric}`",
        f"{rule.op} {rule.threshold:g} {rule.unit}",
        f"{rule.weight:g}",
        rule.description,
        ", ".join(f"`{ref}`" for ref in rule.source),
        RULE_FIX[rule.id],
    ]
    return "| " + " | ".join(md_cell(cell) for cell in cells) + " |"


def rules_markdown(rules: Sequence[RuleFacts]) -> str:
    """``rules`` (``sparsedebug.classify.rules.RULES``) as a Markdown table, for the documentation: one row per rule,
    grouped by mechanism."""
    lines = [
        "| rule | mechanism | metric | fires when | weight | what it means | source | suggested test |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mechanism in Mechanism:
        lines.extend(_rule_row(rule) for rule in rules if rule.mechanism == mechanism)
    lines.append("")
    lines.append(
        "A rule that fires adds `weight x min(2, value / threshold)` (`threshold / value` for `<` rules) to its "
        "mechanism's score; the highest score wins. With `--baseline`, a rule computed from one run that fires on "
        "the baseline too does not score unless the candidate is at least 10% worse: it is not what changed. "
        "A metric whose artifact is missing is not scored: the classification names the artifact that would settle it."
    )
    return "\n".join(lines) + "\n"
