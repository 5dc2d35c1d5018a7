"""The decision a walk ends in (ship, bounded rollout, rollback, escalate, no change), computed once and stored.

``sparsedebug.signoff.decide`` computes it when the bundle is written; the memo, the
deployment report and the terminal summary only render it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import SCHEMA_VERSION, Record
from sparsedebug.records.comparability import LaunchMode
from sparsedebug.records.gate import GateResult

# The rule that took a decision: ship (passes), bounded rollout (a fix moved and holds, a measured win missing only
# evidence, no fix needed), rollback (slower or worse than the baseline allows), escalate (no mechanism won, a fix
# moved but checks fail, a fix did not move, a fix not applied).
DecisionCode = Literal[
    "passes", "fix_moved_holds", "win_missing_evidence", "no_mechanism", "worse_than_baseline", "no_fix_needed",
    "fix_moved_checks_fail", "fix_did_not_move", "fix_not_applied", "unchanged",
]


class DecisionOutcome(Record):
    """The final decision, the run it was judged on, and why."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["decision"] = "decision"
    decision: str
    code: DecisionCode | None = Field(None, description="Which rule of ``signoff.decide`` took the decision (None: written before codes).")
    judged_on: str
    reasons: list[str]
    ship_refused: list[str]
    gate: GateResult | None = Field(description="The default gate on the judged run against the baseline.")
    gates: dict[str, GateResult] = Field(
        default_factory=dict, description="The default gate on each run against the baseline, by role (candidate, fixed)."
    )
    owner: str | None = Field(None, description="Who owns the proposed change, by the winning mechanism.")
    across_launch: list[LaunchMode] = Field(
        default_factory=list, description="The baseline's and the candidate's launch modes when they differ (allowed with "
        "--allow-different launch): every speedup in the gate is then across launch modes, not like for like."
    )
    based_on: dict[str, str] = Field(
        default_factory=dict, description="sha256 of each bundle file the decision was taken on, by file name."
    )
    recomputed: list[str] = Field(
        default_factory=list, description="Files changed since the walk that made `sparsedebug memo` decide again."
    )
