"""The decision a walk ends in (ship, bounded rollout, rollback, escalate, no change), computed once and stored.

``sparsedebug.signoff.decide`` computes it when the bundle is written; the memo, the
deployment report and the terminal summary only render it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.comparability import LaunchMode
from sparsedebug.records.gate import CheckId, CheckStatus, GateResult
from sparsedebug.records.stats import Judgement, SampleComparison

# The rule that took a decision: ship (passes), bounded rollout (a fix moved and holds, a measured win missing only
# evidence, no fix needed), rollback (slower or worse than the baseline allows), escalate (no mechanism won, a fix
# moved but checks fail, a fix did not move, a fix not applied).
DecisionCode = Literal[
    "passes", "fix_moved_holds", "win_missing_evidence", "no_mechanism", "worse_than_baseline", "no_fix_needed",
    "fix_moved_checks_fail", "fix_did_not_move", "fix_not_applied", "unchanged", "too_few_samples",
]


# Why ship is refused: evidence the playbook requires that is missing, or a gate check that does not pass.
RefusalCode = Literal["no_fallback_evidence", "no_quality_evidence", "speedup_not_passed", "quality_fails", "check_fails"]


class Refusal(Record):
    """One reason ship is refused, with the gate check it rests on (None for missing evidence)."""

    code: RefusalCode
    check: CheckId | None = None
    status: CheckStatus | None = None


class DecisionOutcome(Record):
    """The final decision, the run it was judged on, the rule that took it and the checks it rests on."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["decision"] = "decision"
    decision: str
    code: DecisionCode = Field(description="Which rule of ``signoff.decide`` took the decision.")
    judged_on: Literal["candidate", "fixed candidate"]
    failing: list[CheckId] = Field(default_factory=list, description="The judged run's gate checks that fail.")
    ship_refused: list[Refusal]
    gate: GateResult | None = Field(description="The default gate on the judged run against the baseline.")
    gates: dict[str, GateResult] = Field(
        default_factory=dict, description="The default gate on each run against the baseline, by role (candidate, fixed)."
    )
    owner: str | None = Field(None, description="Who owns the proposed change, by the winning mechanism.")
    across_launch: list[LaunchMode] = Field(
        default_factory=list, description="The baseline's and the candidate's launch modes when they differ (allowed with "
        "--allow-different launch): every speedup in the gate is then across launch modes, not like for like."
    )
    speed: SampleComparison | None = Field(
        None, description="The judged run's latency samples against the baseline's, by the one rule (core.judgement)."
    )
    judgement: Judgement | None = Field(None, description="What the rule made of ``speed``: win, loss, no change, inconclusive.")
    based_on: dict[str, str] = Field(
        default_factory=dict, description="sha256 of each bundle file the decision was taken on, by file name."
    )
    recomputed: list[str] = Field(
        default_factory=list, description="Files changed since the walk that made `sparsedebug memo` decide again."
    )
