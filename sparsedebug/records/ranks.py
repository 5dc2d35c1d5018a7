"""Multi-rank runs: one compact summary per rank of a job, and what comparing two sets of ranks found.

A run set is the traces of every rank of one job (a directory, a glob or a list). Each rank is
parsed on its own (a worker process, or a Dask worker) into a :class:`RankSummary` of a few
kilobytes, so no process ever holds the events of more than one rank; the comparison works on
the summaries only.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, SCHEMA_VERSION, Record
from sparsedebug.records.notes import Note

# Where a rank number came from: the trace's ``distributedInfo``, a number in its file name, or list order.
RankSource = Literal["distributedInfo", "file name", "order"]


class LayerTime(Record):
    """One layer's median per-call kernel time on one rank, and the path it ran."""

    name: str
    p50_ms: float
    path: str = Field(description="'sparse' or 'dense', as the trace importer classed the layer's kernels.")


class Collective(Record):
    """One communication (NCCL) kernel of a rank, on the rank's own clock."""

    name: str
    start_ms: float = Field(description="Start, ms from the rank's first GPU op.")
    dur_ms: float
    since_previous_ms: float | None = Field(
        None, description="Start minus the end of the rank's previous collective: compute before arriving (None for the first)."
    )


class RankSummary(Record):
    """What the set analysis needs of one rank's trace."""

    rank: int
    rank_source: RankSource
    world_size: int | None = None
    file: str
    device: str | None = None
    steps: int = Field(description="Iterations (profiler steps) the importer found.")
    step_samples_ms: list[float] = Field(description="Per-iteration span (first GPU op to last), ms.")
    step_p50_ms: float | None = Field(None, description="Median of step_samples_ms; None without iterations.")
    busy_ms: float = Field(description="Union of all GPU activity per iteration (median of iterations when known, else mean).")
    compute_ms: float = Field(description="Union of non-communication GPU activity per iteration.")
    communication_ms: float = Field(description="Union of communication kernels per iteration.")
    overlap_ms: float = Field(description="Communication time overlapped by compute per iteration.")
    idle_ms: float = Field(description="Span minus busy per iteration.")
    layers: list[LayerTime] = Field(default_factory=list)
    collectives: list[Collective] = Field(default_factory=list, description="Instances of the dominant collective, in order.")
    dominant_collective: str | None = Field(None, description="The communication kernel name with the most total time.")


class RankSet(Record):
    """Every rank of one job, summarised."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["rank_set"] = "rank_set"
    source: str = Field(description="The directory, glob or list the set was read from.")
    ranks: list[RankSummary]
    executor: str = Field(description="What parsed the ranks: 'local processes (N workers)', 'in process' or the Dask scheduler.")


class Straggler(Record):
    """The rank that arrives last at the dominant collective."""

    rank: int
    collective: str
    late_ms: float = Field(description="Median over collective instances of its arrival after the median rank's.")
    last_share: float = Field(description="Share of the instances at which it arrived last.")
    instances: int


class RankChange(Record):
    """One rank's candidate against its own baseline rank."""

    rank: int
    step_ratio: float | None = Field(description="Candidate / baseline median iteration span.")
    compute_ratio: float | None = Field(description="Candidate / baseline compute time per iteration.")
    communication_ratio: float | None = None
    path_changes: list[str] = Field(default_factory=list, description="Layers whose path changed (sparse -> dense, dense -> sparse).")
    slowest_layers: list[str] = Field(default_factory=list, description="Layers whose kernel time grew most on this rank.")


class RankComparison(Record):
    """Two run sets compared rank to rank: the straggler on each side, and where the change lives."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["rank_comparison"] = "rank_comparison"
    baseline: str
    candidate: str
    ranks: int
    changes: list[RankChange]
    baseline_straggler: Straggler | None = None
    candidate_straggler: Straggler | None = None
    confined_to: list[int] = Field(default_factory=list, description="Ranks whose compute changed while the others did not (empty: uniform or none).")
    uniform: bool = Field(description="Whether the compute change is the same on every rank (within the spread of the ranks).")
    walked_rank: int = Field(description="The rank pair the five-stage walk compares: the confined rank whose compute grew most, else the candidate straggler, else the lowest rank.")
    findings: list[Note] = Field(default_factory=list, description="One coded fact per finding ('locate.ranks.*'), each from the figures above.")
