"""Note codes ``classify.*``: the evidence and what classification could not read: the values each carries
(``records.note_codes``)."""

from __future__ import annotations

from typing import Literal

from sparsedebug.records.note_codes.facts import Capture, Causes, NoteFacts, NotRecorded, NotRecordedSide


class ClassifyBytesGrowth(NoteFacts):
    """``classify.bytes_growth``."""

    CODES = ("classify.bytes_growth",)
    base_bytes: float
    bytes: float
    worst: str
    worst_base_bytes: float
    worst_bytes: float


class ClassifyCapture(NoteFacts):
    """``classify.capture``."""

    CODES = ("classify.capture",)
    what: Capture


class ClassifyConversionBytes(NoteFacts):
    """``classify.conversion_bytes``."""

    CODES = ("classify.conversion_bytes",)
    conversion_bytes: int
    forward_bytes: float
    layers: int


class ClassifyBare(NoteFacts):
    """classify.* notes that carry no values."""

    CODES = (
        "classify.copies_in_layers",
        "classify.intent_differs",
        "classify.ncu_not_applicable",
        "classify.no_conversion",
        "classify.no_ncu_report",
        "classify.no_quality_verdict",
    )


class ClassifyCopyTime(NoteFacts):
    """``classify.copy_time``."""

    CODES = ("classify.copy_time",)
    copy_ms: float
    total_ms: float


class ClassifyCosineDrop(NoteFacts):
    """``classify.cosine_drop``."""

    CODES = ("classify.cosine_drop",)
    base_cosine: float | None
    cosine: float | None


class ClassifyGatherBytes(NoteFacts):
    """``classify.gather_bytes``."""

    CODES = ("classify.gather_bytes",)
    dense_bytes: float
    gathered_bytes: float
    intended: str
    layers: int
    worst: str
    worst_ratio: float


class ClassifyLatencyBound(NoteFacts):
    """``classify.latency_bound``."""

    CODES = ("classify.latency_bound",)
    below_pct: float


class ClassifyLowIntensity(NoteFacts):
    """``classify.low_intensity``."""

    CODES = ("classify.low_intensity",)
    below: int
    device: str
    intensity_max: float
    intensity_min: float
    layers: int
    ridge: float
    roofline: str


class ClassifyMetadataBytes(NoteFacts):
    """``classify.metadata_bytes``."""

    CODES = ("classify.metadata_bytes",)
    layers: int
    metadata_bytes: int
    value_bytes: int
    worst: str
    worst_ratio: float


class ClassifyNcuKernel(NoteFacts):
    """``classify.ncu_kernel``."""

    CODES = ("classify.ncu_kernel",)
    duration_us: float | None
    kernel: str
    mem_pct: float | None
    sm_pct: float | None
    spill_requests: float | None


class ClassifyNcuMetricMissing(NoteFacts):
    """``classify.ncu_metric_missing``."""

    CODES = ("classify.ncu_metric_missing",)
    kernel: str
    report: str | None
    section: Literal["SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis"]


class ClassifyNcuNoSparseGemm(NoteFacts):
    """``classify.ncu_no_sparse_gemm``."""

    CODES = ("classify.ncu_no_sparse_gemm",)
    report: str | None


class ClassifyNoBaseline(NoteFacts):
    """``classify.no_baseline``."""

    CODES = ("classify.no_baseline",)
    compares: Literal["bytes_moved", "precision", "rel_err", "quality"]


class ClassifyNoGathers(NoteFacts):
    """``classify.no_gathers``."""

    CODES = ("classify.no_gathers",)
    imported: bool


class ClassifyNoRoofline(NoteFacts):
    """``classify.no_roofline``."""

    CODES = ("classify.no_roofline",)
    gpu_known: bool


class ClassifyNoSparseLayer(NoteFacts):
    """``classify.no_sparse_layer``."""

    CODES = ("classify.no_sparse_layer",)
    counts: str


class ClassifyNotFinite(NoteFacts):
    """``classify.not_finite``."""

    CODES = ("classify.not_finite",)
    value: str


class ClassifyNotRecorded(NoteFacts):
    """``classify.not_recorded``."""

    CODES = ("classify.not_recorded",)
    side: NotRecordedSide | None = None
    what: NotRecorded


class ClassifyPrecisionChanges(Causes):
    """``classify.precision_changes``."""

    CODES = ("classify.precision_changes",)
    cause_layer: str | None
    how: list[str]
    layers: list[str]


class ClassifyQualityVerdicts(NoteFacts):
    """``classify.quality_verdicts``."""

    CODES = ("classify.quality_verdicts",)
    checks: list[str]
    status: list[str]


class ClassifyRelErrBound(NoteFacts):
    """``classify.rel_err_bound``."""

    CODES = ("classify.rel_err_bound",)
    accumulation: str
    bound: float | None
    precision: str
    rel_err: float | None
    worst: str


class ClassifyRelErrGrowth(NoteFacts):
    """``classify.rel_err_growth``."""

    CODES = ("classify.rel_err_growth",)
    base_rel_err: float | None
    layers: int
    rel_err: float | None
    worst: str
