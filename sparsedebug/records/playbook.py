"""The debug playbook as data: the models ``playbooks/*.yaml`` validate into (``sources.playbook`` loads them).

The playbook is the five-step walk (freeze, locate, classify, reproduce, re-run),
its primary metric, the metrics to collect, the debug branches, the pitfalls, the
owners who sign, and the final decisions a memo may take. ``load_playbook`` turns
the YAML into the pydantic models below and refuses anything inconsistent
(unknown owner, missing decision, steps out of order) with ``FILE: field: message``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sparsedebug.records.base import Record
from sparsedebug.records.gate import CheckId
from sparsedebug.records.run import STAGES

PLAYBOOK_SCHEMA_VERSION = 1


DEFAULT_PLAYBOOK = "structured-sparsity.yaml"


# The five mechanism classes, in the order the playbook lists them.
MECHANISMS: tuple[str, ...] = ("compute", "memory", "scheduling", "precision", "thermal")


# The final decisions a review memo can take.
DECISIONS: tuple[str, ...] = ("ship", "bounded_rollout", "rollback", "escalate", "no_change")


# What a decision can require of the bundle before the memo may take it.
EvidenceKind = Literal["fallback_evidence", "quality_evidence", "speedup", "quality_holds"]


class MetricComponent(Record):
    """One measurable part of the primary metric and where it sits in a run record."""

    id: str
    label: str
    unit: str
    record_field: str
    better: Literal["higher", "lower"]


class PrimaryMetric(Record):
    name: str
    components: list[MetricComponent] = Field(min_length=1)


class ConceptStage(Record):
    stage: str
    label: str


class Concept(Record):
    title: str
    stages: list[ConceptStage]

    @model_validator(mode="after")
    def _stages_in_order(self) -> Concept:
        names = tuple(s.stage for s in self.stages)
        if names != STAGES:
            raise ValueError(f"stages must be {', '.join(STAGES)} in that order, got {', '.join(names)}")
        return self


class Step(Record):
    """One step of the walk with what it consumes and produces."""

    number: int
    id: str
    title: str
    command: str
    inputs: list[str]
    outputs: list[str]
    done_when: str


class Mechanism(Record):
    id: str
    summary: str


class MetricToCollect(Record):
    id: str
    label: str
    source: str
    record_field: str


class Branch(Record):
    """A debug branch: the question, the evidence that answers it, and its owner."""

    id: str
    title: str
    question: str
    evidence: str
    owner: str
    mechanisms: list[str] = Field(min_length=1)


class Pitfall(Record):
    id: str
    text: str
    guard: str


class Owner(Record):
    id: str
    title: str
    accountable_for: str
    checks: list[CheckId] = Field(
        default_factory=list, description="The default gate's checks this owner answers for when one fails (the memo names them per blocker)."
    )


class Decision(Record):
    id: str
    label: str
    when: str
    requires: list[EvidenceKind]


class MemoTemplate(Record):
    title: str
    sections: list[str]
    regression_risks: list[str] = Field(min_length=1)
    required_artifact: str
    required_owners: list[str] = Field(min_length=1)


class Playbook(Record):
    """The whole playbook, validated for internal consistency."""

    schema_version: int = PLAYBOOK_SCHEMA_VERSION
    kind: Literal["playbook"] = "playbook"
    id: str
    title: str
    area: str
    summary: str
    review_question: str
    primary_metric: PrimaryMetric
    concept: Concept
    steps: list[Step] = Field(min_length=1)
    mechanisms: list[Mechanism]
    metrics: list[MetricToCollect] = Field(min_length=1)
    branches: list[Branch] = Field(min_length=1)
    pitfalls: list[Pitfall] = Field(min_length=1)
    owners: list[Owner] = Field(min_length=1)
    decisions: list[Decision]
    memo: MemoTemplate
    takeaways: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Playbook:
        numbers = [s.number for s in self.steps]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError(f"steps must be numbered 1..{len(numbers)} in order, got {numbers}")
        for label, ids in (
            ("steps", [s.id for s in self.steps]),
            ("owners", [o.id for o in self.owners]),
            ("branches", [b.id for b in self.branches]),
            ("metrics", [m.id for m in self.metrics]),
            ("pitfalls", [p.id for p in self.pitfalls]),
            ("decisions", [d.id for d in self.decisions]),
        ):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"{label}: duplicate id {', '.join(dupes)}")
        mech = tuple(m.id for m in self.mechanisms)
        if mech != MECHANISMS:
            raise ValueError(f"mechanisms must be {', '.join(MECHANISMS)} in that order, got {', '.join(mech)}")
        decisions = tuple(d.id for d in self.decisions)
        if decisions != DECISIONS:
            raise ValueError(f"decisions must be {', '.join(DECISIONS)} in that order, got {', '.join(decisions)}")
        owner_ids = {o.id for o in self.owners}
        for branch in self.branches:
            if branch.owner not in owner_ids:
                raise ValueError(f"branch {branch.id}: owner {branch.owner!r} is not one of the owners")
            unknown = [m for m in branch.mechanisms if m not in MECHANISMS]
            if unknown:
                raise ValueError(f"branch {branch.id}: unknown mechanism {', '.join(unknown)}")
        claimed = [c for o in self.owners for c in o.checks]
        twice = sorted({c for c in claimed if claimed.count(c) > 1})
        if twice:
            raise ValueError(f"owners: check {', '.join(twice)} has more than one owner")
        for owner in self.memo.required_owners:
            if owner not in owner_ids:
                raise ValueError(f"memo.required_owners: {owner!r} is not one of the owners")
        ship = self.decision("ship")
        missing = {"fallback_evidence", "quality_evidence"} - set(ship.requires)
        if missing:
            raise ValueError(f"decision ship must require {', '.join(sorted(missing))}")
        return self

    def decision(self, decision_id: str) -> Decision:
        """The decision with this id (the validator guarantees all of ``DECISIONS`` exist)."""
        for decision in self.decisions:
            if decision.id == decision_id:
                return decision
        raise KeyError(decision_id)

    def check_owner(self, check_id: str) -> Owner | None:
        """The owner accountable for a failing gate check (``Owner.checks``), or None when no owner claims it."""
        return next((o for o in self.owners if check_id in o.checks), None)

    def owner(self, owner_id: str) -> Owner:
        """The owner with this id."""
        for owner in self.owners:
            if owner.id == owner_id:
                return owner
        raise KeyError(owner_id)

    def step(self, step_id: str) -> Step:
        """The step with this id."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)
