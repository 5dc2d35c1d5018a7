"""The classification rule table: every mechanism's rules, in the playbook's order.

A rule is declared in its mechanism's module (``compute``, ``memory``, ``scheduling``,
``precision``, ``thermal``) on the metric function it reads, with its threshold, weight
and fix recipe (see ``sparsedebug.classify.rule`` for what a rule is and how it scores).
This module only gathers them. docs/steps/classify.md shows the table
(``sparsedebug.render.markdown.rules.rules_markdown`` renders it);
tests/classify/test_rules.py has a test for every rule.
"""

from __future__ import annotations

from sparsedebug.classify.compute import COMPUTE
from sparsedebug.classify.memory import MEMORY
from sparsedebug.classify.precision import PRECISION
from sparsedebug.classify.rule import Measure, Rule, RuleSet
from sparsedebug.classify.scheduling import SCHEDULING
from sparsedebug.classify.thermal import THERMAL
from sparsedebug.records.classification import Mechanism

_SETS: dict[Mechanism, RuleSet] = {s.mechanism: s for s in (COMPUTE, MEMORY, SCHEDULING, PRECISION, THERMAL)}

# The rule table, grouped by mechanism in the playbook's order.
RULES: tuple[Rule, ...] = tuple(rule for mechanism in Mechanism for rule in _SETS[mechanism].rules)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def _metrics() -> dict[str, Measure]:
    metrics: dict[str, Measure] = {}
    for rule in RULES:
        if rule.measure is None or rule.metric in metrics:
            raise AssertionError(f"rule {rule.id}: metric {rule.metric!r} has no function or is read by two rules")
        metrics[rule.metric] = rule.measure
    return metrics


# Metric name (as the rule table names it) -> the function that computes it.
METRICS: dict[str, Measure] = _metrics()

# Metrics computed from one run alone: with a baseline, each is computed on the baseline too.
STATE_METRICS: frozenset[str] = frozenset(rule.metric for rule in RULES if rule.one_run)


def rules_for(mechanism: Mechanism) -> list[Rule]:
    """The rules that score ``mechanism``, in table order."""
    return [rule for rule in RULES if rule.mechanism == mechanism]
