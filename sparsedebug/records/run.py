"""The run record: one run, replayed or imported, as the five stages of the playbook.

A run, whether replayed on the built-in kernel or imported from accelerator
artifacts, is one ``RunRecord`` with the five stages of the playbook's concept
diagram, in order::

    graph -> lower -> kernel -> schedule -> outcome

Raw timing samples are kept (``*_samples_ms``), never only summaries, so that
bisect and gate can run rank tests on them; they are validated as times: finite,
and positive (``TimeMs``; idle and busy times may be zero, ``DurationMs``), so that
a record with a NaN or negative sample is refused on load, naming the field. Every record carries
``schema_version``; a file written by a newer sparsedebug is refused with an
upgrade message rather than misread (see ``sparsedebug.core.io``).

Per-call weight conversion has one place: it is host work before a layer's
compute, timed apart as ``lower.layers[].conversion_ms`` x ``conversions_per_call``,
never inside ``kernel.layers[].samples_ms``, outside ``schedule.busy_samples_ms``
and inside the layer's ``schedule.layer_idle_samples_ms`` (the host gap before
its compute). Both replays write it so (the kernel is timed on weights converted
beforehand); the trace importer records no conversion. Readers count it once:
bisect's layer ranking and classify's attribution in the layer's host gap,
signoff's kernel figures beside the kernel, never inside it.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.comparability import DeviceInfo
from sparsedebug.records.defaults import MAX_DURATION_MS
from sparsedebug.records.engine import EngineBuild, EngineLayer
from sparsedebug.records.fingerprint import FileDigest, Fingerprint
from sparsedebug.records.note_codes.facts import CauseCode
from sparsedebug.records.notes import Note
from sparsedebug.records.stats import Percentiles
from sparsedebug.records.target import LatencyMatch, SlowerThanDense, TargetClock
from sparsedebug.records.timing import TimingQuality

# The five stages, in the order the playbook walks them.
STAGES: tuple[str, ...] = ("graph", "lower", "kernel", "schedule", "outcome")

# The intent of a layer never meant to be sparse.
DENSE = "dense"

_INTENT_RE = re.compile(r"^(\d+):(\d+)(?::(\d+))?$")


def canonical_intent(value: str) -> str:
    """``dense``, or the canonical text of an ``N:M`` / ``V:N:M`` pattern (spaces and case dropped, no
    leading zeros); ``ValueError`` otherwise. The pattern's own limits (N < M, M <= 16) are
    ``kernels.masks.parse_pattern``'s to check where a kernel is built."""
    text = value.strip().lower()
    if text in ("", DENSE):
        return DENSE
    match = _INTENT_RE.match(text.replace(" ", ""))
    if match is None:
        raise ValueError(f"sparsity {value!r}: expected 'dense', 'N:M' or 'V:N:M'")
    return ":".join(str(int(part)) for part in match.groups() if part is not None)


# A layer's declared sparsity as a typed value: always ``dense`` or a canonical pattern text, so no reader re-parses
# it (``intended == DENSE`` is the whole test).
SparsityIntent = Annotated[str, AfterValidator(canonical_intent)]


# --------------------------------------------------------------------------- run record

# Measured ms, finite and at most a week (``MAX_DURATION_MS``): a time rank tests compare (positive), a duration (idle, busy: may be 0).
TimeMs = Annotated[float, Field(gt=0, le=MAX_DURATION_MS, allow_inf_nan=False)]
DurationMs = Annotated[float, Field(ge=0, le=MAX_DURATION_MS, allow_inf_nan=False)]


class OpKind(StrEnum):
    """Operator kinds a model graph is made of."""

    LINEAR = "linear"
    ATTENTION = "attention"
    NORM = "norm"
    ACTIVATION = "activation"
    EMBEDDING = "embedding"
    ELEMENTWISE = "elementwise"
    OTHER = "other"


class KernelPath(StrEnum):
    """Which kernel path a layer took after lowering."""

    SPARSE = "sparse"
    DENSE = "dense"


class FallbackReason(StrEnum):
    """Why a layer runs dense. ``intended_dense`` is not a fallback: it was never meant to be sparse."""

    INTENDED_DENSE = "intended_dense"
    PATTERN_NOT_COMPLIANT = "pattern_not_compliant"
    SHAPE_NOT_ALIGNED = "shape_not_aligned"
    DTYPE_UNSUPPORTED = "dtype_unsupported"
    OP_UNSUPPORTED = "op_unsupported"
    SLOWER_THAN_DENSE = "slower_than_dense"
    OBSERVED_DENSE = "observed_dense"


class KernelClass(StrEnum):
    """Classes of GPU kernels, as the trace importer sorts kernel names."""

    SPARSE_GEMM = "sparse_gemm"
    DENSE_TC_GEMM = "dense_tc_gemm"
    FP32_GEMM = "fp32_gemm"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"
    COPY = "copy"
    REDUCTION = "reduction"
    COMMUNICATION = "communication"
    OTHER = "other"


class GraphLayer(Record):
    """One layer of the model graph as declared (workload) or observed (trace)."""

    name: str
    op: OpKind
    weight_shape: list[int] | None = Field(None, description="(out, in) for linear layers.")
    input_shape: list[int] | None = None
    output_shape: list[int] | None = None
    dtype: str
    intended: SparsityIntent = Field(DENSE, description="Declared sparsity: 'dense', 'N:M' or 'V:N:M' (canonical).")
    params: int = 0
    flops: float = Field(0.0, description="Dense-equivalent FLOPs of one call.")
    bytes: float = Field(0.0, description="Dense-equivalent bytes moved by one call.")
    ops: list[str] = Field(
        default_factory=list,
        description="Imported traces: the top-level ops of the layer's first call, in order (op and shape), so a trace "
        "annotated coarsely can be matched op for op against one that is not.",
    )


class GraphStage(Record):
    layers: list[GraphLayer]
    tokens: int | None = None
    model_revision: str | None = None


class DispatchCause(Record):
    """One thing the dispatcher saw differently in the candidate: its kind, the tensor it names, and the values
    before and after (the last-dim stride of a non-contiguous tensor, a dtype, dropout_p, the head dim)."""

    code: CauseCode
    tensor: str | None = Field(None, description="The tensor role (query, key, value, input ...) the cause names.")
    was: str | None = Field(None, description="The baseline's value (the one a fix restores).")
    now: str | None = Field(None, description="The candidate's value.")


def cause_values(causes: list[DispatchCause]) -> dict[str, list[str]]:
    """Dispatch causes as note values: parallel lists of codes, tensors, and values before and after ('' for none)."""
    return {
        "cause_codes": [c.code for c in causes], "cause_tensors": [c.tensor or "" for c in causes],
        "cause_was": [c.was or "" for c in causes], "cause_now": [c.now or "" for c in causes],
    }


class SlowPathTrigger(Record):
    """One input of a call known to keep the op off its fused fast path: its kind, the tensor, the value that trips it."""

    code: Literal["non_contiguous", "fp32_inputs", "mixed_dtypes", "attn_mask", "dropout", "head_dim"]
    tensor: str | None = Field(None, description="The tensor role (query, key, value, input ...) it names.")
    value: str | None = Field(None, description="The stride, dtypes ('fp16/fp32'), dropout_p or head dim that trips it.")


class DispatchEvidence(Record):
    """What a trace shows about how the op behind a layer was dispatched (imported traces only).

    From the CPU ops recorded with ``record_shapes=True``: the op the model
    called, the backend op it dispatched to (SDPA's flash/efficient/cudnn/math
    kernels, cuSPARSELt or CUTLASS for semi-structured sparse linears), and the
    inputs the dispatcher chose from: dtypes, shapes, strides, mask and dropout.
    """

    op: str = Field(description="The op the model called, e.g. aten::scaled_dot_product_attention or aten::linear.")
    backend: str | None = Field(None, description="flash, efficient, cudnn, math, cusparselt, cutlass_sparse, cublas, ... when the CPU ops show it.")
    backend_op: str | None = Field(None, description="The CPU op whose name shows the backend.")
    input_dtypes: list[str | None] = Field(default_factory=list)
    input_shapes: list[list[int] | None] = Field(default_factory=list)
    input_strides: list[list[int] | None] = Field(default_factory=list)
    non_contiguous: list[int] = Field(default_factory=list, description="Tensor inputs (by position) whose last-dimension stride is not 1.")
    attn_mask: bool | None = Field(None, description="Attention only: an attn_mask tensor was passed.")
    dropout_p: float | None = None
    is_causal: bool | None = None
    head_dim: int | None = None
    triggers: list[SlowPathTrigger] = Field(
        default_factory=list,
        description="Inputs known to keep an op off its fused fast path, as the trace shows them (layout, dtype, mask, dropout, head dim).",
    )


class LowerLayer(Record):
    """The lowering decision for one layer and what it costs."""

    name: str
    path: KernelPath
    reason: FallbackReason | None = Field(None, description="Set when path is dense.")
    detail: Note | None = Field(None, description="Why, as a coded fact: a backend profile's decision, or the kernel classes a trace shows.")
    kernel_class: KernelClass | None = None
    kernels: list[str] = Field(default_factory=list)
    conversion_ms: float | None = Field(
        None,
        description="One conversion of the layer's weights into the sparse layout, timed apart (median). A per-call "
        "conversion is host work before the layer's compute: never inside kernel.layers[].samples_ms, outside "
        "schedule.busy_samples_ms, inside schedule.layer_idle_samples_ms.",
    )
    conversions_per_call: int = Field(0, description="How many times the layer converts its weights on every call (0: once at load).")
    value_bytes: int | None = None
    metadata_bytes: int | None = None
    dense_bytes: int | None = None
    phase: str | None = Field(None, description="Imported training traces: forward, backward or optimizer.")
    identity: str | None = Field(None, description="Imported traces: how the layer was found: annotation, module, aten_op or kernel.")
    dispatch: DispatchEvidence | None = None
    slower_on_target: SlowerThanDense | None = Field(
        None, description="Set when the layer runs sparse but is projected slower than dense on the target GPU."
    )
    engine: EngineLayer | None = Field(None, description="Imported TensorRT engines: the layer's exported facts and sparsity.")


class LowerStage(Record):
    backend: str
    layers: list[LowerLayer]


class KernelLayer(Record):
    """Kernel-level timing and numerics for one layer."""

    name: str
    samples_ms: list[TimeMs] = Field(
        description="Per-call time of the chosen path's kernels, raw samples; a per-call weight conversion is not in "
        "them (it is lower.layers[].conversion_ms)."
    )
    dense_samples_ms: list[TimeMs] | None = Field(None, description="Per-call time of the dense path, same inputs.")
    by_class_ms: dict[str, float] = Field(default_factory=dict)
    precision: str | None = None
    max_abs_err: float | None = Field(None, description="Versus an fp64 dense reference of the same pruned weights.")
    rel_err: float | None = None


class KernelStage(Record):
    layers: list[KernelLayer]
    by_class_ms: dict[str, float] = Field(default_factory=dict)


class TimelineEvent(Record):
    """One GPU op of the timeline strip, relative to the iteration's first GPU op start."""

    start_ms: float
    dur_ms: float
    kernel_class: KernelClass
    stream: int
    layer: str | None = None


class TimelineGap(Record):
    """One idle gap of the device between GPU ops, with why the device waited."""

    start_ms: float
    dur_ms: float
    cause: Literal["host_wait", "kernel_wait", "other"] = Field(
        description="host_wait: the next op's launch began after the device went idle; kernel_wait: it was already "
        "queued; other: the next op has no linked launch call."
    )


class TimelineStrip(Record):
    """The GPU timeline of one iteration (the one with the median span), as the source recorded it."""

    iteration: int = Field(description="Index of the iteration among the run's iterations, from 0.")
    span_ms: float
    events: list[TimelineEvent] = Field(description="GPU ops in start order.")
    events_total: int = Field(description="GPU ops in the iteration; more than len(events) when the strip was cut.")
    gaps: list[TimelineGap] = Field(default_factory=list)
    cut_at_ms: float | None = Field(
        None, description="Set when the iteration had too many ops to keep: events and gaps end here."
    )


class ScheduleStage(Record):
    """Whole-forward timing: span versus busy time, idle split, threads."""

    span_samples_ms: list[TimeMs] = Field(description="Per iteration: first kernel start to last kernel end (or forward wall time).")
    busy_samples_ms: list[DurationMs] = Field(description="Per iteration: summed kernel/layer time (per-call weight conversion not in it).")
    host_wait_ms: float | None = Field(None, description="Device idle waiting on the host, summed over the iterations.")
    kernel_wait_ms: float | None = Field(None, description="Idle between kernels not explained by the host, summed likewise.")
    threads: int | None = None
    launches_per_iteration: int | None = None
    dense_share: float | None = Field(
        None, description="Fraction of busy time spent in layers that ran dense (non-linear ops included), median over iterations."
    )
    layer_idle_samples_ms: dict[str, list[DurationMs]] = Field(
        default_factory=dict,
        description=(
            "Per layer, per call: device idle time just before the layer's first kernel (the gap after the "
            "previous kernel ended, a per-call weight conversion included), when the source records it. With few iterations (a short trace), bisect "
            "pools these per-call samples across identical layers to test the schedule stage."
        ),
    )
    timeline: TimelineStrip | None = Field(
        None, description="One iteration's GPU ops and idle gaps, when the source has a per-kernel timeline (traces)."
    )


class QualityEvidence(Record):
    """What a real-model quality figure was measured on: model, text, tokens, metric and Python version."""

    model: str = Field(description="The model, as the workload names it (a registered name or a path).")
    model_source: str = Field(description="package==version for a registered model, else the path.")
    model_description: str | None = Field(None, description="What the registered model is (sparsedebug models list).")
    metric: str = Field(description="What `cosine` measures, by id: sentence_embedding_cosine or perplexity_windows.")
    text: str = Field(description="'pydoc_data.topics' or the text file the figures were measured on.")
    text_sha256: str
    python_version: str = Field(description="The default text changes between Python versions.")
    unit: Literal["window", "sentence"]
    units: int = Field(description="Evaluation sentences (encoder) or windows (decoder).")
    tokens: int = Field(description="Evaluation tokens.")
    reference: str = Field(description="What the figures compare against (the dense model, fp32).")


class QualityDelta(Record):
    """Output quality of the candidate versus the dense unpruned model."""

    cosine: float
    rel_err: float
    accuracy: float | None = None
    dense_accuracy: float | None = None
    cosine_min: float | None = Field(None, description="Real encoders: the smallest per-sentence embedding cosine.")
    neighbour_agreement: float | None = Field(
        None, description="Real encoders: share of sentences whose nearest other sentence is the dense model's."
    )
    perplexity: float | None = Field(None, description="Real decoders: perplexity on the evaluation windows.")
    dense_perplexity: float | None = Field(None, description="Real decoders: the dense model's perplexity on them.")
    evidence: QualityEvidence | None = Field(None, description="Real models: which text, tokens, metric and Python.")


class EqualLatencyQuality(Record):
    """Quality of a dense model narrowed until it is as fast as the candidate."""

    narrowed_ffn_fraction: float = Field(description="Fraction of FFN neurons removed from the dense model.")
    narrowed_latency_ms: float
    latency_matched: bool | None = Field(
        None, description="False when even the narrowest model searched stayed slower than the candidate."
    )
    candidate_latency_ms: float | None = Field(
        None, description="The candidate's p50 in the same interleaved measurement as narrowed_latency_ms."
    )
    narrowed: QualityDelta
    candidate: QualityDelta
    sparsity_wins: bool
    clock: Literal["this_machine", "target"] | None = Field(
        None, description="Clock of the two latencies: projected onto the target GPU, or measured here (None: older records, here)."
    )
    cross_check: LatencyMatch | None = Field(
        None, description="The same search on the other clock (this machine's timings when the budget is on the target clock)."
    )
    importance: Note | None = Field(None, description="How neurons were ranked for removal (real models: from the calibration data).")


# How an imported run's whole-forward latencies were timed: ``traced`` (iterations of a profiler trace: the profiler's
# own cost per op is in them) or ``untraced`` (per-forward timings taken with the profiler off, e.g. CUDA events or
# ``torch.utils.benchmark``, given with ``--latency``).
LatencyTiming = Literal["traced", "untraced"]


class OutcomeStage(Record):
    """SLA outcome: the alarm metric of the playbook."""

    latency_samples_ms: list[TimeMs]
    latency_timing: LatencyTiming | None = Field(None, description="Imported runs: how latency_samples_ms were timed; None for replays.")
    latency_file: str | None = Field(None, description="The file the untraced latencies came from (--latency).")
    traced_latency_samples_ms: list[TimeMs] | None = Field(
        None, description="The trace's own per-iteration latencies, kept when untraced ones replaced them."
    )
    latency: Percentiles | None = Field(
        None, description="p50/p95/p99 of latency_samples_ms (this machine, measured); a replay records it, an import may not."
    )
    budget_ms: float | None = None
    dense_baseline_samples_ms: list[TimeMs] | None = None
    effective_speedup: float | None = Field(None, description="Dense baseline p50 / candidate p50.")
    quality: QualityDelta | None = None
    equal_latency: EqualLatencyQuality | None = None
    timing: TimingQuality | None = Field(
        None, description="Interference seen while timing the whole forward; effective_speedup is None when unstable."
    )


class Verdict(Record):
    """A named check on a run or a pair of runs."""

    check: str
    status: Literal["pass", "fail", "unknown"]
    # The figures the check compared, as a coded fact (text in records written before issue 39).
    detail: Note


class WorkloadRef(Record):
    """What produced the run: workload file, seed and the weights' digests."""

    name: str
    seed: int | None = None
    file: FileDigest | None = None
    weights: FileDigest | None = None
    knobs: dict[str, str] = Field(default_factory=dict)


class TraceRuntime(Record):
    """The build and runtime a profiler trace records about itself (imported traces only)."""

    cuda_runtime: str | None = Field(None, description="CUDA runtime version the trace records (cuda_runtime_version 13000 -> '13.0').")
    cuda_driver: str | None = Field(None, description="CUDA driver API version the trace records (cuda_driver_version).")
    cupti: str | None = Field(None, description="CUPTI version (cupti_version) as recorded.")
    device: str | None = None
    capability: str | None = Field(None, description="Compute capability of the traced device, e.g. '9.0'.")
    sparse_backends: list[str] = Field(default_factory=list, description="Backends of the sparse linears the trace dispatched (cusparselt, cutlass_sparse).")
    sparse_ops: list[str] = Field(default_factory=list, description="The CPU ops that show them (aten::_cslt_sparse_mm, ...).")
    cuda_graph: bool = Field(False, description="Whether the forward was replayed from a CUDA graph (cudaGraphLaunch).")


class TimeWindow(Record):
    """When a run's GPU work happened, in absolute UTC (seconds since the epoch)."""

    start_utc_s: float
    end_utc_s: float
    source: str = Field(description="How the window was found (the trace's baseTimeNanoseconds plus its GPU op timestamps).")


class RunSource(Record):
    kind: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="Source kind, a code of sources.registry: replay, torch_trace, trt_engine; its capabilities say what the run carries.",
    )
    files: list[FileDigest] = Field(default_factory=list)
    runtime: TraceRuntime | None = Field(None, description="Imported traces: the CUDA, CUPTI and device versions the trace records.")
    window: TimeWindow | None = Field(None, description="Absolute time of the run's GPU work; None when the artifact does not say.")
    iteration_windows: list[TimeWindow] = Field(
        default_factory=list,
        description="Absolute time of each iteration whose latency is a sample (same order as outcome.latency_samples_ms); empty when unknown.",
    )
    engine: EngineBuild | None = Field(None, description="Imported TensorRT engines: the engine's build and what its exports hold.")


SessionRole = Literal["baseline", "candidate"]


class ReplaySession(Record):
    """Baseline and candidate replayed in one interleaved session (``sources.replay.replay.replay_pair``).

    Every timed stage ran the two workloads in the same rounds, alternating which goes
    first, so round ``i`` of one run and round ``i`` of the other saw the same machine:
    bisect and the gate compare such a pair round by round (``core.paired``), and drift
    common to both sides cancels. The orders are as executed: one entry per kept round,
    the variants in the order they ran, comma-separated.
    """

    id: str = Field(description="Shared by the two runs of one session.")
    role: SessionRole
    partner: str = Field(description="The other run's name as replayed.")
    block: int = Field(2, ge=1, description="Consecutive rounds that balance the order (each side first once): the unit paired tests compare.")
    forward_order: list[str] = Field(default_factory=list, description="Schedule stage: per kept round, the order the whole forwards ran.")
    kernel_order: dict[str, list[str]] = Field(
        default_factory=dict, description="Kernel stage, per layer timed in both: per round, the order the calls ran."
    )


class RunRecord(Record):
    """One baseline or candidate run, all five stages."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["run"] = "run"
    name: str
    source: RunSource
    workload: WorkloadRef | None = None
    fingerprint: Fingerprint | None = None
    device: DeviceInfo | None = Field(None, description="The device the run was timed on, as its source says (traces: deviceProperties).")
    graph: GraphStage
    lower: LowerStage
    kernel: KernelStage
    schedule: ScheduleStage
    outcome: OutcomeStage
    verdicts: list[Verdict] = Field(default_factory=list)
    target: TargetClock | None = Field(
        None, description="The target clock: every layer and the whole forward projected onto the backend's GPU (replays on GPU profiles)."
    )
    session: ReplaySession | None = Field(
        None, description="Replays of a pair timed in one interleaved session: the pairing of their rounds (None: timed alone)."
    )
