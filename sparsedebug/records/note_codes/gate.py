"""Note codes ``gate.*``: the gate's checks: the values each carries (``records.note_codes``)."""

from __future__ import annotations

from typing import Literal

from sparsedebug.records.note_codes.facts import NoteFacts


class GateBudgetEverySample(NoteFacts):
    """``gate.budget_every_sample``."""

    CODES = ("gate.budget_every_sample",)
    baseline_lower_ms: float | None = None
    baseline_misses: bool
    budget_ms: float
    samples: int


class GateBudgetP99(NoteFacts):
    """``gate.budget_p99``."""

    CODES = ("gate.budget_p99",)
    baseline_lower_ms: float
    baseline_misses: bool
    budget_ms: float
    lower_ms: float
    p99_ms: float


class GateBudgetWithinNoise(NoteFacts):
    """``gate.budget_within_noise``."""

    CODES = ("gate.budget_within_noise",)
    budget_ms: float
    lower_ms: float | None
    p99_ms: float
    samples: int


class GateEqualLatency(NoteFacts):
    """``gate.equal_latency``."""

    CODES = ("gate.equal_latency",)
    narrowed: float
    required: bool
    wins: bool


class GateFallbackLayers(NoteFacts):
    """``gate.fallback_layers``."""

    CODES = ("gate.fallback_layers",)
    layers: list[str]
    reasons: list[str]
    time_share: float | None


class GateLayerError(NoteFacts):
    """``gate.layer_error``."""

    CODES = ("gate.layer_error",)
    layer: str
    limit: float
    precision: str
    rel_err: float


class GateBare(NoteFacts):
    """gate.* notes that carry no values."""

    CODES = ("gate.no_equal_latency", "gate.nothing_meant_sparse")


class GateNoEvidence(NoteFacts):
    """``gate.no_evidence``."""

    CODES = ("gate.no_evidence",)
    missing: Literal["quality", "lowering", "kernel_error"]


class GateNoLatencySamples(NoteFacts):
    """``gate.no_latency_samples``."""

    CODES = ("gate.no_latency_samples",)
    policy: str
    runs: list[str]


class GateNoTolerance(NoteFacts):
    """``gate.no_tolerance``."""

    CODES = ("gate.no_tolerance",)
    modes: list[str]


class GateOwnSpeedup(NoteFacts):
    """``gate.own_speedup``."""

    CODES = ("gate.own_speedup",)
    run: str
    speedup: float


class GateP99Exceeds(NoteFacts):
    """``gate.p99_exceeds``."""

    CODES = ("gate.p99_exceeds",)
    left_base: int
    left_cand: int
    limit_ms: float
    max_ratio: float
    over: int
    p: float
    ratio: float
    samples: int


class GateP99ExceedsSeparated(NoteFacts):
    """``gate.p99_exceeds_separated``."""

    CODES = ("gate.p99_exceeds_separated",)
    alpha: float
    left_base: int
    left_cand: int
    limit_ms: float
    max_ratio: float
    over: int
    ratio: float
    samples: int


class GateP99FewSamples(NoteFacts):
    """``gate.p99_few_samples``."""

    CODES = ("gate.p99_few_samples",)
    n: int


class GateP99TooFew(NoteFacts):
    """``gate.p99_too_few``."""

    CODES = ("gate.p99_too_few",)
    alpha: float
    base: int
    cand: int
    needed: int
    policy: str


class GateP99WithinNoise(NoteFacts):
    """``gate.p99_within_noise``."""

    CODES = ("gate.p99_within_noise",)
    alpha: float
    left_base: int
    left_cand: int
    limit_ms: float
    max_ratio: float
    needed: int | None
    over: int
    ratio: float
    samples: int


class GatePercentiles(NoteFacts):
    """``gate.percentiles``."""

    CODES = ("gate.percentiles",)
    base_p50: float
    base_p95: float
    base_p99: float
    cand_p50: float
    cand_p95: float
    cand_p99: float
    clock: str


class GatePrecisionChanged(NoteFacts):
    """``gate.precision_changed``."""

    CODES = ("gate.precision_changed",)
    allowed: bool
    changes: list[str]


class GateTimingsUnstable(NoteFacts):
    """``gate.timings_unstable``."""

    CODES = ("gate.timings_unstable",)
    policy: str
    problems: list[str]
    runs: list[str]
    session: bool


class GateWorstLayerError(NoteFacts):
    """``gate.worst_layer_error``."""

    CODES = ("gate.worst_layer_error",)
    layer: str
    rel_err: float
    share: float
