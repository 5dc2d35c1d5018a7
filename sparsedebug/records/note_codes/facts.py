"""What a note code's declaration is made of (``NoteFacts``, ``Embed``), the closed sets of names some values take,
and the groups of values several codes share; the codes themselves are declared in the modules beside this one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import ConfigDict

from sparsedebug.records.base import Record


@dataclass(frozen=True)
class Embed:
    """Another note carried flat inside a note's values: its code under ``code_key``, each of its values under
    ``prefix`` + the value's name (``records.notes.embed`` writes ``<name>_code`` and ``<name>.<value>``)."""

    code_key: str
    prefix: str


def embedded(name: str) -> Embed:
    """The layout ``records.notes.embed(name, inner)`` writes."""
    return Embed(code_key=f"{name}_code", prefix=f"{name}.")


class NoteFacts(Record):
    """The values of the notes of the codes in ``CODES``: one field per value, by name, with its type.

    Strict: an int is not taken for a bool nor a str for a number, and a value no field names is refused.
    """

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    # The note codes whose values these are (empty for a base model that only groups values).
    CODES: ClassVar[tuple[str, ...]] = ()
    # Other notes these notes carry flat in their values.
    EMBEDS: ClassVar[tuple[Embed, ...]] = ()


# --- closed sets of names a value takes: each phrase words every member ---------------------------------------

# What a capture instruction asks for (``classify.context.Capture``; ``render.words.classify.CAPTURE_WORDS``).
Capture = Literal["smi", "ncu", "calibration", "trace", "baseline", "cpu_freq", "gpu_name", "replay", "replay_both",
                  "replay_baseline", "replay_error", "replay_quality", "replay_shapes", "replay_bytes", "replay_equivalent"]
# What a mechanism could not read, and from which run (``render.words.classify._NOT_RECORDED``).
NotRecorded = Literal["sparse_bytes", "tokens", "layer_work", "graph_bytes", "class_time", "rel_err", "precision_or_k", "quality"]
NotRecordedSide = Literal["run", "baseline", "run_or_baseline"]
# The kind of dispatch cause a trace shows for a path change (``core.dispatch.dispatch_causes``; ``records.run.DispatchCause``).
CauseCode = Literal["non_contiguous", "dtype_change", "attn_mask", "dropout", "head_dim"]
# Where a zone-less log's UTC offset came from: ``--smi-utc-offset``, a run's fingerprint, or the search over the real
# UTC offsets (``sources.importers.alignment.search_utc_offset``).
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
