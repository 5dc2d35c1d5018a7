"""The records of step 3, classification: evidence per rule, scores per mechanism, the winner and its fix.

``Classification`` is what ``sparsedebug classify --json`` prints and the bundle stores as
``classification.json``; the other records are its parts (``Evidence`` per rule,
``MissingEvidence`` per artifact that would settle a rule, ``MechanismScore`` per mechanism,
the suggested ``Fix``, the ``Roofline`` and each layer's ``LayerIntensity`` on it).
``NcuEvidence`` and ``SmiEvidence`` are the inputs classification reads from an Nsight
Compute report and an nvidia-smi log (``sparsedebug.classify.evidence`` builds them).
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar, Literal, TypeGuard, get_args

from pydantic import ConfigDict, Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.note_codes.facts import CauseCode, UtcOffsetSource
from sparsedebug.records.notes import Note
from sparsedebug.records.run import DispatchCause, FallbackReason, KernelClass


class Mechanism(StrEnum):
    """The five first-principles bottleneck classes of the playbook, in its order."""

    COMPUTE = "compute"
    MEMORY = "memory"
    SCHEDULING = "scheduling"
    PRECISION = "precision"
    THERMAL = "thermal"


class Evidence(Record):
    """One rule evaluated on one metric: the number, the threshold, and where the number came from."""

    rule: str
    mechanism: Mechanism
    metric: str
    value: float | None = Field(description="None when the rule does not apply to this run (see detail).")
    op: Literal[">", "<"]
    threshold: float
    unit: str
    fired: bool
    contribution: float
    source: str = Field(description="Stage and metric, or the imported artifact file, the value came from.")
    detail: Note = Field(description="The numbers behind the value, as a coded fact.")
    gate: Note | None = Field(None, description="Why the rule may not fire on this value (the baseline shares it, not a finite number ...).")
    baseline_fired: bool | None = Field(
        None, description="One-run rules beside a baseline: whether the same rule fires on the baseline's own value (None: "
        "no baseline, or its value could not be computed)."
    )


class MissingEvidence(Record):
    """A metric that could not be computed, and the artifact that would settle it."""

    mechanism: Mechanism
    rules: list[str]
    reason: Note
    capture: Note = Field(description="What to capture or pass to settle it.")


class AttributedPart(Record):
    """One part of the measured latency change (a layer's kernel time, the host gaps before it, the gaps
    outside every layer) and the mechanism its evidence supports."""

    part: str = Field(description="The layer, or a named gap (host time outside the layers).")
    kind: Literal["kernel", "gap", "conversion"]
    mechanism: Mechanism | None = Field(description="None: no evidence on this part names a mechanism.")
    ms: float = Field(description="Change per iteration, candidate - baseline (from medians).")
    evidence: Note = Field(description="What on this part supports the mechanism (the path change, the added gap ...), as a coded fact.")
    rule: str | None = Field(None, description="The rule whose metric reads this evidence.")
    cause: list[DispatchCause] = Field(default_factory=list, description="The cause the trace shows for a path change (layout, dtype, mask).")


class MechanismShare(Record):
    """What one mechanism carries of the measured latency change."""

    mechanism: Mechanism
    ms: float
    share: float | None = Field(description="ms / the measured change; None when the change is zero.")
    positive_ms: float = Field(0.0, description="Sum of this mechanism's parts that grew (ms >= 0).")
    negative_ms: float = Field(0.0, description="Sum of this mechanism's parts that shrank (ms < 0): ms = positive_ms + negative_ms.")
    largest: str | None = Field(description="The part that carries the most of it.")
    parts: int
    against: list[str] = Field(
        default_factory=list, description="When the share is past 100% of the change: what moves the other way, largest "
        "first: the other mechanisms (by value) whose share has the opposite sign, 'unattributed' when the unattributed "
        "rest does, and this mechanism's own parts that do ('own parts'). It over-explains the change by what they pull back."
    )


class Attribution(Record):
    """The measured latency change split into parts, each attributed to a mechanism by its evidence."""

    base_p50_ms: float
    cand_p50_ms: float
    delta_ms: float = Field(description="Candidate p50 - baseline p50 of the whole-forward latency.")
    parts: list[AttributedPart]
    mechanisms: list[MechanismShare] = Field(description="Largest share of the change (in its direction) first.")
    unattributed_ms: float = Field(description="The change no part carries, or that parts without mechanism evidence carry.")
    growth_significant: bool | None = Field(
        None, description="The latency samples judged a loss by the one rule (core.judgement): None when too few to judge."
    )
    on_trace_clock: bool = Field(
        False, description="Untraced latencies (--latency) judge the outcome; the parts, and this split, stay on the "
        "trace's own clock (its per-iteration latencies), where the layers and gaps were measured."
    )
    untraced_delta_ms: float | None = Field(
        None, description="With --latency: candidate p50 - baseline p50 of the untraced latencies, beside delta_ms (traced)."
    )
    busy_residual_ms: float | None = Field(
        None,
        description="The change of busy time that the layers' kernel timings do not carry (ops outside the layers, or "
        "kernels timed apart from the forward): part of unattributed_ms. None without busy time on both sides.",
    )

    def share_of(self, mechanism: Mechanism) -> MechanismShare | None:
        """The share ``mechanism`` carries, if any part was attributed to it."""
        return next((m for m in self.mechanisms if m.mechanism == mechanism), None)


class MechanismScore(Record):
    """One mechanism's total score and place in the ranking."""

    mechanism: Mechanism
    rank: int
    score: float
    attributed_ms: float | None = Field(None, description="What the mechanism carries of the measured latency change (attribution).")
    attributed_share: float | None = Field(None, description="attributed_ms / the measured latency change.")
    status: Literal["supported", "not_supported", "unknown"] = Field(
        description="supported: a rule fired; not_supported: evaluated, none fired; unknown: no rule could be evaluated."
    )
    rules_fired: int
    rules_evaluated: int
    rules_missing: int


# What a fix does, as a code (render/ words it).
FixAction = Literal[
    "cuda_graph", "convert_once", "set_threads", "batch_calls", "isolate_run", "make_contiguous", "cast_back",
    "drop_attn_mask", "drop_dropout", "restore_head_dim", "exclude_layer", "pad_shape", "cast_layer", "block_size",
    "set_precision", "rule_recipe", "check_sparse_kernel", "restore_neighbour_path", "lock_clocks", "pin_cpu_governor",
    "raise_reuse", "keep_precision",
]


# What figure the time a fix removes comes from: the changed layers' kernel-time change (math attention, another
# path), the host-gap growth over the baseline, the per-call conversion time, the dense-fallback time.
MovementBasis = Literal["math_path_time", "changed_path_time", "host_gap_growth", "conversion_time", "fallback_time"]

# The one capture that would settle a mechanism that is not established: a clock log with its UTC offset, an Nsight
# Compute report of the changed kernels, both sides re-traced under a CUDA graph (host overhead removed), a trace with
# per-layer annotations and shapes, more measured iterations.
SettleCapture = Literal["aligned_clock_log", "ncu_report", "cuda_graph_retrace", "annotated_trace", "more_repeats"]


# What a fix's targets can share besides a dispatch cause: the reason they fall back to dense, or weights converted on
# every call.
SharedCause = FallbackReason | Literal["per_call_conversion"]


def is_dispatch_cause(cause: CauseCode | SharedCause) -> TypeGuard[CauseCode]:
    """Whether a target's cause is one the dispatcher saw (layout, dtype, mask ...), not a fallback reason or a conversion."""
    return not isinstance(cause, FallbackReason) and cause in get_args(CauseCode)


class FixTarget(Record):
    """One group of a fix's targets: the layers that share one cause, and the tensors of each it names."""

    cause: CauseCode | SharedCause = Field(
        description="What the layers share: a dispatch cause the trace shows (layout, dtype, mask ...), the reason they "
        "fall back to dense (a layer fix: pad, cast or exclude every one of them), or weights converted on every call "
        "(the conversion knob converts them all once)."
    )
    layers: list[str]
    tensors: list[str] = Field(default_factory=list, description="Tensor roles (query, key, value, input ...) the cause names.")
    removes_ms: float | None = Field(
        None, description="The group's kernel-time change per iteration that the fix removes (None: not measured, e.g. a "
        "fallback found on one run)."
    )
    restore: str | None = Field(None, description="The baseline value the fix restores (the dtype, for a dtype change).")


class Fix(Record):
    """The smallest reversible change that would test the winning mechanism."""

    kind: Literal["knob", "layer", "block", "advice"]
    knob: str | None = Field(None, description="Workload knob to change (kind=knob): conversion, precision, threads.")
    value: str | int | None = Field(None, description="New knob value, or block size for kind=block.")
    layer: str | None = Field(None, description="Layer to change (kind=layer, or kind=block for one layer; None = all).")
    action: Literal["exclude", "pad", "cast"] | None = Field(
        None, description="For kind=layer: exclude from sparsity, pad to an aligned shape, or cast to dtype ``value``."
    )
    metric: str = Field(
        description="The metric the change should move: a name ``measure_metric`` computes on a run "
        "(latency_p50_ms, busy_p50_ms, span_busy_ratio, max_rel_err, or a rule metric such as fallback_flop_share)."
    )
    direction: Literal["down", "up"]
    rule: str = Field(description="The rule whose evidence suggested this change.")
    code: FixAction | None = Field(None, description="What the fix does, as a code; None on records from before codes.")
    targets: list[FixTarget] = Field(
        default_factory=list, description="Every layer and tensor sharing the cited cause, grouped by cause (dispatch fixes)."
    )
    removes_ms: float | None = Field(None, description="Per-iteration time the fix removes, from the figure named by basis.")
    basis: MovementBasis | None = Field(None, description="Where removes_ms comes from.")
    was: str | int | None = Field(None, description="The value the change replaces (the block size V before, for kind=block).")
    names_layer: str | None = Field(None, description="A layer the advice names without changing only it (the knob is workload-wide).")
    layer_role: Literal["changed", "largest_error"] | None = Field(
        None, description="Why names_layer is named: its precision changed, or it has the largest numeric error."
    )


class Proof(Record):
    """What proves the winner: the input it comes from and the evidence in it (render/ words it)."""

    artifact: str = Field(description="The input that proves it: the run's artifact, or the attached ncu / nvidia-smi file.")
    rule: str | None = Field(None, description="The fired rule whose evidence proves it (ranked by score: the winner's strongest; "
                             "by attribution: the rule behind the largest part, when it fired).")
    part: str | None = Field(None, description="Ranked by attribution: the part (attribution.parts[].part) that carries the most.")
    part_kind: Literal["kernel", "gap", "conversion"] | None = None


class Classification(Record):
    """Scores of all five mechanisms, ranked, with evidence, the winner, its proof and its test."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["classification"] = "classification"
    run: str
    baseline: str | None = None
    inputs: list[str] = Field(default_factory=list, description="Artifacts this classification read.")
    scores: list[MechanismScore]
    evidence: list[Evidence]
    missing_evidence: list[MissingEvidence]
    winner: Mechanism | None
    margin: float | None = Field(
        None, description="Winner's score (or attributed ms, when ranked by attribution) divided by the runner-up's "
        "(a ratio, not a difference); None when no other mechanism scored."
    )
    ranked_by: Literal["attribution", "score"] = Field(
        "score", description="attribution: the winner carries the largest measured share of the latency change; "
        "score: no measured change to attribute, the rule scores rank."
    )
    attribution: Attribution | None = None
    established: bool | None = Field(
        None, description="True: the winner carries at least HEADLINE_MIN_SHARE of the measured change and HEADLINE_MIN_RATIO "
        "times the runner-up's share; False: a change was measured that no mechanism carries that clearly (winner None, "
        "leading and settle say the rest); None: no measured growth to weigh (the rule scores rank)."
    )
    leading: Mechanism | None = Field(None, description="When not established: the mechanism that carries the most of the change.")
    settle: SettleCapture | None = Field(None, description="When not established: the one capture that would settle it.")
    proof: Proof | None = Field(None, description="What proves the winner (None without a winner).")
    fix: Fix | None
    roofline: Roofline | None = None
    layers: list[LayerIntensity] = Field(default_factory=list)

    def evidence_for(self, mechanism: Mechanism) -> list[Evidence]:
        """Evidence lines for ``mechanism``, fired first, strongest first."""
        lines = [e for e in self.evidence if e.mechanism == mechanism]
        return sorted(lines, key=lambda e: (not e.fired, -e.contribution))

    def missing_for(self, mechanism: Mechanism) -> list[MissingEvidence]:
        """Missing-evidence entries for ``mechanism``."""
        return [m for m in self.missing_evidence if m.mechanism == mechanism]


class NcuEvidence(Record):
    """What classification needs of one kernel in an Nsight Compute report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kernel_class: KernelClass
    sm_pct: float | None
    mem_pct: float | None
    spill_requests: float | None
    duration_us: float | None


class SmiEvidence(Record):
    """What classification needs of an nvidia-smi log."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    samples: int
    busy_samples: int
    throttled_busy_samples: int
    throttle_reasons: dict[str, int]
    min_busy_sm_clock_mhz: float | None
    max_sm_clock_mhz: float | None
    max_clock_source: str
    has_reasons: bool = True
    aligned: bool = Field(True, description="False: the log could not be placed on the run's time axis (no UTC offset, or no run window): context only.")
    window: Note | None = Field(
        None, description="Which samples were taken (the run's own window, how the log's clock was placed), or why none could be."
    )
    utc_offset_h: float | None = Field(None, description="The log clock's offset from UTC the samples were placed with; None when it could not be placed.")
    utc_offset_source: UtcOffsetSource | None = None
    utc_offsets_aligned: list[float] = Field(default_factory=list, description="Searched (no offset given or recorded): every real UTC offset under which the log covers every run's window (one: used; several: ambiguous; none: the log covers no run's window at any offset).")


class Roofline(Record):
    """A machine's compute and bandwidth ceilings, and where they came from."""

    device: str
    source: Literal["calibration", "peak_table"]
    reference: str = Field(description="The peak table's reference for the GPU, or the calibration's method.")
    named_as: str | None = Field(None, description="The GPU name the peak table was looked up with (peak_table only).")
    peak_gflops: float
    bandwidth_gbps: float
    dtype: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte at which the machine turns from memory- to compute-bound."""
        return self.peak_gflops / self.bandwidth_gbps


class LayerIntensity(Record):
    """One layer placed on the roofline."""

    name: str
    path: Literal["dense", "sparse"]
    flops: float = Field(description="FLOPs the chosen path executes (N/M of the dense FLOPs on the sparse path).")
    bytes: float = Field(description="Bytes the chosen path moves (compressed weights on the sparse path, when recorded).")
    intensity: float
    bound: Literal["memory", "compute"]
    attainable_ms: float
    measured_ms: float | None = None
    roofline_fraction: float | None = None
