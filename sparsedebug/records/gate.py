"""The CI gate's records: the policy of thresholds (an input file) and the verdict on a pair of runs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sparsedebug.records.base import SCHEMA_VERSION, Record
from sparsedebug.records.comparability import Comparability
from sparsedebug.records.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT

POLICY_SCHEMA_VERSION = 1


# ``inconclusive``: the evidence exists but cannot decide: too few samples for the test to reach alpha and no
# separation, a p99 of too few samples (core.stats.TAIL_MIN_SAMPLES) with no significant exceedance, or timings
# disturbed beyond the noise-aware harness' bound. What it does in CI is the check's ``on_inconclusive``.
CheckStatus = Literal["pass", "fail", "skipped", "inconclusive"]

# What an inconclusive speed or tail check does to the gate: fail it (exit 1), warn (exit 0, said), or pass.
OnInconclusive = Literal["fail", "warn", "pass"]


class Significance(Record):
    """How a speed shortfall is judged: a rank test at ``alpha`` and a minimum ratio ``factor``."""

    alpha: float = Field(
        DEFAULT_ALPHA, gt=0.0, lt=1.0,
        description="Significance level, in (0, 1), of the one-sided tests in the direction of harm (the candidate slower, its tail heavier).",
    )
    factor: float = Field(
        DEFAULT_MIN_EFFECT, ge=1.0, le=100.0, allow_inf_nan=False,
        description="asv-style factor (1 to 100): a shortfall must exceed this ratio to fail.",
    )


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


class GateCheck(Record):
    """One threshold's verdict, with the measured value and the threshold in words."""

    id: str
    name: str
    status: CheckStatus
    measured: str
    threshold: str
    detail: str
    on_inconclusive: OnInconclusive | None = Field(None, description="Inconclusive checks: what the policy makes of it in CI.")

    @property
    def status_label(self) -> str:
        """The result in words; an inconclusive check says what its policy made of it (fails the gate, warning, passes)."""
        if self.status == "inconclusive":
            policy = self.on_inconclusive or "pass"
            effect = {"fail": "fails the gate", "warn": "warning", "pass": "passes"}[policy]
            return f"INCONCLUSIVE ({effect}: on_inconclusive {policy})"
        return {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP"}[self.status]

    @property
    def fails_gate(self) -> bool:
        """A failure, or an inconclusive check whose policy says fail."""
        return self.status == "fail" or (self.status == "inconclusive" and self.on_inconclusive == "fail")


class GateResult(Record):
    """All checks on one baseline/candidate pair; ``passed`` when none failed and no inconclusive check's policy is ``fail``."""

    schema_version: int = SCHEMA_VERSION
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
