"""Step 4's record: the ddmin reduction of a good/bad workload pair to one focused reproducer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import SCHEMA_VERSION, Record
from sparsedebug.records.findings import BisectResult

Phase = Literal["check", "changes", "causes", "blocks", "layers", "tokens", "widths", "confirm"]
"""The reduction phases, in the order they run."""


class Change(Record):
    """One difference between the good and the bad workload."""

    key: str = Field(description="'knob:NAME' or 'layer:NAME'.")
    kind: Literal["knob", "layer"]
    name: str
    detail: str


class ProbeLog(Record):
    """One probe: what was tried and what it showed."""

    phase: Phase
    description: str
    outcome: Literal["fail", "pass", "unresolved"]
    mode: Literal["static", "timed"]
    flaky: bool = False
    note: str = ""


class Cause(Record):
    """An independent cause (another finding of the target stage), reduced on its own."""

    finding: str
    kept: list[Change]


class ReduceResult(Record):
    """The focused reproducer and how it was found."""

    schema_version: int = SCHEMA_VERSION
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
    verdict: str
