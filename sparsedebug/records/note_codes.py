"""Every note code, declared once with the typed values its note carries.

A note (``records.notes.Note``) is a code and a dict of values. This module says, for every code, which values
its note carries and of what type: a ``Facts`` model per set of values, whose ``CODES`` names the codes that
carry exactly those values (a code is declared by one model only). Where several codes share a group of values
(a sample comparison, dispatch causes, a version range ...), the group is a base model of its own.

What the declarations are used for:

* ``records.notes.note`` checks every note it builds against its code's model (``check_values``): an undeclared
  code, an unknown or missing value, or a value of the wrong type is a bug in sparsedebug (``InternalError``).
  Notes read back from a file are not checked (an older bundle may carry values since renamed).
* The ``Note`` JSON Schema (``sparsedebug schema ...``) lists each code's values schema (``values_schemas``).
* Each phrase in ``render.words`` reads only the values its code declares (tests/records/test_note_codes.py).

A value is a number, a flag, a name, code or path (``str``, or a ``Literal`` where the values are a closed set),
a list of names or of numbers, or None where the figure is not recorded: never a sentence. ``| None = None``
marks a value that some notes of the code leave out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from sparsedebug.core.errors import InternalError


@dataclass(frozen=True)
class Embed:
    """Another note carried flat inside a note's values: its code under ``code_key``, each of its values under
    ``prefix`` + the value's name (``records.notes.embed`` writes ``<name>_code`` and ``<name>.<value>``)."""

    code_key: str
    prefix: str


def embedded(name: str) -> Embed:
    """The layout ``records.notes.embed(name, inner)`` writes."""
    return Embed(code_key=f"{name}_code", prefix=f"{name}.")


class NoteFacts(BaseModel):
    """The values of the notes of the codes in ``CODES``: one field per value, by name, with its type.

    Strict: an int is not taken for a bool nor a str for a number, and a value no field names is refused.
    """

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    # The note codes whose values these are (empty for a base model that only groups values).
    CODES: ClassVar[tuple[str, ...]] = ()
    # Other notes these notes carry flat in their values.
    EMBEDS: ClassVar[tuple[Embed, ...]] = ()


def _models(base: type[NoteFacts]) -> list[type[NoteFacts]]:
    """``base`` and every model derived from it, depth first."""
    return [base, *(model for sub in base.__subclasses__() for model in _models(sub))]


@cache
def declared() -> dict[str, type[NoteFacts]]:
    """Every declared note code and its model; a code declared by two models is a bug."""
    table: dict[str, type[NoteFacts]] = {}
    for model in _models(NoteFacts):
        for code in model.__dict__.get("CODES", ()):
            if code in table:
                raise InternalError(f"note code {code!r} is declared twice ({table[code].__name__} and {model.__name__})")
            table[code] = model
    return table


def check_values(code: str, values: Mapping[str, object]) -> None:
    """Raise ``InternalError`` unless ``values`` are what ``code`` declares: every key declared, every required
    key given, every value of its declared type (notes carried flat inside, ``EMBEDS``, checked against their own code)."""
    model = declared().get(code)
    if model is None:
        raise InternalError(f"note code {code!r} is not declared in sparsedebug.records.note_codes")
    own = dict(values)
    for embed in model.EMBEDS:
        inner_code = own.pop(embed.code_key, None)
        inner = {key.removeprefix(embed.prefix): own.pop(key) for key in [k for k in own if k.startswith(embed.prefix)]}
        if inner_code is None and not inner:
            continue
        if not isinstance(inner_code, str):
            raise InternalError(
                f"note {code!r}: the note carried under {embed.prefix!r} has no code ({embed.code_key}={inner_code!r})"
            )
        check_values(inner_code, inner)
    try:
        model.model_validate(own)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise InternalError(f"note {code!r}: its values do not fit {model.__name__} ({problems})") from exc


def _untitled(schema: Any) -> Any:
    """A JSON Schema without pydantic's generated ``title`` keys (field names say as much)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def values_schema(model: type[NoteFacts]) -> dict[str, Any]:
    """The JSON Schema of a note's ``values`` under ``model``: its fields, and the embedded notes' keys."""
    schema: dict[str, Any] = _untitled(model.model_json_schema())
    if model.EMBEDS:
        schema.setdefault("properties", {}).update({e.code_key: {"type": ["string", "null"]} for e in model.EMBEDS})
        schema["patternProperties"] = {f"^{e.prefix.replace('.', '[.]')}": {} for e in model.EMBEDS}
    return schema


@cache
def values_schemas() -> list[dict[str, Any]]:
    """One JSON Schema rule per declaration: if a note's ``code`` is one of its codes, its ``values`` fit its schema."""
    return [
        {"if": {"properties": {"code": {"enum": list(model.CODES)}}, "required": ["code"]},
         "then": {"properties": {"values": values_schema(model)}}}
        for model in _models(NoteFacts) if model.__dict__.get("CODES")
    ]


# --- closed sets of names a value takes: each phrase words every member ---------------------------------------

# What a capture instruction asks for (``classify.context.Capture``; ``render.words.classify.CAPTURE_WORDS``).
Capture = Literal["smi", "ncu", "calibration", "trace", "baseline", "cpu_freq", "gpu_name", "replay", "replay_both",
                  "replay_baseline", "replay_error", "replay_quality", "replay_shapes", "replay_bytes", "replay_equivalent"]
# What a mechanism could not read, and from which run (``render.words.classify._NOT_RECORDED``).
NotRecorded = Literal["sparse_bytes", "tokens", "layer_work", "graph_bytes", "class_time", "rel_err", "precision_or_k", "quality"]
NotRecordedSide = Literal["run", "baseline", "run_or_baseline"]
# A dispatch cause (``records.run.CauseCode``).
CauseCode = Literal["non_contiguous", "dtype_change", "attn_mask", "dropout", "head_dim"]
# Where a zone-less log's UTC offset came from (``records.power.UtcOffsetSource``).
UtcOffsetSource = Literal["option", "fingerprint", "searched"]


# --- values several codes share --------------------------------------------------------------------------------


class AppliedFix(NoteFacts):
    """How a fix was applied to a workload (``reduce.apply_fix``); ``written_to``: the file the fixed workload was
    written to (``playbook.run``), once it is."""

    written_to: str | None = None


class Comparison(NoteFacts):
    """A sample comparison (``locate.common.cmp_values``): median ratio candidate/baseline, its interval, medians
    and sample counts."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    base_p50: float
    cand_p50: float
    n_base: int
    n_cand: int


class ComparisonLists(NoteFacts):
    """Several labelled comparisons (``locate.common.cmp_lists``): ``layers`` and their ``ratio``; ``with_ci`` names
    those that have an interval, ``ci_low`` and ``ci_high`` are theirs, in that order."""

    layers: list[str]
    ratio: list[float]
    with_ci: list[str]
    ci_low: list[float]
    ci_high: list[float]


class Causes(NoteFacts):
    """Dispatch causes (``records.run.cause_values``): parallel lists of codes, tensors, and values before and after."""

    cause_codes: list[CauseCode]
    cause_tensors: list[str]
    cause_was: list[str]
    cause_now: list[str]


class Versions(NoteFacts):
    """A version range (``signoff.stack.range_values``)."""

    known: bool
    since: str | None
    before: str | None
    boundary: str | None
    measured_at: list[str]


class EqualLatencyFigures(NoteFacts):
    """An equal-latency comparison (``records.equal_latency.equal_latency_values``)."""

    run: str
    clock: Literal["this_machine", "target"] | None
    narrowed_fraction: float
    narrowed_ms: float
    candidate_ms: float | None
    latency_matched: bool | None
    sparsity_wins: bool
    tolerance: float
    narrowed_metric: str
    narrowed_value: float
    candidate_metric: str
    candidate_value: float
    cross_clock: Literal["this_machine", "target"] | None
    cross_fraction: float | None
    cross_narrowed_ms: float | None
    cross_candidate_ms: float | None


class Roofline(NoteFacts):
    """A fitted roofline (``sources.target.surface.Roofline.facts``): floor (us), bandwidth (GB/s), throughput (TFLOP/s)."""

    floor_us: float
    gb_s: float
    tflops: float

# --- classify.* --------------------------------------------------------------------------------------------


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


# --- core.* ------------------------------------------------------------------------------------------------


class CoreHalfDiffers(NoteFacts):
    """``core.half_differs``."""

    CODES = ("core.half_differs",)
    half: str
    paired: bool
    ratio: float


class CoreBare(NoteFacts):
    """``core.halves_hold``."""

    CODES = ("core.halves_hold",)


class CoreHalvesTooFew(NoteFacts):
    """Notes that carry ``paired``."""

    CODES = ("core.halves_too_few", "core.no_outliers")
    paired: bool


class CoreInlierRoundsMixed(NoteFacts):
    """Notes that carry ``factor``, ``rounds``."""

    CODES = ("core.inlier_rounds_mixed", "core.inlier_rounds_moved")
    factor: float
    rounds: int


class CoreInliersOverlap(NoteFacts):
    """``core.inliers_overlap``."""

    CODES = ("core.inliers_overlap",)
    n_base: int
    n_cand: int


class CoreInliersSeparated(NoteFacts):
    """``core.inliers_separated``."""

    CODES = ("core.inliers_separated",)
    factor: float
    n_base: int
    n_cand: int


class CoreOutlierDriven(NoteFacts):
    """``core.outlier_driven``."""

    CODES = ("core.outlier_driven",)
    dropped: int
    p: float
    paired: bool
    ratio: float


class CoreOutliersDropped(NoteFacts):
    """``core.outliers_dropped``."""

    CODES = ("core.outliers_dropped",)
    dropped: int
    paired: bool


class CoreTimingContention(NoteFacts):
    """``core.timing_contention``."""

    CODES = ("core.timing_contention",)
    cores: int
    others: float
    ours: float
    share: float


class CoreTimingDisturbed(NoteFacts):
    """``core.timing_disturbed``."""

    CODES = ("core.timing_disturbed",)
    against: str | None = None
    left: int
    limit: float | None = None
    ratio_spread: float | None = None
    remeasured: int
    rounds: int
    variant: str


class CoreTimingSpread(NoteFacts):
    """``core.timing_spread``."""

    CODES = ("core.timing_spread",)
    limit: float
    spread: float
    variant: str


class CoreTimingUnsettled(NoteFacts):
    """``core.timing_unsettled``."""

    CODES = ("core.timing_unsettled",)
    budget_s: float
    rounds: int


# --- gate.* ------------------------------------------------------------------------------------------------


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


# --- locate.* ----------------------------------------------------------------------------------------------


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


# --- mechanisms.* ------------------------------------------------------------------------------------------


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


# --- movement.* --------------------------------------------------------------------------------------------


class MovementAlreadyDense(NoteFacts):
    """``movement.already_dense``."""

    CODES = ("movement.already_dense",)
    layer: str
    p50_ms: float


class MovementConversion(NoteFacts):
    """``movement.conversion``."""

    CODES = ("movement.conversion",)
    cost_ms: float
    growth_ms: float | None
    layers: int
    p50_ms: float
    reach_ms: float | None


class MovementExcludeLayer(NoteFacts):
    """``movement.exclude_layer``."""

    CODES = ("movement.exclude_layer",)
    delta_ms: float
    dense_ms: float
    layer: str
    p50_ms: float
    sparse_ms: float


class MovementFixRemoves(NoteFacts):
    """``movement.fix_removes``."""

    CODES = ("movement.fix_removes",)
    basis: str
    layers: int
    p50_ms: float
    removes_ms: float


class MovementLayerToSparse(NoteFacts):
    """``movement.layer_to_sparse``."""

    CODES = ("movement.layer_to_sparse",)
    EMBEDS = (Embed(code_key="source", prefix="source_"),)
    dense_ms: float
    layer: str
    layers: int
    p50_ms: float
    saved_ms: float
    speedup: float


class MovementBare(NoteFacts):
    """movement.* notes that carry no values."""

    CODES = ("movement.no_conversion_time", "movement.no_samples_or_fix", "movement.speedup_expected")


class MovementNoProjection(NoteFacts):
    """``movement.no_projection``."""

    CODES = ("movement.no_projection",)
    kind: str


class MovementNoSparseSpeedup(NoteFacts):
    """``movement.no_sparse_speedup``."""

    CODES = ("movement.no_sparse_speedup",)
    layer: str


class MovementSavingPastForward(NoteFacts):
    """``movement.saving_past_forward``."""

    CODES = ("movement.saving_past_forward",)
    basis: str
    p50_ms: float
    saving_ms: float


class MovementScheduleOverhead(NoteFacts):
    """``movement.schedule_overhead``."""

    CODES = ("movement.schedule_overhead",)
    baseline: bool
    keep_ms: float
    overhead_ms: float
    p50_ms: float


# --- playbook.* --------------------------------------------------------------------------------------------


class PlaybookBare(NoteFacts):
    """playbook.* notes that carry no values."""

    CODES = (
        "playbook.bisect",
        "playbook.classify",
        "playbook.fix_applied",
        "playbook.fix_not_applied",
        "playbook.freeze",
        "playbook.locate",
        "playbook.no_fix",
        "playbook.no_fixed",
        "playbook.no_reduction",
        "playbook.reduce",
        "playbook.reduce_skipped",
        "playbook.reproduce",
        "playbook.rerun",
        "playbook.trace_cut",
    )


class PlaybookClassified(NoteFacts):
    """``playbook.classified``."""

    CODES = ("playbook.classified",)
    winner: str | None


class PlaybookEnergyMachine(NoteFacts):
    """``playbook.energy_machine``."""

    CODES = ("playbook.energy_machine",)
    machine: Literal["imported", "rapl_read", "rapl_unused", "no_reading"]


class PlaybookEnergyMeasured(NoteFacts):
    """``playbook.energy_measured``."""

    CODES = ("playbook.energy_measured",)
    file: str
    option: str | None
    roles: list[str]


class PlaybookEnergyUnmeasured(NoteFacts):
    """``playbook.energy_unmeasured``."""

    CODES = ("playbook.energy_unmeasured",)
    roles: list[str]
    statuses: list[str]


class PlaybookFixNeedsRerun(NoteFacts):
    """``playbook.fix_needs_rerun``."""

    CODES = ("playbook.fix_needs_rerun",)
    action: str | None
    kind: str
    rule: str


class PlaybookFixedDrifted(NoteFacts):
    """``playbook.fixed_drifted``."""

    CODES = ("playbook.fixed_drifted",)
    drift: float | None
    judgement: str | None


class PlaybookFixedGiven(NoteFacts):
    """``playbook.fixed_given``."""

    CODES = ("playbook.fixed_given",)
    kind: str
    path: str


class PlaybookFrozen(NoteFacts):
    """``playbook.frozen``."""

    CODES = ("playbook.frozen",)
    git: str
    seed: int | None


class PlaybookLoadFixed(NoteFacts):
    """Notes that carry ``file``."""

    CODES = ("playbook.load_fixed", "playbook.load_fixed_early")
    file: str


class PlaybookLoadInput(NoteFacts):
    """``playbook.load_input``."""

    CODES = ("playbook.load_input",)
    file: str
    role: str
    verb: str


class PlaybookLocated(NoteFacts):
    """``playbook.located``."""

    CODES = ("playbook.located",)
    first_stage: str | None
    state: str


class PlaybookNextByAttribution(NoteFacts):
    """``playbook.next_by_attribution``."""

    CODES = ("playbook.next_by_attribution",)
    delta_ms: float
    ms: float
    share: float | None
    winner: str


class PlaybookNextByScore(NoteFacts):
    """``playbook.next_by_score``."""

    CODES = ("playbook.next_by_score",)
    score: float
    winner: str


class PlaybookNoTraceRepro(NoteFacts):
    """``playbook.no_trace_repro``."""

    CODES = ("playbook.no_trace_repro",)
    stage: str | None
    state: str


class PlaybookOpened(NoteFacts):
    """``playbook.opened``."""

    CODES = ("playbook.opened",)
    file: str
    source: str


class PlaybookReduced(NoteFacts):
    """``playbook.reduced``."""

    CODES = ("playbook.reduced",)
    file: str
    reproducer: str | None


class PlaybookRemovedStale(NoteFacts):
    """``playbook.removed_stale``."""

    CODES = ("playbook.removed_stale",)
    entry: str
    partial: bool
    pid: int


class PlaybookReplayFixed(NoteFacts):
    """Notes that carry ``file``."""

    CODES = ("playbook.replay_fixed", "playbook.replay_fixed_pair")
    file: str | None


class PlaybookReplayPair(NoteFacts):
    """``playbook.replay_pair``."""

    CODES = ("playbook.replay_pair",)
    baseline: str
    candidate: str


class PlaybookRerunMoved(NoteFacts):
    """``playbook.rerun_moved``."""

    CODES = ("playbook.rerun_moved",)
    change: float | None
    direction: str | None
    moved: bool | None


class PlaybookRestoredPrevious(NoteFacts):
    """``playbook.restored_previous``."""

    CODES = ("playbook.restored_previous",)
    bundle: str
    entry: str
    pid: int


class PlaybookRunSets(NoteFacts):
    """``playbook.run_sets``."""

    CODES = ("playbook.run_sets",)
    ranks: int
    walked: int


class PlaybookTraceRepro(NoteFacts):
    """``playbook.trace_repro``."""

    CODES = ("playbook.trace_repro",)
    files: list[str]
    finding: str
    layer: str
    stage: str
    targets: int


# --- reduce.* ----------------------------------------------------------------------------------------------


class ReduceBare(NoteFacts):
    """reduce.* notes that carry no values."""

    CODES = ("reduce.check_static", "reduce.check_timed", "reduce.confirm")


class ReduceProbe(NoteFacts):
    """``reduce.probe``."""

    CODES = ("reduce.probe",)
    flaky: bool
    n: int
    outcome: str
    phase: str
    tried: str


class ReduceStopShrinking(NoteFacts):
    """``reduce.stop_shrinking``."""

    CODES = ("reduce.stop_shrinking",)
    error: str
    phase: str


class ReduceTarget(NoteFacts):
    """``reduce.target``."""

    CODES = ("reduce.target",)
    changes: int
    finding: str | None
    stage: str


class ReduceTokensOnly(NoteFacts):
    """``reduce.tokens_only``."""

    CODES = ("reduce.tokens_only",)
    source: str


# --- signoff.* ---------------------------------------------------------------------------------------------


class SignoffEqualLatency(EqualLatencyFigures):
    """``signoff.equal_latency``."""

    CODES = ("signoff.equal_latency",)


class SignoffSpeedupBaselinePairs(NoteFacts):
    """``signoff.speedup_baseline_pairs``."""

    CODES = ("signoff.speedup_baseline_pairs",)
    layers: int


class SignoffSpeedupBaselineSparse(NoteFacts):
    """``signoff.speedup_baseline_sparse``."""

    CODES = ("signoff.speedup_baseline_sparse",)
    base_sparse_calls: int


class SignoffSpeedupByOp(NoteFacts):
    """``signoff.speedup_by_op``."""

    CODES = ("signoff.speedup_by_op",)
    base_calls: int
    base_ms: float
    dense_calls: int
    dense_ms: float
    sparse_calls: int
    sparse_ms: float


class SignoffSpeedupGemmUnpaired(NoteFacts):
    """``signoff.speedup_gemm_unpaired``."""

    CODES = ("signoff.speedup_gemm_unpaired",)
    base_calls: int
    calls: int
    sparse_calls: int


class SignoffBare(NoteFacts):
    """signoff.* notes that carry no values."""

    CODES = ("signoff.speedup_no_sparse_gemm", "signoff.speedup_none_sparse")


class SignoffSpeedupNoDenseLeft(NoteFacts):
    """``signoff.speedup_no_dense_left``: the baseline's dense calls and time by op, none left dense in the candidate."""

    CODES = ("signoff.speedup_no_dense_left",)
    base_calls: int
    base_ms: float
    dense_calls: int
    dense_ms: float


class SignoffSpeedupNoPairs(NoteFacts):
    """``signoff.speedup_no_pairs``."""

    CODES = ("signoff.speedup_no_pairs",)
    baseline: bool


class SignoffSpeedupOwnPairs(NoteFacts):
    """``signoff.speedup_own_pairs``."""

    CODES = ("signoff.speedup_own_pairs",)
    converting: int
    layers: int


# --- sources.* ---------------------------------------------------------------------------------------------


class SourcesClassesSeen(NoteFacts):
    """``sources.classes_seen``."""

    CODES = ("sources.classes_seen",)
    classes: list[str]


class SourcesCounterRestarted(NoteFacts):
    """Notes that carry ``line_after``, ``line_before``."""

    CODES = ("sources.counter.restarted", "sources.counter.wrapped")
    line_after: int
    line_before: int


class SourcesIterationsAnnotation(NoteFacts):
    """``sources.iterations.annotation``."""

    CODES = ("sources.iterations.annotation",)
    layer: str


class SourcesIterationsGraphLaunches(NoteFacts):
    """Notes that carry ``count``."""

    CODES = ("sources.iterations.graph_launches", "sources.iterations.profiler_steps")
    count: int


class SourcesIterationsKernelPeriod(NoteFacts):
    """``sources.iterations.kernel_period``."""

    CODES = ("sources.iterations.kernel_period",)
    unit: int


class SourcesIterationsRepeatingCalls(NoteFacts):
    """``sources.iterations.repeating_calls``."""

    CODES = ("sources.iterations.repeating_calls",)
    p: float | None
    unit: int
    units: int
    units_per_iteration: int | None


class SourcesBare(NoteFacts):
    """sources.* notes that carry no values."""

    CODES = ("sources.iterations.whole_trace", "sources.window.no_run_window")


class SmiClockPlaced(NoteFacts):
    """How an nvidia-smi log's clock was placed on the run's (``classify.evidence.windowed_smi_evidence``): the UTC
    offset taken and where it came from; or, when none was given, what the search over the real UTC offsets found
    (``tried`` offsets, those ``aligned`` with the ``runs`` windows, the log's first and last time)."""

    offset_h: float | None = None
    offset_from: UtcOffsetSource | None = None
    fingerprint_created: str | None = None
    offset_searched: bool | None = None
    runs: int | None = None
    tried: int | None = None
    aligned: list[float] | None = None
    log_first_s: float | None = None
    log_last_s: float | None = None


class SourcesSmiWindowEmpty(SmiClockPlaced):
    """``sources.smi_window.empty``."""

    CODES = ("sources.smi_window.empty",)
    file: str
    log_first_s: float | None
    log_last_s: float | None
    start_utc_s: float


class SourcesSmiWindowNoRunWindow(SmiClockPlaced):
    """``sources.smi_window.no_run_window``."""

    CODES = ("sources.smi_window.no_run_window",)
    file: str


class SourcesSmiWindowNoUtcOffset(SmiClockPlaced):
    """``sources.smi_window.no_utc_offset``."""

    CODES = ("sources.smi_window.no_utc_offset",)
    file: str


class SourcesSmiWindowSamples(SmiClockPlaced):
    """``sources.smi_window.samples``."""

    CODES = ("sources.smi_window.samples",)
    file: str
    samples: int
    seconds: float
    start_utc_s: float


class SourcesTotalsOverlapTookClosest(NoteFacts):
    """``sources.totals.overlap_took_closest``."""

    CODES = ("sources.totals.overlap_took_closest",)
    label: str | None
    line: int


class SourcesWindowClosestTotalPartlyCovers(NoteFacts):
    """Notes that carry ``covered_s``, ``window_s``."""

    CODES = ("sources.window.closest_total_partly_covers", "sources.window.totals_partly_cover")
    covered_s: float
    window_s: float


class SourcesWindowFewPeriods(NoteFacts):
    """``sources.window.few_periods``."""

    CODES = ("sources.window.few_periods",)
    averaging_s: float | None
    field: str
    min_periods: int
    part_time_sampled: bool
    period_s: float
    update_period_s: float | None
    window_s: float


class SourcesWindowMonotonicClock(NoteFacts):
    """Notes that carry ``source``: the power log's clock cannot be placed on the run's (``sources.importers.power.window``)."""

    CODES = ("sources.window.monotonic_clock", "sources.window.no_timestamps", "sources.window.no_utc_offset")
    source: str


class SourcesWindowNoChannel(NoteFacts):
    """``sources.window.no_channel``."""

    CODES = ("sources.window.no_channel",)
    device: str | None
    source: str


class SourcesWindowNoDuration(NoteFacts):
    """``sources.window.no_duration``."""

    CODES = ("sources.window.no_duration",)
    end_utc_s: float
    start_utc_s: float


class SourcesWindowOutsideLog(NoteFacts):
    """``sources.window.outside_log``."""

    CODES = ("sources.window.outside_log",)
    end_utc_s: float
    log_end_utc_s: float
    log_start_utc_s: float
    start_utc_s: float


class SourcesWindowPartlyCovered(NoteFacts):
    """``sources.window.partly_covered``."""

    CODES = ("sources.window.partly_covered",)
    covered_s: float
    end_utc_s: float
    log_end_utc_s: float
    log_start_utc_s: float
    start_utc_s: float
    window_s: float


class SourcesWindowTotalsShareShort(NoteFacts):
    """``sources.window.totals_share_short``."""

    CODES = ("sources.window.totals_share_short",)
    field: str
    needed: float
    share: float
    window_s: float


class SourcesWindowTotalsWithoutDuration(NoteFacts):
    """``sources.window.totals_without_duration``."""

    CODES = ("sources.window.totals_without_duration",)
    field: str


# --- stack.* -----------------------------------------------------------------------------------------------


class StackCapability(NoteFacts):
    """``stack.capability``."""

    CODES = ("stack.capability",)
    capability: str


class StackEpilogue(NoteFacts):
    """``stack.epilogue``."""

    CODES = ("stack.epilogue",)
    epilogue: str


class StackGroupsBreak(NoteFacts):
    """``stack.groups_break``."""

    CODES = ("stack.groups_break",)
    pattern: str


class StackKAlignment(NoteFacts):
    """``stack.k_alignment``."""

    CODES = ("stack.k_alignment",)
    dtype: str
    k: int
    min: int
    multiple: int
    path: str


class StackKNotMultiple(NoteFacts):
    """``stack.k_not_multiple``."""

    CODES = ("stack.k_not_multiple",)
    k: int
    m: int


class StackLayout(NoteFacts):
    """``stack.layout``."""

    CODES = ("stack.layout",)
    dtype: str
    layout: str
    path: str


class StackLimit(NoteFacts):
    """``stack.limit``."""

    CODES = ("stack.limit",)
    profile_note: str


class StackLimitApplies(Versions):
    """``stack.limit_applies``."""

    CODES = ("stack.limit_applies",)
    profile_note: str
    removed_in: str | None


class StackLimitRange(Versions):
    """``stack.limit_range``."""

    CODES = ("stack.limit_range",)
    profile_note: str


class StackLimitUnknown(Versions):
    """``stack.limit_unknown``."""

    CODES = ("stack.limit_unknown",)
    profile_note: str
    version: str | None


class StackMeasured(NoteFacts):
    """``stack.measured``."""

    CODES = ("stack.measured",)
    measured_at: list[str]
    version: str | None


class StackNAlignment(NoteFacts):
    """``stack.n_alignment``."""

    CODES = ("stack.n_alignment",)
    dtype: str
    min: int
    multiple: int
    n: int
    path: str


class StackNegativeZero(NoteFacts):
    """``stack.negative_zero``."""

    CODES = ("stack.negative_zero",)
    count: int
    groups: int | None
    path: str
    pattern: str


class StackNoKernel(NoteFacts):
    """``stack.no_kernel``."""

    CODES = ("stack.no_kernel",)
    dtype: str
    dtypes: list[str]
    path: str


class StackOpNotLowered(NoteFacts):
    """``stack.op_not_lowered``."""

    CODES = ("stack.op_not_lowered",)
    op: str
    ops: list[str]
    path: str


class StackPattern(NoteFacts):
    """``stack.pattern``."""

    CODES = ("stack.pattern",)
    path: str
    pattern: str
    patterns: list[str]


class StackTactic(NoteFacts):
    """``stack.tactic``."""

    CODES = ("stack.tactic",)
    profile_note: str | None


class StackVersionOutside(Versions):
    """``stack.version_outside``."""

    CODES = ("stack.version_outside",)
    title: str
    version: str | None


# --- targets.* ---------------------------------------------------------------------------------------------


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
