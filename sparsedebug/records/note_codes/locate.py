"""Note codes ``locate.*`` of the comparison of two runs and of each stage's figures: the values each carries
(``records.note_codes``)."""

from __future__ import annotations

from typing import Literal

from sparsedebug.records.note_codes.facts import Comparison, ComparisonLists, NoteFacts


class LocateCompareBackend(NoteFacts):
    """Notes that carry ``base``, ``cand``."""

    CODES = ("locate.compare.backend", "locate.differ.launch", "locate.differ.phase")
    base: str
    cand: str


class LocateCompareDtypeChanged(NoteFacts):
    """Notes that carry ``count``, ``layers``, ``more``."""

    CODES = ("locate.compare.dtype_changed", "locate.graph.layout", "locate.lower.layout")
    count: int
    layers: list[str]
    more: bool


class LocateBare(NoteFacts):
    """locate.* notes that carry no values."""

    CODES = (
        "locate.compare.kernel_named",
        "locate.drift.session",
        "locate.graph.not_annotated",
        "locate.kernel.same",
        "locate.lower.same",
        "locate.metric.busy_ms",
        "locate.metric.latency_ms",
        "locate.outcome.dense_wins",
        "locate.outcome.empty",
        "locate.schedule.empty",
        "locate.verdict.no_regression",
        "locate.verdict.outcome_flat",
    )


class LayerMatch(NoteFacts):
    """How the layers of two runs matched by op and shape (``locate.comparable._model_facts``): ``matched`` of
    ``total``, and the first few of each side that did not (``more_*``: how many more)."""

    CODES = ("locate.compare.layers_changed", "locate.differ.model")
    base: str
    cand: str
    matched: int
    more_base: int
    more_cand: int
    only_base: list[str]
    only_cand: list[str]
    share: float
    total: int


class LocateCompareMerged(NoteFacts):
    """``locate.compare.merged``."""

    CODES = ("locate.compare.merged",)
    coarse: str
    count: int
    fine: str
    groups: int


class LocateCompareMergedLayer(NoteFacts):
    """``locate.compare.merged_layer``."""

    CODES = ("locate.compare.merged_layer",)
    count: int
    layers: list[str]
    more: int


class LocateCompareRenamed(NoteFacts):
    """Notes that carry ``count``."""

    CODES = (
        "locate.compare.renamed",
        "locate.finding.sparse_gemms",
        "locate.graph.intended",
        "locate.graph.same",
        "locate.lower.intended",
    )
    count: int


class LocateDifferDevice(NoteFacts):
    """``locate.differ.device``."""

    CODES = ("locate.differ.device",)
    after: list[str]
    base: str
    before: list[str]
    cand: str
    props: list[Literal["compute_capability", "multiprocessors", "memory_gib", "name"]]


class LocateDifferDtype(NoteFacts):
    """``locate.differ.dtype``."""

    CODES = ("locate.differ.dtype",)
    base: str
    cand: str
    count: int
    layers: list[str]
    more: bool
    share: float


class LocateDifferKernels(NoteFacts):
    """``locate.differ.kernels``."""

    CODES = ("locate.differ.kernels",)
    base: str
    base_kernels: int
    cand: str
    cand_kernels: int
    common: int
    smaller: int


class LocateDifferTokens(NoteFacts):
    """``locate.differ.tokens``."""

    CODES = ("locate.differ.tokens",)
    base: int
    cand: int
    ratio: float


class LocateDriftBands(NoteFacts):
    """``locate.drift.bands``."""

    CODES = ("locate.drift.bands",)
    forward: float | None
    high: float | None
    layers: int
    low: float | None


class LocateGraphDiffer(NoteFacts):
    """``locate.graph.differ``."""

    CODES = ("locate.graph.differ",)
    count: int
    kinds: list[str]
    layers: list[str]


class LocateGraphRevision(NoteFacts):
    """Notes that carry ``after``, ``before``."""

    CODES = ("locate.graph.revision", "locate.lower.backend")
    after: str
    before: str


class LocateKernelBusy(Comparison):
    """``locate.kernel.busy``."""

    CODES = ("locate.kernel.busy",)
    enough: bool


class LocateKernelDrifted(NoteFacts):
    """``locate.kernel.drifted``."""

    CODES = ("locate.kernel.drifted",)
    count: int
    high: float
    low: float


class LocateKernelFaster(ComparisonLists):
    """Notes that carry  (and ComparisonLists's)."""

    CODES = ("locate.kernel.faster", "locate.kernel.slower")


class LocateKernelOnly(NoteFacts):
    """``locate.kernel.only``."""

    CODES = ("locate.kernel.only",)
    base: int
    cand: int


class LocateKernelPrecision(NoteFacts):
    """Notes that carry ``layers``."""

    CODES = ("locate.kernel.precision", "locate.lower.path_changed")
    layers: list[str]


class LocateKernelTooFew(ComparisonLists):
    """``locate.kernel.too_few``."""

    CODES = ("locate.kernel.too_few",)
    n_base: list[float]
    n_cand: list[float]


class LocateLowerByClass(NoteFacts):
    """``locate.lower.by_class``."""

    CODES = ("locate.lower.by_class",)
    new: list[str]
    sparse_only: bool


class LocateLowerFallback(NoteFacts):
    """``locate.lower.fallback``."""

    CODES = ("locate.lower.fallback",)
    layers: list[str]
    reasons: list[str]


class LocateLowerKind(NoteFacts):
    """``locate.lower.kind``."""

    CODES = ("locate.lower.kind",)
    count: int
    kind: str
    layers: list[str]


class LocateMetricOverheadMs(NoteFacts):
    """``locate.metric.overhead_ms``."""

    CODES = ("locate.metric.overhead_ms",)
    base_p50: float
    cand_p50: float
