"""What a classification rule is: a threshold on one metric, a weight, and the fix it suggests.

A rule reads one *metric*, a function ``Context -> Fact | Missing`` (see
``sparsedebug.classify.context``), compares it with a threshold and, when it fires,
adds to its mechanism's score::

    contribution = weight * min(2, value / threshold)      for op ">"
    contribution = weight * min(2, threshold / value)      for op "<"

so a rule that fires contributes between its weight and twice its weight, depending on
how far past the threshold the metric is. A metric that cannot be computed (the artifact
it needs was not given) is not scored as absent: the classification names the artifact
that would settle it instead.

Each mechanism module (``compute``, ``memory``, ``scheduling``, ``precision``, ``thermal``)
declares its rules with :meth:`RuleSet.rule` directly on the metric function the rule
reads, with its fix recipe (the words of each rule's suggested test live in
``sparsedebug.render.words.classify``, keyed by rule id): adding a rule is one decorated
function in one module and one row of words. ``sparsedebug.classify.rules`` gathers them into the table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import ConfigDict, Field

from sparsedebug.classify.context import Context, Facts, Result
from sparsedebug.records.base import Record
from sparsedebug.records.classification import Fix, Mechanism

# A rule contributes at most this many times its weight.
STRENGTH_CAP = 2.0

# A metric: computes one number (or names what is missing) from the classification context.
Measure = Callable[[Context], Result]

# Turns a winning rule's evidence (and the run's other facts) into the smallest reversible change (None: the measured
# numbers do not support the premise of any change the rule knows).
FixRecipe = Callable[["Rule", Facts], Fix | None]


def advise(rule: Rule, facts: Facts) -> Fix:
    """The default fix recipe: the rule's own suggested test (``rule_recipe``, worded by rule id in render/) as advice,
    expecting its metric to move back."""
    return Fix(kind="advice", rule=rule.id, metric=rule.metric, direction="down" if rule.op == ">" else "up", code="rule_recipe")


class Rule(Record):
    """One row of the rule table, with the metric it reads and the fix recipe it suggests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    mechanism: Mechanism
    metric: str
    source: list[str] = Field(description="The run fields or artifact fields the metric reads.")
    op: Literal[">", "<"]
    threshold: float
    unit: str
    weight: float
    description: str
    one_run: bool = Field(
        False,
        description="The metric reads one run alone (no baseline, no attached artifact): with a baseline it is "
        "computed on the baseline too, and a condition the baseline shares does not score.",
    )
    artifact: Literal["run", "ncu", "smi"] = Field("run", description="The input that proves the rule when it wins.")
    sample_shape: bool = Field(
        False, description="The metric is a shape of one run's latency samples (tail ratio, drift): a baseline without the "
        "condition is no measured difference between the runs, for no test compares the two shapes.",
    )
    measure: Measure | None = Field(None, description="The metric function (set by RuleSet.rule).")
    suggest: FixRecipe = Field(advise, description="The fix recipe used when this rule is the winner's strongest.")

    def fires(self, value: float) -> bool:
        """Whether ``value`` is past the threshold."""
        return value > self.threshold if self.op == ">" else value < self.threshold

    def contribution(self, value: float) -> float:
        """The score this rule adds for ``value``: 0 when it does not fire."""
        if not self.fires(value):
            return 0.0
        if self.op == ">":
            ratio = value / self.threshold if self.threshold > 0 else STRENGTH_CAP
        else:
            ratio = self.threshold / value if value > 0 else STRENGTH_CAP
        return self.weight * min(STRENGTH_CAP, max(1.0, ratio))


class RuleSet:
    """The rules of one mechanism, in the order its module declares them."""

    def __init__(self, mechanism: Mechanism) -> None:
        self.mechanism = mechanism
        self.rules: list[Rule] = []

    def rule(
        self,
        id: str,
        op: Literal[">", "<"],
        threshold: float,
        unit: str,
        weight: float,
        *,
        source: str | list[str],
        description: str,
        suggest: FixRecipe = advise,
        one_run: bool = False,
        artifact: Literal["run", "ncu", "smi"] = "run",
        sample_shape: bool = False,
    ) -> Callable[[Measure], Measure]:
        """Declare a rule on the decorated metric function; the metric is named after the function."""

        def register(measure: Measure) -> Measure:
            self.rules.append(
                Rule(
                    id=id,
                    mechanism=self.mechanism,
                    metric=measure.__name__,
                    source=[source] if isinstance(source, str) else list(source),
                    op=op,
                    threshold=threshold,
                    unit=unit,
                    weight=weight,
                    description=description,
                    one_run=one_run,
                    artifact=artifact,
                    sample_shape=sample_shape,
                    measure=measure,
                    suggest=suggest,
                )
            )
            return measure

        return register
