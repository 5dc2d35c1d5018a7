"""Note codes ``locate.finding.*``, ``locate.outcome.*``, ``locate.ranks.*``, ``locate.schedule.*`` and
``locate.verdict.*``: the values each carries (``records.note_codes``)."""

from __future__ import annotations

from typing import Literal

from sparsedebug.records.note_codes.facts import Causes, Comparison, NoteFacts, embedded


class LocateFindingAdded(NoteFacts):
    """Notes that carry ``op``."""

    CODES = ("locate.finding.added", "locate.finding.removed")
    op: str


class LocateFindingChanged(NoteFacts):
    """``locate.finding.changed``."""

    CODES = ("locate.finding.changed",)
    after: list[str]
    before: list[str]
    fields: list[str]


class LocateFindingDeclared(NoteFacts):
    """``locate.finding.declared``."""

    CODES = ("locate.finding.declared",)
    dtype_after: str | None
    dtype_before: str | None
    sparsity_after: str | None
    sparsity_before: str | None


class LocateFindingFallback(NoteFacts):
    """``locate.finding.fallback``."""

    CODES = ("locate.finding.fallback",)
    EMBEDS = (embedded("detail"),)
    intent: str
    reason: str | None


class LocateFindingFaster(Comparison):
    """``locate.finding.faster``."""

    CODES = ("locate.finding.faster",)
    sparse_path: bool


class LocateFindingIdle(Comparison):
    """``locate.finding.idle``."""

    CODES = ("locate.finding.idle",)
    grew: bool
    per_layer_ms: float
    persistent: bool


class LocateFindingLayout(NoteFacts):
    """``locate.finding.layout``."""

    CODES = ("locate.finding.layout",)
    change: str


class LocateFindingLayoutCopies(NoteFacts):
    """``locate.finding.layout_copies``."""

    CODES = ("locate.finding.layout_copies",)
    kernels: list[str]


class LocateFindingNewKernelClass(NoteFacts):
    """``locate.finding.new_kernel_class``."""

    CODES = ("locate.finding.new_kernel_class",)
    kernel_class: str
    kernels: list[str]


class LocateFindingPathChanged(Causes):
    """``locate.finding.path_changed``."""

    CODES = ("locate.finding.path_changed",)
    after: str
    backend_after: str | None
    backend_before: str | None
    before: str
    op: str


class LocateFindingPerCallConversion(NoteFacts):
    """``locate.finding.per_call_conversion``."""

    CODES = ("locate.finding.per_call_conversion",)
    base: int
    count: int
    each_ms: float | None


class LocateFindingPrecision(NoteFacts):
    """``locate.finding.precision``."""

    CODES = ("locate.finding.precision",)
    precision: str
    rel_err: float
    tolerance: float


class LocateFindingQuality(NoteFacts):
    """``locate.finding.quality``."""

    CODES = ("locate.finding.quality",)
    cosine: float
    guardrail: float


class LocateFindingSlower(Comparison):
    """``locate.finding.slower``."""

    CODES = ("locate.finding.slower",)
    explained: list[str]
    persistent: bool
    sparse_path: bool


class LocateFindingSparseAsDeclared(NoteFacts):
    """``locate.finding.sparse_as_declared``."""

    CODES = ("locate.finding.sparse_as_declared",)
    path: str


class LocateOutcomeBudget(NoteFacts):
    """``locate.outcome.budget``."""

    CODES = ("locate.outcome.budget",)
    budget: float
    over: bool
    p99: float


class LocateOutcomeCosine(NoteFacts):
    """``locate.outcome.cosine``."""

    CODES = ("locate.outcome.cosine",)
    cosine: float


class LocateOutcomeHostBound(NoteFacts):
    """``locate.outcome.host_bound`` (written by earlier releases): the share of the span the GPU waited on the host."""

    CODES = ("locate.outcome.host_bound",)
    share: float | None


class LocateOutcomeLatency(Comparison):
    """``locate.outcome.latency``."""

    CODES = ("locate.outcome.latency",)
    direction: Literal["slower", "faster", "same"]
    enough: bool
    reason: str | None = None


class LocateOutcomeNoSamples(NoteFacts):
    """``locate.outcome.no_samples``."""

    CODES = ("locate.outcome.no_samples",)
    runs: list[str]


class LocateOutcomeProfilerCost(NoteFacts):
    """``locate.outcome.profiler_cost``."""

    CODES = ("locate.outcome.profiler_cost",)
    share: float | None
    traced_base: float
    traced_cand: float
    untraced_base: float | None
    untraced_cand: float | None


class LocateOutcomeSpeedup(NoteFacts):
    """``locate.outcome.speedup``."""

    CODES = ("locate.outcome.speedup",)
    speedup: float


class LocateOutcomeTooFew(NoteFacts):
    """``locate.outcome.too_few``."""

    CODES = ("locate.outcome.too_few",)
    n_base: int
    n_cand: int
    needed: int | None


class LocateOutcomeUntraced(NoteFacts):
    """``locate.outcome.untraced``."""

    CODES = ("locate.outcome.untraced",)
    files: list[str]


class LocateRanksConfined(NoteFacts):
    """``locate.ranks.confined``."""

    CODES = ("locate.ranks.confined",)
    elsewhere: float
    path_changes: list[str]
    rank: int
    ratio: float | None
    slowest: list[str]


class LocateRanksStraggler(NoteFacts):
    """``locate.ranks.straggler``."""

    CODES = ("locate.ranks.straggler",)
    collective: str
    instances: int
    late_ms: float
    rank: int
    share: float
    side: str


class LocateRanksUniform(NoteFacts):
    """``locate.ranks.uniform``."""

    CODES = ("locate.ranks.uniform",)
    ranks: int
    ratio: float


class LocateRanksWaiting(NoteFacts):
    """``locate.ranks.waiting``."""

    CODES = ("locate.ranks.waiting",)
    rank: int
    ratio: float


class LocateScheduleHostWait(NoteFacts):
    """``locate.schedule.host_wait``."""

    CODES = ("locate.schedule.host_wait",)
    after: float | None
    before: float | None


class LocateScheduleIdleLayers(NoteFacts):
    """``locate.schedule.idle_layers``."""

    CODES = ("locate.schedule.idle_layers",)
    count: int
    layers: list[str]
    ms: float


class LocateScheduleOverhead(Comparison):
    """``locate.schedule.overhead``."""

    CODES = ("locate.schedule.overhead",)
    base_overhead: float | None
    cand_overhead: float | None


class LocateScheduleThreads(NoteFacts):
    """``locate.schedule.threads``."""

    CODES = ("locate.schedule.threads",)
    after: int
    before: int


class LocateScheduleTooFew(NoteFacts):
    """``locate.schedule.too_few``."""

    CODES = ("locate.schedule.too_few",)
    n_base: int
    n_cand: int


class LocateVerdictCarries(NoteFacts):
    """Notes that carry ``delta_ms``, ``share``."""

    CODES = ("locate.verdict.carries", "locate.verdict.overlap")
    delta_ms: float
    share: float


class LocateVerdictDivergence(NoteFacts):
    """``locate.verdict.divergence``."""

    CODES = ("locate.verdict.divergence",)
    stage: str


class LocateVerdictEarlierUndecided(NoteFacts):
    """Notes that carry ``stages``."""

    CODES = ("locate.verdict.earlier_undecided", "locate.verdict.explains", "locate.verdict.improved")
    stages: list[str]


class LocateVerdictOutcomeImproved(NoteFacts):
    """``locate.verdict.outcome_improved``."""

    CODES = ("locate.verdict.outcome_improved",)
    base_p50: float
    cand_p50: float
    enough: bool
    n_base: int
    n_cand: int
    speedup: float


class LocateVerdictUndecided(NoteFacts):
    """``locate.verdict.undecided``."""

    CODES = ("locate.verdict.undecided",)
    stages: list[str]
    unstable: bool
