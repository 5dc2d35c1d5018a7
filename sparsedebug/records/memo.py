"""The review memo as one typed record: the seed's template, each field a claim holding the figures it states.

``sparsedebug.signoff.memo.build_memo`` builds it once from a bundle's records (the step that owns each
figure computes it there); every output (memo.md, the terminal summary, ``memo --format json``, the CI step
summary) is a renderer of this record in ``sparsedebug.render.memo`` and computes nothing. A figure carries
its provenance (bundle file, field, layer) and its clock, so a printed number can be traced to its record and
``sparsedebug.render.memo.claims`` can check a rendered text against the model it was rendered from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.basis import Basis
from sparsedebug.records.gate import GateResult
from sparsedebug.records.report import Clock, Report

# Version of the memo model (and of the bundle layout that stores it as memo.json). Bump on incompatible change.
MEMO_SCHEMA_VERSION = 4

# How a figure's value reads: milliseconds, a speed ratio, a fraction (printed as a percentage), a count, a cosine, a
# plain ratio, a p-value, a perplexity, a relative error, energy in joules, power in watts.
Unit = Literal["ms", "x", "share", "count", "cosine", "ratio", "p", "perplexity", "error", "joules", "watts"]

# What a claim states; one phrasing function per kind in ``render.memo``.
ClaimKind = Literal[
    "decision", "reason", "speedup", "quality", "target_speedup", "sparse_kernels", "slice", "first_stage", "build_tags",
    "primary_mechanism", "competing_mechanism", "missing_evidence", "change", "expected_movement",
    "measured_movement", "risk", "artifact", "owners", "result",
]

# The rows of the memo's results table, in order: the seed's headline metric (speed, quality at the equal latency
# budget), its pitfalls (p95/p99, not p50 alone) and its expected movement (perf-per-watt).
ResultRowId = Literal["speedup", "latency", "quality", "fallback", "precision", "energy"]

# A first stage "explains" the downstream change only when the layers it names carry at least this share of it.
EXPLAINS_MIN_SHARE = 0.5

# A primary mechanism is established only when it carries at least this share of the measured change ...
HEADLINE_MIN_SHARE = 0.4

# ... and at least this many times the runner-up's share.
HEADLINE_MIN_MARGIN = 2.0


class FigureSource(Record):
    """Where a figure comes from: the bundle file, the field inside it, and the layer when it is one layer's."""

    record: str = Field(description="Bundle file name, e.g. candidate.run.json.")
    field: str = Field(description="Field path inside it, e.g. outcome.latency_samples_ms (median).")
    layer: str | None = None


class Figure(Record):
    """One number a claim states, with its unit, clock and provenance."""

    quantity: str = Field(description="What it measures, e.g. latency_p50_ms, speedup_p50, carried_ms, share.")
    role: str | None = Field(None, description="Whose figure it is: a run role (baseline, candidate, fixed), a mechanism, a check id.")
    value: float
    unit: Unit
    clock: Clock | None = None
    basis: Basis | None = Field(None, description="What the figure is taken over (per forward, per iteration, per call, ...); "
                                "None where it is not a time.")
    source: FigureSource

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        """One quantity: the same key must carry one value in a memo."""
        return (self.quantity, self.role, self.clock)


class Claim(Record):
    """One statement of the memo: its kind, the figures it states, and the codes and names it refers to."""

    kind: ClaimKind
    code: str | None = Field(None, description="The fact's code: a decision, a reason, a check id, a mechanism, a stage, a fix action.")
    figures: list[Figure] = Field(default_factory=list)
    terms: dict[str, str] = Field(default_factory=dict, description="Names and codes the claim refers to (stage, mechanism, model, knob).")
    items: list[str] = Field(default_factory=list, description="The layers, tensors, checks or files the claim lists.")
    more: int = Field(0, description="How many further items the claim stands for beyond those listed.")
    withheld: str | None = Field(None, description="The invariant (signoff.invariants.RULES) this claim broke when the "
                                 "document was built: its statement is withheld and the memo names the check instead.")

    def figure(self, quantity: str, role: str | None = None) -> Figure | None:
        """The claim's figure of ``quantity`` (and ``role`` when given)."""
        return next((f for f in self.figures if f.quantity == quantity and (role is None or f.role == role)), None)


class ClockLegend(Record):
    """A clock the memo's figures are on, and the device it names."""

    clock: Clock
    device: str


class Symptom(Record):
    """Template section 1: failing metric, slice, first failing stage, build tags."""

    failing_metric: list[Claim]
    slice: Claim
    first_stage: Claim
    build_tags: Claim


class Hypothesis(Record):
    """Template section 2: primary mechanism, competing hypotheses, missing evidence."""

    primary: Claim
    competing: list[Claim] = Field(default_factory=list)
    missing: list[Claim] = Field(default_factory=list)


class Action(Record):
    """Template section 3: smallest reversible change, expected movement, regression risk (and the measured re-run)."""

    change: Claim
    expected: Claim
    measured: Claim | None = None
    risks: list[Claim] = Field(default_factory=list)


class Signoff(Record):
    """Template section 4: required artifact, owners, decision."""

    artifact: Claim
    owners: Claim
    decision: Claim


class ResultColumn(Record):
    """One run of the results table: its role, its name and the clock of its timings."""

    role: str
    run: str
    clock: Clock
    device: str = Field(description="The device the run's latencies were timed on (this CPU, a GPU's name, a backend).")


class ResultRow(Record):
    """One row of the results table: a ``result`` claim per column, in the columns' order.

    A cell's terms hold ``status`` (pass/fail/inconclusive where the policy has a limit, else empty), ``state``
    (``measured``, ``reference`` for the baseline's own row, ``not_measured``) and, when not measured, ``capture``
    (what to capture); its figures are the numbers it prints.
    """

    row: ResultRowId
    check: str | None = Field(None, description="The default gate's check that holds this row to a limit, if any.")
    cells: list[Claim]


class Memo(Record):
    """The review memo of one bundle (or of one gate verdict): the decision, its reasons, and the template's sections."""

    schema_version: int = MEMO_SCHEMA_VERSION
    kind: Literal["memo"] = "memo"
    title: str = Field(description="The playbook's memo title.")
    bundle: str = Field(description="The bundle directory's name, or the gate's pair for a gate memo.")
    decision: Claim
    reasons: list[Claim] = Field(description="Why, most decisive first (the memo prints at most three).")
    clocks: list[ClockLegend] = Field(default_factory=list)
    symptom: Symptom | None = Field(None, description="None for a gate memo (no walk).")
    hypothesis: Hypothesis | None = None
    action: Action | None = None
    signoff: Signoff | None = None
    checks: list[Claim] = Field(default_factory=list, description="The default gate's checks on the judged run, one claim each.")
    gate: GateResult | None = Field(None, description="The gate verdict the checks state (every check's figures, test and "
                                    "basis): the terminal table, JUnit and the step summary all render it.")
    columns: list[ResultColumn] = Field(default_factory=list, description="The results table's runs: baseline, candidate, fixed.")
    results: list[ResultRow] = Field(default_factory=list, description="The results table under the decision (empty for a gate memo).")
    headline: list[Figure] = Field(default_factory=list, description="The figures every format prints, one line each "
                                   "(render.memo.phrases.headline words them): a figure added here is in every output.")
    report: Report | None = Field(None, description="Every section of the bundle's deployment report, as data (None for a gate's pair).")
    detail: dict[str, str] = Field(default_factory=dict, description="Section -> anchor in the bundle's report where its detail is.")

    def verdict(self) -> GateResult:
        """The gate verdict the document states (a ValueError for a document without one: an internal error)."""
        if self.gate is None:
            raise ValueError(f"review document {self.bundle!r} holds no gate verdict")
        return self.gate

    def claims(self) -> list[Claim]:
        """Every claim of the memo, in reading order."""
        out = [self.decision, *self.reasons]
        if self.symptom is not None:
            out += [*self.symptom.failing_metric, self.symptom.slice, self.symptom.first_stage, self.symptom.build_tags]
        if self.hypothesis is not None:
            out += [self.hypothesis.primary, *self.hypothesis.competing, *self.hypothesis.missing]
        if self.action is not None:
            out += [self.action.change, self.action.expected, *([self.action.measured] if self.action.measured else []), *self.action.risks]
        if self.signoff is not None:
            out += [self.signoff.artifact, self.signoff.owners, self.signoff.decision]
        return [*out, *self.checks, *(c for r in self.results for c in r.cells)]

    def figures(self) -> list[Figure]:
        """Every figure any claim states."""
        return [*(f for c in self.claims() for f in c.figures), *self.headline]
