"""Note codes ``mechanisms.*``: each mechanism's evidence, gates and attributed parts: the values each carries
(``records.note_codes``)."""

from __future__ import annotations

from sparsedebug.records.note_codes.facts import Causes, NoteFacts, embedded


class MechanismsBare(NoteFacts):
    """mechanisms.* notes that carry no values."""

    CODES = (
        "mechanisms.busy_zero",
        "mechanisms.capture_baseline",
        "mechanisms.capture_cpu_freq",
        "mechanisms.capture_fingerprint",
        "mechanisms.capture_latency_samples",
        "mechanisms.capture_ncu",
        "mechanisms.capture_replay",
        "mechanisms.capture_replay_both",
        "mechanisms.capture_smi",
        "mechanisms.capture_trace",
        "mechanisms.gate_baseline_window_same",
        "mechanisms.gate_no_baseline_window",
        "mechanisms.imported_no_threads",
        "mechanisms.ncu_not_for_replay",
        "mechanisms.no_conversion",
        "mechanisms.no_cpu_clock",
        "mechanisms.no_idle_split",
        "mechanisms.no_idle_time",
        "mechanisms.no_kernel_samples",
        "mechanisms.no_latency",
        "mechanisms.no_latency_both",
        "mechanisms.no_latency_either",
        "mechanisms.no_launches",
        "mechanisms.no_neighbour_changed",
        "mechanisms.no_smi_log",
        "mechanisms.no_span_busy",
        "mechanisms.no_span_busy_either",
        "mechanisms.no_threads",
        "mechanisms.none_declared_sparse",
        "mechanisms.part_host_gap",
        "mechanisms.part_unexplained",
        "mechanisms.replay_no_idle_split",
        "mechanisms.smi_not_for_replay",
    )


class MechanismsCaptureRepeats(NoteFacts):
    """``mechanisms.capture_repeats``."""

    CODES = ("mechanisms.capture_repeats",)
    at_least: int
    ordered: bool


class MechanismsConversionCost(NoteFacts):
    """``mechanisms.conversion_cost``."""

    CODES = ("mechanisms.conversion_cost",)
    cost_ms: float
    count: int
    latency_ms: float


class MechanismsConversionUntimed(NoteFacts):
    """``mechanisms.conversion_untimed``."""

    CODES = ("mechanisms.conversion_untimed",)
    layers: list[str]


class MechanismsCoresUnknown(NoteFacts):
    """``mechanisms.cores_unknown``."""

    CODES = ("mechanisms.cores_unknown",)
    threads: int


class MechanismsFallbackFlops(NoteFacts):
    """``mechanisms.fallback_flops``."""

    CODES = ("mechanisms.fallback_flops",)
    layers: list[str]
    lost_flops: float
    reasons: list[str]
    total_flops: float


class MechanismsFallbackLayers(NoteFacts):
    """``mechanisms.fallback_layers``."""

    CODES = ("mechanisms.fallback_layers",)
    declared: int
    layers: list[str]
    lost: int
    reasons: list[str]


class MechanismsFallbackTime(NoteFacts):
    """``mechanisms.fallback_time``."""

    CODES = ("mechanisms.fallback_time",)
    fallback_ms: float
    layer: str | None
    layer_ms: float | None
    reason: str | None
    timed: int
    total_ms: float
    untimed: int


class MechanismsFewSamplesDrift(NoteFacts):
    """Notes that carry ``n``."""

    CODES = ("mechanisms.few_samples_drift", "mechanisms.few_samples_tail")
    n: int


class MechanismsGateBaselineShares(NoteFacts):
    """``mechanisms.gate_baseline_shares``."""

    CODES = ("mechanisms.gate_baseline_shares",)
    base_value: float


class MechanismsGateBusyFlat(NoteFacts):
    """``mechanisms.gate_busy_flat``."""

    CODES = ("mechanisms.gate_busy_flat",)
    first_ms: float
    last_ms: float


class MechanismsGateNoTrend(NoteFacts):
    """``mechanisms.gate_no_trend``."""

    CODES = ("mechanisms.gate_no_trend",)
    alpha: float


class MechanismsGateNotFinite(NoteFacts):
    """``mechanisms.gate_not_finite``."""

    CODES = ("mechanisms.gate_not_finite",)
    value: float


class MechanismsHostVsKernelWait(NoteFacts):
    """``mechanisms.host_vs_kernel_wait``."""

    CODES = ("mechanisms.host_vs_kernel_wait",)
    host_ms: float
    kernel_ms: float


class MechanismsLatencyDrift(NoteFacts):
    """``mechanisms.latency_drift``."""

    CODES = ("mechanisms.latency_drift",)
    first_ms: float
    last_ms: float
    n: int
    p: float
    rho: float


class MechanismsLatencyPercentiles(NoteFacts):
    """``mechanisms.latency_percentiles``."""

    CODES = ("mechanisms.latency_percentiles",)
    n: int
    p50_ms: float
    p95_ms: float
    p99_ms: float


class MechanismsNcuNoSm(NoteFacts):
    """``mechanisms.ncu_no_sm``."""

    CODES = ("mechanisms.ncu_no_sm",)
    file: str | None
    kernel: str


class MechanismsNeighbourGrowth(Causes):
    """``mechanisms.neighbour_growth``."""

    CODES = ("mechanisms.neighbour_growth",)
    backend_after: str | None
    backend_before: str | None
    count: int
    grown_ms: float
    layer: str
    layer_ms: float
    op: str
    path_after: str
    path_before: str
    total_ms: float


class MechanismsNeighboursChangedPrecision(NoteFacts):
    """``mechanisms.neighbours_changed_precision``."""

    CODES = ("mechanisms.neighbours_changed_precision",)
    changes: list[str]
    count: int
    layers: list[str]


class MechanismsNeighboursLatencyFlat(NoteFacts):
    """``mechanisms.neighbours_latency_flat``."""

    CODES = ("mechanisms.neighbours_latency_flat",)
    count: int


class MechanismsNoBaseline(NoteFacts):
    """``mechanisms.no_baseline``."""

    CODES = ("mechanisms.no_baseline",)
    judged: str


class MechanismsNoComputeBoundPairs(NoteFacts):
    """``mechanisms.no_compute_bound_pairs``."""

    CODES = ("mechanisms.no_compute_bound_pairs",)
    ridge: float


class MechanismsOverheadPerLaunch(NoteFacts):
    """``mechanisms.overhead_per_launch``."""

    CODES = ("mechanisms.overhead_per_launch",)
    launches: int
    overhead_ms: float
    per_launch_us: float


class MechanismsOverheadRegression(NoteFacts):
    """``mechanisms.overhead_regression``."""

    CODES = ("mechanisms.overhead_regression",)
    base_latency_ms: float
    base_overhead_ms: float
    cand_latency_ms: float
    cand_overhead_ms: float
    latency_change_ms: float
    overhead_change_ms: float
    slower: bool


class MechanismsPartBytes(NoteFacts):
    """``mechanisms.part_bytes``."""

    CODES = ("mechanisms.part_bytes",)
    base_bytes: float
    cand_bytes: float


class MechanismsPartClocksFell(NoteFacts):
    """Notes that carry ``rule``."""

    CODES = ("mechanisms.part_clocks_fell", "mechanisms.part_threads_queue")
    rule: str


class MechanismsPartConversion(NoteFacts):
    """``mechanisms.part_conversion``."""

    CODES = ("mechanisms.part_conversion",)
    base_per_call: int
    measured: bool
    per_call: int
    timed_ms: float


class MechanismsPartCopies(NoteFacts):
    """Notes that carry ``base_ms``, ``cand_ms``."""

    CODES = ("mechanisms.part_copies", "mechanisms.part_gaps_outside")
    base_ms: float
    cand_ms: float


class MechanismsPartFallback(NoteFacts):
    """``mechanisms.part_fallback``."""

    CODES = ("mechanisms.part_fallback",)
    intended: str | None
    reason: str | None


class MechanismsPartPathChanged(NoteFacts):
    """Notes that carry ``after``, ``before``, ``moved``."""

    CODES = ("mechanisms.part_path_changed", "mechanisms.part_sparse_path")
    after: str
    before: str
    moved: str


class MechanismsPartPrecision(NoteFacts):
    """``mechanisms.part_precision``."""

    CODES = ("mechanisms.part_precision",)
    how: str


class MechanismsPartPrecisionPath(NoteFacts):
    """``mechanisms.part_precision_path``."""

    CODES = ("mechanisms.part_precision_path",)
    after: str
    before: str
    how: str
    moved: str


class MechanismsSmiAllIdle(NoteFacts):
    """``mechanisms.smi_all_idle``."""

    CODES = ("mechanisms.smi_all_idle",)
    samples: int


class SmiAgainstBaseline(NoteFacts):
    """An nvidia-smi figure of the candidate's window against the baseline's (``classify.thermal``): the baseline's
    figure, or whether its window was recorded (its note carried as ``base_window``)."""

    base_value: float | None = None
    base_window_recorded: bool | None = None


class MechanismsSmiClock(SmiAgainstBaseline):
    """``mechanisms.smi_clock``."""

    CODES = ("mechanisms.smi_clock",)
    EMBEDS = (embedded("window"), embedded("base_window"))
    max_mhz: float
    max_source: str
    min_mhz: float


class MechanismsSmiNoClock(NoteFacts):
    """Notes that carry ``file``."""

    CODES = ("mechanisms.smi_no_clock", "mechanisms.smi_no_reasons")
    file: str


class MechanismsSmiNoSample(NoteFacts):
    """Notes that carry ."""

    CODES = ("mechanisms.smi_no_sample", "mechanisms.smi_unaligned")
    EMBEDS = (embedded("window"),)


class MechanismsSmiThrottled(SmiAgainstBaseline):
    """``mechanisms.smi_throttled``."""

    CODES = ("mechanisms.smi_throttled",)
    EMBEDS = (embedded("window"), embedded("base_window"))
    busy: int
    reasons: list[str]
    throttled: int


class MechanismsSpanVsBusy(NoteFacts):
    """``mechanisms.span_vs_busy``."""

    CODES = ("mechanisms.span_vs_busy",)
    base_busy_ms: float | None
    base_span_ms: float | None
    busy_ms: float
    iterations: int
    span_ms: float


class MechanismsSparseVsDense(NoteFacts):
    """``mechanisms.sparse_vs_dense``."""

    CODES = ("mechanisms.sparse_vs_dense",)
    count: int
    dense_ms: float
    layer: str
    layer_dense_ms: float
    layer_sparse_ms: float
    sparse_ms: float


class MechanismsThreadsOnCores(NoteFacts):
    """``mechanisms.threads_on_cores``."""

    CODES = ("mechanisms.threads_on_cores",)
    cores: int
    threads: int
