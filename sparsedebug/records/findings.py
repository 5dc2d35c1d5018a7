"""The records of step 2 (locate): what bisect found per stage, and which layers changed kernel path.

``BisectResult`` is what ``sparsedebug bisect --json`` prints and what the bundle keeps as
``bisect.json``; ``FallbackReport`` is what ``sparsedebug fallbacks --json`` prints. Both are
top-level records on :class:`~sparsedebug.records.base.Record` (unknown keys refused); the
bisect result carries ``schema_version``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.comparability import Comparability
from sparsedebug.records.notes import Note
from sparsedebug.records.run import DispatchCause, LatencyTiming, SparsityIntent
from sparsedebug.records.stats import SampleComparison

# What one stage showed: a divergence, an improvement, declared intent only, nothing, too few samples, or no
# comparison possible.
StageStatus = Literal["divergent", "improved", "expected", "same", "undecided", "not_comparable"]

# The answer of a bisect: a first divergent stage, no regression, or too few samples to say.
BisectState = Literal["divergence", "no_regression", "undecided"]


# The index placeholder of a pooled group's name (``locate.common.group_key``): never printed, ``group_label`` reads it.
_PLACEHOLDER = "{i}"


def group_label(name: str, members: Sequence[str]) -> str:
    """A pooled group's name for the reader: each ``{i}`` of ``group_key`` becomes the indices its members hold there,
    as ranges (``layers.{i}.mlp.up_proj`` of layers 0 to 3 -> ``layers.[0-3].mlp.up_proj``); a name that is no group is
    returned as it is, a group none of whose members fit it reads ``*`` there: the placeholder is never returned."""
    if _PLACEHOLDER not in name:
        return name
    pattern = re.compile("^" + r"(\d+)".join(re.escape(part) for part in name.split(_PLACEHOLDER)) + "$")
    found = [m.groups() for m in (pattern.match(member) for member in members) if m is not None]
    if not found:
        return name.replace(_PLACEHOLDER, "*")
    parts = name.split(_PLACEHOLDER)
    out = parts[0]
    for i, tail in enumerate(parts[1:]):
        values = sorted({int(g[i]) for g in found})
        out += (str(values[0]) if len(values) == 1 else f"[{index_ranges(values)}]") + tail
    return out


def index_ranges(values: list[int]) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``0-3,7``."""
    spans: list[list[int]] = []
    for v in values:
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


class LayerFinding(Record):
    """One per-layer (or per pooled layer group) observation in a stage."""

    stage: str
    layer: str = Field(description="Layer name, or a pooled group such as 'layers.{i}.mlp.down_proj'.")
    members: list[str] = Field(default_factory=list, description="Layers pooled into this finding, when a group.")
    kind: str = Field(description="added, removed, changed, intended, fallback, path_changed, per_call_conversion, new_kernel_class, slower, faster, precision, idle_grew, idle_shrank")
    regression: bool
    intended: bool = False
    facts: Note = Field(description="What this finding rests on, by code: 'locate.finding.<kind>' with its figures and names.")
    reason: str | None = Field(None, description="Fallback reason, for kind 'fallback'.")
    delta_ms: float | None = Field(None, description="Change per iteration (cand - base, medians) carried by this finding.")
    comparison: SampleComparison | None = None
    base_backend: str | None = Field(None, description="Kind 'path_changed': the backend the baseline's trace shows (flash, cudnn, cublas, ...).")
    cand_backend: str | None = Field(None, description="Kind 'path_changed': the candidate's backend.")
    cause: list[DispatchCause] = Field(default_factory=list, description="Kind 'path_changed': what the dispatcher saw differently (layout, dtype, mask, dropout).")

    @property
    def label(self) -> str:
        """The finding's layer, or its pooled group with the members' indices (``group_label``), as a reader sees it."""
        return group_label(self.layer, self.members)


class MetricFinding(Record):
    """A whole-run metric compared on its raw samples."""

    metric: str
    comparison: SampleComparison
    facts: Note | None = Field(None, description="What the metric measures, by code ('locate.metric.<metric>'), with its figures.")
    latency_timing: LatencyTiming | None = Field(
        None, description="latency_ms of imported runs: traced (profiler on) or untraced (--latency); the candidate's when they differ."
    )
    traced_host_wait_share: float | None = Field(
        None, description="Set when a traced run is host-bound: the largest share of its span the GPU waited on the host "
        "(at least locate.outcome.HOST_BOUND_SHARE): the profiler's own cost per op is in its latency.",
    )


class StageFinding(Record):
    """What one stage showed."""

    stage: str
    status: StageStatus
    facts: list[Note] = Field(default_factory=list, description="The stage's summary as coded facts, in the order they are told.")
    unstable: str | None = Field(None, description="Set when the runs' timings were unstable: the runs whose timings were (core.timing.unstable_runs), comma-separated.")
    metrics: list[MetricFinding] = Field(default_factory=list)
    layers: list[LayerFinding] = Field(default_factory=list)

    @property
    def headline(self) -> MetricFinding | None:
        """The stage's main metric, when it has one."""
        return self.metrics[0] if self.metrics else None


class RankedLayer(Record):
    """A layer's share of the outcome change (per iteration, from medians)."""

    layer: str
    contribution_ms: float = Field(description="Change of this layer's kernel plus idle time per iteration (cand - base).")
    kernel_ms: float
    idle_ms: float
    share: float | None = Field(description="contribution / outcome latency change; None when the outcome did not move.")
    involved: bool = Field(description="Named by a finding of the first divergent stage.")


class BisectResult(Record):
    """The first persistent divergent stage and the evidence for it (``bisect.json``)."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    base: str
    cand: str
    state: BisectState
    first_stage: str | None
    stages: list[StageFinding]
    layers: list[RankedLayer]
    effect_metric: str | None = None
    effect: SampleComparison | None = Field(None, description="Effect size with CI of the first stage's metric (the outcome's when the stage is categorical).")
    outcome: SampleComparison | None = None
    outcome_delta_ms: float | None = None
    explains: list[str] = Field(default_factory=list, description="Downstream stages whose change the first divergence explains.")
    unexplained: list[str] = Field(
        default_factory=list, description="Downstream stages that diverged too but changed more than twice what the first divergence changed."
    )
    first_change_ms: float | None = Field(None, description="The first divergence's change per iteration (its headline metric, else its layers').")
    accounted_share: float | None = Field(None, description="Share of the outcome change carried by the layers the first divergence names.")
    reference: Note | None = Field(
        None, description="How far this machine itself moved between two replays (their shared dense reference); changes within it are not findings."
    )
    verdict: list[Note] = Field(default_factory=list, description="The answer as coded facts: 'locate.verdict.*' notes, the first one naming the state.")
    comparability: Comparability | None = Field(None, description="The comparability check the pair passed (what was allowed to differ, notes).")

    def stage(self, name: str) -> StageFinding:
        """The finding of stage ``name``."""
        for finding in self.stages:
            if finding.stage == name:
                return finding
        raise KeyError(name)

    def group_label(self, group: str) -> str:
        """A layer or pooled group any stage found, as its finding reads (``LayerFinding.label``)."""
        return next((f.label for s in self.stages for f in s.layers if f.layer == group), group_label(group, []))

    @property
    def effect_label(self) -> str | None:
        """``effect_metric`` as a reader sees it: ``stage:group`` with the group labelled by its members."""
        if self.effect_metric is None or ":" not in self.effect_metric:
            return self.effect_metric
        stage, group = self.effect_metric.split(":", 1)
        return f"{stage}:{self.group_label(group)}"


class PathChange(Record):
    """One layer whose kernel path differs between baseline and candidate."""

    layer: str
    base_class: str | None
    cand_class: str | None
    base_path: str
    cand_path: str
    base_classes: list[str] = Field(default_factory=list)
    cand_classes: list[str] = Field(default_factory=list)
    cand_intended: SparsityIntent | None
    declared_sparse: bool
    unintended: bool
    base_ms: float | None = Field(None, description="Baseline median per-call kernel time of the layer.")
    cand_ms: float | None = Field(None, description="Candidate median per-call kernel time of the layer.")
    base_backend: str | None = Field(None, description="Kind 'path_changed': the backend the baseline's trace shows (flash, cudnn, cublas, ...).")
    cand_backend: str | None = Field(None, description="Kind 'path_changed': the candidate's backend.")
    cause: list[DispatchCause] = Field(default_factory=list, description="Kind 'path_changed': what the dispatcher saw differently (layout, dtype, mask, dropout).")
    precision: str | None = Field(
        None, description="Set when the change also changed the layer's precision (core.patterns.precision_changes, the list "
        "the gate and classify read): 'fp16 -> fp32 (dense_tc_gemm -> fp32_gemm)', 'attention -> fp32_gemm'."
    )


class DenseFallback(Record):
    """A candidate layer declared sparse that ran dense."""

    layer: str
    intended: SparsityIntent
    reason: str | None
    kernel_class: str | None


class FallbackReport(Record):
    """Every path change between two runs, the unintended ones, and the candidate's dense fallbacks."""

    base: str
    cand: str
    matched_layers: int
    changed: list[PathChange]
    unintended: list[PathChange]
    dense_fallbacks: list[DenseFallback]
    only_in_base: list[str]
    only_in_cand: list[str]
    by_class_ms_base: dict[str, float] = Field(default_factory=dict)
    by_class_ms_cand: dict[str, float] = Field(default_factory=dict)
