"""The CI gate's records: the policy of thresholds (an input file) and the verdict on a pair of runs."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.comparability import Comparability
from sparsedebug.records.notes import Note
from sparsedebug.records.stats import Judgement, JudgementRule

POLICY_SCHEMA_VERSION = 1


# ``inconclusive``: the evidence exists but cannot decide: too few samples for the test to reach alpha and no
# separation, a p99 of too few samples (core.stats.TAIL_MIN_SAMPLES) with no significant exceedance, or timings
# disturbed beyond the noise-aware harness' bound. What it does in CI is the check's ``on_inconclusive``.
CheckStatus = Literal["pass", "fail", "skipped", "inconclusive"]

# What an inconclusive speed or tail check does to the gate: fail it (exit 1), warn (exit 0, said), or pass.
OnInconclusive = Literal["fail", "warn", "pass"]


class Significance(JudgementRule):
    """The policy's ``significance`` section: the one rule (``core.judgement``) every timed check judges by."""


class SpeedupPolicy(Record):
    """The speedup check."""

    min: float = Field(1.0, gt=0.0, le=1000.0, allow_inf_nan=False, description="Minimum candidate p50 speedup over the baseline (0 to 1000).")
    on_inconclusive: OnInconclusive = Field("fail", description="What an inconclusive speed check does: fail the gate, warn, or pass.")


class P99Policy(Record):
    """The tail-latency check."""

    max_ratio: float = Field(1.25, gt=0.0, le=1000.0, allow_inf_nan=False, description="Maximum candidate p99 / baseline p99 (0 to 1000).")
    use_budget: bool = Field(True, description="Also require candidate p99 <= its recorded latency budget.")
    on_inconclusive: OnInconclusive = Field("fail", description="What an inconclusive tail check does: fail the gate, warn, or pass.")


class QualityPolicy(Record):
    """The quality guardrails against the dense model."""

    min_cosine: float | None = Field(0.90, ge=-1.0, le=1.0, description="Minimum output cosine vs the dense model, in [-1, 1].")
    max_rel_err: float | None = Field(None, ge=0.0, allow_inf_nan=False, description="Maximum output relative error vs the dense model (>= 0).")
    max_accuracy_drop: float | None = Field(
        0.01, ge=0.0, le=1.0, description="Maximum task accuracy drop vs the dense model, in [0, 1]."
    )
    require_equal_latency_win: bool = Field(
        False, description="Fail when a dense model narrowed to the same latency has better quality."
    )


class FallbackPolicy(Record):
    """The dense-fallback check."""

    max_rate: float = Field(0.0, ge=0.0, le=1.0, description="Maximum share of meant-sparse layers running dense.")


class PrecisionPolicy(Record):
    """The precision-drift check."""

    max_rel_err: dict[str, Annotated[float, Field(gt=0.0, allow_inf_nan=False)]] = Field(
        default_factory=lambda: {"fp32": 1e-4, "fp16": 1e-2, "bf16": 5e-2},
        description="Per precision mode: maximum per-layer kernel error vs the fp64 reference.",
    )
    allow_precision_change: bool = Field(False, description="Allow a layer's precision to differ from the baseline's.")


class GatePolicy(Record):
    """Thresholds for ``sparsedebug gate``; every section may be omitted (its defaults apply) or null (check off)."""

    schema_version: int = POLICY_SCHEMA_VERSION
    kind: Literal["gate_policy"] = "gate_policy"
    significance: Significance = Field(default_factory=Significance)
    effective_speedup: SpeedupPolicy | None = Field(default_factory=SpeedupPolicy)
    p99_latency: P99Policy | None = Field(default_factory=P99Policy)
    quality_delta: QualityPolicy | None = Field(default_factory=QualityPolicy)
    fallback_rate: FallbackPolicy | None = Field(default_factory=FallbackPolicy)
    precision_drift: PrecisionPolicy | None = Field(default_factory=PrecisionPolicy)
    missing_evidence: Literal["skip", "fail"] = "skip"


# The five checks of the gate, in the order they run.
CheckId = Literal["effective_speedup", "p99_latency", "quality_delta", "fallback_rate", "precision_drift"]

# What a figure of a check measures (render.words.gate names each).
GateQuantity = Literal[
    "speedup_p50", "p99_ratio", "p99_ms", "cosine", "rel_err", "accuracy", "accuracy_drop", "fallback_rate",
    "worst_err_share", "precision_changes", "layers_within",
]


class GateFigure(Record):
    """One figure a check measured, with the limit it was held to (``direction``: which side passes)."""

    quantity: GateQuantity
    value: float | None = Field(description="The measured figure in ``unit``; None when it could not be measured.")
    unit: Literal["x", "ms", "share", "cosine", "ratio", "count"]
    limit: float | None = Field(None, description="The policy's limit for this figure; None: reported, not checked.")
    direction: Literal["at_least", "at_most"] | None = Field(None, description="Which side of the limit passes.")
    baseline: float | None = Field(None, description="The baseline's figure, where the check quotes it.")
    count: int | None = Field(None, description="How many figures were taken (samples, rounds, layers), where it matters.")
    of: int | None = Field(None, description="Out of how many (``count`` of ``of``).")


class GateTest(Record):
    """How a timing check decided: the test, its p and alpha, the samples it had, and what it needed."""

    kind: Literal["rank", "paired_rank", "exceedance", "too_few", "separation", "paired_separation", "threshold"] = Field(
        description="rank: two-sided Mann-Whitney U; paired_rank: signed-rank over paired rounds; exceedance: "
        "one-sided exceedance count over the baseline's largest; too_few: fewer samples a side than the rule's "
        "min_samples, no test run (core.judgement); separation, paired_separation, threshold: records written before "
        "the one rule (too few samples judged by separation or by the figure alone)."
    )
    p: float | None = None
    alpha: float | None = None
    factor: float | None = Field(None, description="The minimum ratio a shortfall must exceed (the asv factor).")
    n_base: int | None = None
    n_cand: int | None = None
    needed: int | None = Field(None, description="Samples (or rounds, or exceedances) a side the test needs to reach alpha.")
    ratio: float | None = Field(None, description="The tested median ratio (candidate / target or baseline).")
    significant: bool | None = None
    persistent: bool | None = Field(None, description="Also in each half of the samples and without outliers.")
    drift: float | None = Field(None, description="The machine's own drift allowed for (>= 1), when one was measured.")
    same_session: bool = Field(False, description="Both sides were timed in the same rounds of one interleaved session.")
    judgement: Judgement | None = Field(None, description="What the rule (core.judgement) made of the difference.")


class GateCheck(Record):
    """One threshold's verdict: the figures measured against their limits, the test that decided, and the facts behind it."""

    id: CheckId
    status: CheckStatus
    figures: list[GateFigure] = Field(default_factory=list)
    test: GateTest | None = None
    basis: list[Note] = Field(default_factory=list, description="Why: each problem, then each note (codes 'gate.*').")
    on_inconclusive: OnInconclusive | None = Field(None, description="Inconclusive checks: what the policy makes of it in CI.")

    @property
    def fails_gate(self) -> bool:
        """A failure, or an inconclusive check whose policy says fail."""
        return self.status == "fail" or (self.status == "inconclusive" and self.on_inconclusive == "fail")


class GateResult(Record):
    """All checks on one baseline/candidate pair; ``passed`` when none failed and no inconclusive check's policy is ``fail``."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["gate_result"] = "gate_result"
    baseline: str
    candidate: str
    passed: bool
    checks: list[GateCheck]
    inconclusive: bool = Field(False, description="A check could not decide (unstable timings, too few samples); its on_inconclusive decided what the gate made of it.")
    policy: GatePolicy
    comparability: Comparability | None = Field(None, description="The comparability check the pair passed (what was allowed to differ, notes).")
    separately_recorded: bool = Field(
        False, description="Both runs carry latency samples timed in separate sessions (not one interleaved replay): the machine's "
        "drift between the sessions cannot be told from the candidate's, so an inconclusive timing check cannot be settled here.")
    workloads: list[str] = Field(
        default_factory=list, description="The workload files the baseline and candidate replayed (in that order), when both name one: "
        "gating these replays both in one interleaved session.")
