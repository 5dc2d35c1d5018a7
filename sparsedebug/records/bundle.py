"""The bundle manifest and the records of steps 4 and 5 that live only in a bundle (fix outcome, movements)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.classification import Fix
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.gate import GateTest
from sparsedebug.records.notes import Note
from sparsedebug.records.stats import Direction, Judgement

InputRole = Literal["baseline", "candidate", "fixed"]


# An input kind, a code of ``sources.registry``: run, workload, trace, trt_engine.
InputKind = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]


class BundleInput(Record):
    """One input of the walk: its role, what kind of file it was, and its digest."""

    role: InputRole
    kind: InputKind
    file: FileDigest | None = Field(None, description="None for the embedded default workloads' copies.")
    label: str = Field(description="How the memo cites it: the path given, or 'embedded:<name>'.")


class StepRecord(Record):
    """What one playbook step did in this walk."""

    step: str
    status: Literal["done", "skipped"]
    # What the step did: its figures and names (``playbook.*`` notes; render.words.signoff words them).
    detail: list[Note] = Field(default_factory=list)
    seconds: float


class Movement(Record):
    """A metric before and after the fix, measured; and what was expected."""

    metric: str
    unit: str
    before: float
    after: float
    expected_after: float | None = None
    # What the projection stands on (its figures), or why there is none.
    expected_basis: Note | None = None
    better: Literal["lower", "higher"]
    direction: Direction | None = Field(
        None, description="Which way the fixed run moved this metric from the candidate's, as the rank test on the latency samples "
        "(or the factor alone with few samples) decided: faster, slower or same (latency p50 only).")
    expected_direction: Direction | None = Field(
        None, description="Which way the projection moves it: expected_after against before, beyond the same factor (latency p50 only).")

    @property
    def change(self) -> float:
        """after / before."""
        return self.after / self.before if self.before else float("nan")

    @property
    def relative_change(self) -> float | None:
        """after / before - 1 (None when before is zero)."""
        return self.after / self.before - 1 if self.before else None

    @property
    def expected_relative_change(self) -> float | None:
        """expected_after / before - 1 (None without a projection or when before is zero)."""
        return self.expected_after / self.before - 1 if self.expected_after is not None and self.before else None

    @property
    def against_projection(self) -> Literal["as_projected", "opposite", "more", "less"] | None:
        """How the measured change compares with the projected one: within 5 points of it, the other way, more or
        less; None without a projection."""
        got, expected = self.relative_change, self.expected_relative_change
        if got is None or expected is None:
            return None
        if abs(got - expected) <= 0.05:
            return "as_projected"
        if got * expected < 0:
            return "opposite"
        return "more" if abs(got) > abs(expected) else "less"

    @property
    def as_expected(self) -> bool | None:
        """Whether the measured direction is the projected one; None when either is unknown."""
        if self.direction is None or self.expected_direction is None:
            return None
        return self.direction == self.expected_direction


class CandidatePairing(Record):
    """Which candidate the fixed run's latency verdict compares it with, and the machine drift that chose it.

    The fixed workload is replayed beside its dense reference; when the candidate's and the fixed run's dense
    references are the same computation and the judgement rule finds no change between them (``judgement``
    ``no_change``: not a significant, persistent shift beyond the rule's factor), the machine did not drift
    between locate's session and the fixed run, and the verdict compares the fixed run with the candidate
    locate measured (``locate``, unpaired). Otherwise (drifted, too few samples to tell, or no shared
    reference) the candidate is replayed again beside the fixed run in one interleaved session and the
    verdict compares the two round by round (``fresh``).
    """

    candidate: Literal["locate", "fresh"] = Field(description="locate: the candidate locate measured; fresh: replayed again beside the fixed run.")
    drift: float | None = Field(
        description="Median of the fixed run's dense reference over the candidate's (None: not the same computation, or the candidate "
        "judged on latencies other than its replay's)."
    )
    judgement: Judgement | None = Field(description="The rule's judgement of the dense reference from the candidate's session to the fixed run's (None: no shared reference).")
    alpha: float = Field(description="The rule's significance level.")
    factor: float = Field(description="The rule's factor: a shift within it is no change.")


class FixOutcome(Record):
    """Step 4 closing the loop: the proposed fix, whether and how it was applied, and what it moved."""

    proposed: Fix | None = Field(description="The classification's fix, as recorded there.")
    applied: bool
    how: Note = Field(description="What was changed, or why nothing could be applied, as a coded fact.")
    fixed_source: Literal["applied_to_workload", "given", "none"]
    movements: list[Movement] = Field(default_factory=list)
    significance: GateTest | None = Field(None, description="The test of candidate vs fixed latency samples (paired_rank: against the candidate replayed again in the fixed run's interleaved session).")
    pairing: CandidatePairing | None = Field(
        None, description="Which candidate the latency verdict compares the fixed run with and why (None: the fixed run was loaded, not "
        "replayed beside a replayed candidate).",
    )
    moved: bool | None = Field(None, description="Whether the fix's target metric moved the right way (latency: significantly).")
    target: str | None = Field(None, description="The movement that decided `moved` (latency p50, fallback rate, ...).")
    next_fix: Fix | None = Field(
        None, description="The next bounded change: the fix the fixed run calls for, classified again against the baseline "
        "(None without a re-run, or when it would repeat the applied fix or no mechanism wins).",
    )
    next_basis: Note | None = Field(None, description="How the next change was found: the mechanism and score (or share) of that classification.")


class Bundle(Record):
    """The manifest of a bundle directory."""

    # 2: the fix outcome's movements and the steps' details hold facts (notes), not sentences.
    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["bundle"] = "bundle"
    created_at: str
    playbook: str
    inputs: list[BundleInput]
    steps: list[StepRecord] = Field(default_factory=list)
    files: dict[str, str] = Field(default_factory=dict, description="Role -> file name, only files present.")
    repeats: int | None = None
