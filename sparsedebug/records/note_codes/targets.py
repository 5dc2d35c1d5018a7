"""Note codes ``targets.*``: projections on a target machine and the fixes applied to a workload: the values each
carries (``records.note_codes``)."""

from __future__ import annotations

from sparsedebug.records.note_codes.facts import AppliedFix, NoteFacts, Roofline, embedded


class TargetsBare(NoteFacts):
    """targets.* notes that carry no values."""

    CODES = (
        "targets.dense_host_bound",
        "targets.fix_no_vnm_layer",
        "targets.graph_no_host",
        "targets.importance_weight_magnitude",
        "targets.reconversion_every_call",
        "targets.sparse_host_floor",
    )


class TargetsDenseRoofline(Roofline):
    """``targets.dense_roofline``."""

    CODES = ("targets.dense_roofline",)
    points: int


class TargetsFixBlock(AppliedFix):
    """``targets.fix_block``."""

    CODES = ("targets.fix_block",)
    layers: list[str]
    new: list[str]
    old: list[str]


class TargetsFixBlockCheckpoint(NoteFacts):
    """``targets.fix_block_checkpoint``."""

    CODES = ("targets.fix_block_checkpoint",)
    model: str


class TargetsFixCast(AppliedFix):
    """``targets.fix_cast``."""

    CODES = ("targets.fix_cast",)
    layer: str
    new: str
    old: str


class TargetsFixExcluded(AppliedFix):
    """``targets.fix_excluded``."""

    CODES = ("targets.fix_excluded",)
    layer: str
    old: str


class TargetsFixIsAdvice(NoteFacts):
    """``targets.fix_is_advice``."""

    CODES = ("targets.fix_is_advice",)
    action: str | None
    rule: str


class TargetsFixKnob(AppliedFix):
    """``targets.fix_knob``."""

    CODES = ("targets.fix_knob",)
    knob: str
    layers: list[str] | None = None
    new: int | str
    old: int | str


class TargetsFixLayerMissing(NoteFacts):
    """``targets.fix_layer_missing``."""

    CODES = ("targets.fix_layer_missing",)
    layer: str
    workload: str


class TargetsFixPadCheckpoint(NoteFacts):
    """Notes that carry ``layer``."""

    CODES = ("targets.fix_pad_checkpoint", "targets.pad_not_sparse_linear", "targets.pad_width_from_input")
    layer: str


class TargetsFixPrecision(AppliedFix):
    """``targets.fix_precision``."""

    CODES = ("targets.fix_precision",)
    new: str
    old: str


class TargetsFixSet(AppliedFix):
    """``targets.fix_set``."""

    CODES = ("targets.fix_set",)
    action: str | None
    causes: list[str]
    covered: list[str]
    dims: list[str]
    layers: list[str]
    new: list[str]
    old: list[str]


class TargetsFixSetRefused(NoteFacts):
    """``targets.fix_set_refused``."""

    CODES = ("targets.fix_set_refused",)
    EMBEDS = (embedded("why"),)
    action: str | None
    causes: list[str]
    layer: str
    layers: list[str]


class TargetsFixUnknownKnob(NoteFacts):
    """``targets.fix_unknown_knob``."""

    CODES = ("targets.fix_unknown_knob",)
    knob: str | None
    value: int | str | None


class TargetsFp32Scaled(Roofline):
    """``targets.fp32_scaled``."""

    CODES = ("targets.fp32_scaled",)
    fp32_tflops: float
    reference: str
    tensor_tflops: float


class TargetsImportanceCalibration(NoteFacts):
    """``targets.importance_calibration``."""

    CODES = ("targets.importance_calibration",)
    text: str
    tokens: int


class TargetsKNotMultiple(NoteFacts):
    """``targets.k_not_multiple``."""

    CODES = ("targets.k_not_multiple",)
    k: int
    m: int


class TargetsLaunchFloorBound(NoteFacts):
    """``targets.launch_floor_bound``."""

    CODES = ("targets.launch_floor_bound",)
    bound_us: float
    reference: str


class TargetsLoweredDense(NoteFacts):
    """``targets.lowered_dense``."""

    CODES = ("targets.lowered_dense",)
    backend: str
    reason: str


class TargetsMAboveMax(NoteFacts):
    """``targets.m_above_max``."""

    CODES = ("targets.m_above_max",)
    m: int
    max_m: int


class TargetsMeasureLayer(NoteFacts):
    """``targets.measure_layer``."""

    CODES = ("targets.measure_layer",)
    decades: float | None
    k: int
    launch: str
    nearest_k: int | None
    nearest_out: int | None
    nearest_tokens: int | None
    out: int
    tokens: int


class TargetsNoDtypeRows(NoteFacts):
    """``targets.no_dtype_rows``."""

    CODES = ("targets.no_dtype_rows",)
    dtype: str
    measured: list[str]


class TargetsNoRate(NoteFacts):
    """``targets.no_rate``."""

    CODES = ("targets.no_rate",)
    family: str


class TargetsNoSparseRows(NoteFacts):
    """Notes that carry ``backend``, ``dtype``."""

    CODES = ("targets.no_sparse_rows", "targets.stored_format_unknown")
    backend: str
    dtype: str


class TargetsNotCompliant(NoteFacts):
    """Notes that carry ``pattern``."""

    CODES = ("targets.not_compliant", "targets.torch_2_4_only")
    pattern: str


class TargetsNumpyDtype(NoteFacts):
    """``targets.numpy_dtype``."""

    CODES = ("targets.numpy_dtype",)
    dtype: str


class TargetsOpHost(NoteFacts):
    """``targets.op_host``."""

    CODES = ("targets.op_host",)
    kind: str


class TargetsOpRate(NoteFacts):
    """``targets.op_rate``."""

    CODES = ("targets.op_rate",)
    amount: float
    family: str
    unit: str


class TargetsPadAlreadySparse(NoteFacts):
    """``targets.pad_already_sparse``."""

    CODES = ("targets.pad_already_sparse",)
    k: int
    layer: str
    out: int


class TargetsPadBreaksGraph(NoteFacts):
    """``targets.pad_breaks_graph``."""

    CODES = ("targets.pad_breaks_graph",)
    dim: str
    error: str
    layer: str
    new: int
    old: int


class TargetsPadConsumers(NoteFacts):
    """``targets.pad_consumers``."""

    CODES = ("targets.pad_consumers",)
    count: int
    layer: str


class TargetsPadNoneFound(NoteFacts):
    """``targets.pad_none_found``."""

    CODES = ("targets.pad_none_found",)
    k: int
    layer: str
    out: int
    search: int


class TargetsPadOutputFeeds(NoteFacts):
    """``targets.pad_output_feeds``."""

    CODES = ("targets.pad_output_feeds",)
    consumer: str
    layer: str
    op: str


class TargetsPadWidthShared(NoteFacts):
    """``targets.pad_width_shared``."""

    CODES = ("targets.pad_width_shared",)
    feeds: list[str]
    layer: str


class TargetsPadWidthThrough(NoteFacts):
    """``targets.pad_width_through``."""

    CODES = ("targets.pad_width_through",)
    layer: str
    op: str
    through: str


class TargetsPadded(AppliedFix):
    """``targets.padded``."""

    CODES = ("targets.padded",)
    consumer: str
    dim: str
    layer: str
    new: int
    old: int
    producers: list[str]


class TargetsProfileLinearOnly(NoteFacts):
    """``targets.profile_linear_only``."""

    CODES = ("targets.profile_linear_only",)
    op: str
    profile: str


class TargetsSlaP99(NoteFacts):
    """``targets.sla_p99``."""

    CODES = ("targets.sla_p99",)
    budget_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


class TargetsSparseDtypesMeasured(NoteFacts):
    """``targets.sparse_dtypes_measured``."""

    CODES = ("targets.sparse_dtypes_measured",)
    dtypes: list[str]


class TargetsSparseKernelModel(NoteFacts):
    """``targets.sparse_kernel_model``."""

    CODES = ("targets.sparse_kernel_model",)
    compute_us: float
    ctas: int
    fill: float
    gb_s: float
    k: int
    memory_bound: bool
    memory_us: float
    ns_per_k: float
    tile_m: int
    tile_n: int
    waves: float


class TargetsSparseMeasured(NoteFacts):
    """``targets.sparse_measured``."""

    CODES = ("targets.sparse_measured",)
    measured_us: float
    model_us: float


class TargetsSparseRaises(NoteFacts):
    """``targets.sparse_raises``."""

    CODES = ("targets.sparse_raises",)
    backend: str
    error: str


class TargetsTorchRaises(NoteFacts):
    """``targets.torch_raises``."""

    CODES = ("targets.torch_raises",)
    error: str | None
    source: str
    stage: str
