"""Step 4's record: the ddmin reduction of a good/bad workload pair to one focused reproducer."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, SCHEMA_VERSION, Record
from sparsedebug.records.findings import BisectResult

# The reduction phases, in the order they run.
Phase = Literal["check", "changes", "causes", "blocks", "layers", "tokens", "widths", "confirm"]


class FieldDiff(Record):
    """One field that differs: its name, the good workload's value and the bad one's (None: absent on that side)."""

    field: str
    was: str | None = None
    now: str | None = None


class Change(Record):
    """One difference between the good and the bad workload."""

    key: str = Field(description="'knob:NAME' or 'layer:NAME'.")
    kind: Literal["knob", "layer"]
    name: str
    change: Literal["changed", "added", "removed"] = Field(description="A knob or layer that differs, or a layer added or removed.")
    diffs: list[FieldDiff] = Field(
        default_factory=list, description="What differs: the knob's value, each field of a changed layer, the entry of an added "
        "layer (field 'entry') or the op of a removed one (field 'op')."
    )


class ProbeLog(Record):
    """One probe: what was tried and what it showed."""

    phase: Phase
    description: str
    outcome: Literal["fail", "pass", "unresolved"]
    mode: Literal["static", "timed"]
    flaky: bool = False
    note: Literal["earlier_stage", "other_finding", "uncertain", "still_undecided"] | None = Field(
        None, description="Why the outcome is not a plain fail/pass: the pair diverges at an earlier stage, with another "
        "finding, or stays undecided after re-measuring.",
    )
    earlier_stage: str | None = Field(None, description="The earlier stage it diverges at (note earlier_stage).")
    invalid: str | None = Field(None, description="The variant could not be built: the first line of the error that refused it.")


class Cause(Record):
    """An independent cause (another finding of the target stage), reduced on its own."""

    finding: str
    kept: list[Change]


class ReduceResult(Record):
    """The focused reproducer and how it was found."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["reduce_result"] = "reduce_result"
    good: str
    bad: str
    reproduced: bool = Field(description="Whether the bad workload diverged from the good one at all.")
    confirmed: bool = Field(
        False,
        description="Whether a timed bisect of the reproducer against its baseline showed the same first stage and finding "
        "kind; repro_file and base_file are set only then.",
    )
    target_stage: str | None
    target_finding: str | None = Field(
        description="The finding reproduced: 'fallback:<reason>', 'per_call_conversion', 'slower:<layer role>', ... (None: the stage as a whole)."
    )
    changes: list[Change]
    kept: list[Change]
    other_causes: list[Cause] = Field(default_factory=list)
    repro_file: str | None = Field(None, description="The reproducer workload written (set only when confirmed).")
    base_file: str | None = Field(None, description="Its baseline workload, written beside it as <stem>.base.yaml.")
    layers_before: int
    layers_after: int | None = None
    tokens_before: int
    tokens_after: int | None = None
    probe_count: int = Field(0, description="Probes run: each compares one variant pair (static or timed).")
    replays: int = Field(description="Timed replays run (full five stages).")
    static_probes: int = Field(description="Static runs (graph and lowering only, no timing); repeated variants come from a cache.")
    flaky_probes: int
    probes: list[ProbeLog]
    confirmation: BisectResult | None = None
    command: str | None = None
    outcome: Literal["nothing_to_reduce", "not_reproduced", "reduced"]
    not_reproduced: BisectResult | None = Field(None, description="The last bisect of a pair that did not diverge (measured twice).")
    probe_repeats: int = Field(0, description="Repeats of each timed probe (twice this when re-measured).")
    graph_source: str | None = Field(None, description="The graph source of the bad workload (its label) when its graph is not shrinkable.")
    full_graph: bool = Field(False, description="Confirmed with the graph before shrinking: the shrunk one did not confirm.")
    max_probes: int = Field(0, description="The probe limit.")
    stopped_at_limit: bool = Field(False, description="The reduction stopped at max_probes.")
    targets: list[str] = Field(
        default_factory=list, description="Every layer of the bad workload whose finding shares the cause reproduced "
        "(target_finding, in the first bisect): the reproducer stands for each, and a fix for that cause covers them all. "
        "Empty when only one layer shows it (as TraceRepro.targets)."
    )
    targets_ms: float | None = Field(
        None, description="What those layers' findings change per iteration together (candidate - baseline; None when the "
        "finding is a graph or lowering one, which is not timed)."
    )


# Why the built-in replay can or cannot show a trace's divergence: its dtype has no replay kernel, the attention call
# dispatched to another backend, the replay's backend profile decides the layer dense (shows it) or runs it sparse
# (does not), the device waited on the host (no device in the replay), or the divergence is in GPU timings.
ReplayReason = Literal[
    "dtype_without_kernel", "attention_dispatch", "profile_falls_back", "profile_runs_sparse", "host_wait", "cpu_timing",
]


class TraceOperand(Record):
    """One tensor input of the blamed op as the trace recorded it."""

    role: str = Field(description="x, weight (linear); q, k, v (attention).")
    shape: list[int]
    stride: list[int]
    dtype: str


class TraceOpSide(Record):
    """The blamed op on one side of the trace pair: how it was called and the backend it dispatched to."""

    run: str
    op: str = Field(description="The op the model called (aten::linear, aten::scaled_dot_product_attention).")
    backend: str | None = Field(None, description="The backend the trace shows (cusparselt, cutlass_sparse, cublas, flash, cudnn, ...).")
    backend_op: str | None = None
    operands: list[TraceOperand]
    path: str = Field(description="sparse or dense, as the trace's kernels show it.")
    is_causal: bool | None = None
    dropout_p: float | None = None


class TraceRepro(Record):
    """The focused reproducer cut from an imported trace pair: the layer the verdict blames, as the traces recorded it."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["trace_repro"] = "trace_repro"
    layer: str = Field(description="The blamed layer (first member of the blamed group).")
    group: str = Field(description="The finding's layer or pooled group, e.g. 'layers.{i}.mlp.gate_proj'.")
    first_stage: str
    finding: str = Field(description="The finding kind the bisect blamed it for (idle_grew, slower, fallback, path_changed, ...).")
    mechanism: str | None = Field(None, description="The winning mechanism of the classification.")
    delta_ms: float | None = Field(None, description="The finding's change per iteration (candidate - baseline).")
    op_kind: Literal["linear", "attention"]
    pattern: str = Field(description="The candidate layer's declared sparsity ('2:4'; 'dense' for attention).")
    tokens: int
    candidate: TraceOpSide
    baseline: TraceOpSide | None = Field(None, description="The same layer in the baseline trace (the dense twin), when it has one.")
    device: str | None = None
    launch: Literal["eager", "cuda_graph"]
    backend_profile: str = Field(description="The replay backend profile the reproducer workload uses.")
    profile_target: str | None = Field(None, description="The GPU that profile's target clock projects onto (None: it models none).")
    replay_shows: bool = Field(description="Whether the built-in replay can show the trace's first divergent stage and mechanism.")
    replay_reason: ReplayReason = Field(description="Why the built-in replay of reproducer.yaml can or cannot show it.")
    replay_fallback: str | None = Field(None, description="The fallback reason the replay's backend profile decides for the layer, when it does.")
    files: dict[str, str] = Field(default_factory=dict, description="role -> file name in the bundle (workload, dense twin, script).")
    targets: list[str] = Field(
        default_factory=list, description="Every layer the fix's cause covers, this one among them (Fix.targets): the op "
        "reproduced stands for each (the same op, the same cause); empty when the fix names no set."
    )
    targets_ms: float | None = Field(None, description="What the fix removes per iteration across the targets (Fix.removes_ms).")
