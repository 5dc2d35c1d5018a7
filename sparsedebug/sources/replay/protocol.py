"""The one interface between the replay engine and its two graph sources.

A *graph source* is what a workload's graph is made of: a declared graph
(:mod:`sparsedebug.sources.replay.synthetic`, seeded or loaded weights over the
layers the workload lists) or a real checkpoint
(:mod:`sparsedebug.sources.replay.checkpoint`, the model's own forward). The
driver (:mod:`sparsedebug.sources.replay.replay`) and the callers above it
(reduce, the walk, ``predict``) reach a workload's graph only through
:class:`GraphSource`; :func:`sparsedebug.sources.replay.sources.graph_source`
picks the source. Nothing outside the two sources asks which kind it holds.

A source answers cheap questions of the workload (its layer inventory for the
target projection, whether reduce may shrink it, how a layer fix applies) and,
for one timed replay, :meth:`GraphSource.prepare` gives a :class:`PreparedGraph`:
the graph and lower stages, per layer the calls the kernel stage times
(:class:`KernelCase`), the two whole forwards the schedule stage times
(:class:`ForwardPair`), the candidate's quality, and the narrowing for the
equal-latency comparison (:class:`Narrowing`). The driver does the timing, the
percentiles, the SLA verdict, both clocks and the equal-latency search once,
for both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sparsedebug.records.classification import Fix
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import GraphStage, LowerStage, QualityDelta, WorkloadRef
from sparsedebug.records.target import Launch, TargetClock
from sparsedebug.sources.target.model import LinearCall, OpCall
from sparsedebug.sources.workload.schema import Dtype, Layer, Workload

# ``progress(stage, done, total)``: called as each stage advances.
Progress = Callable[[str, int, int], None]

# One layer as the target cost model projects it.
TargetCall = LinearCall | OpCall


@dataclass(frozen=True)
class KernelCase:
    """One layer as the kernel stage times it, on the input it sees in the candidate forward."""

    name: str
    precision: Dtype
    kernel_class: str
    # One call of the chosen path's kernel alone: a per-call weight conversion is host work before the layer's
    # compute, timed apart (``lower.conversion_ms``) and counted in the host gap before the layer, outside busy time.
    chosen: Callable[[], object]
    # One call of the dense path (None for an op without a weight).
    dense: Callable[[], object] | None
    # ``(max_abs_err, rel_err)`` of the chosen path against an fp64 product of the same weights.
    errors: Callable[[], tuple[float, float]]


@dataclass(frozen=True)
class ScheduleParts:
    """What the schedule stage reads from the candidate forwards the harness kept, beside their spans."""

    busy_samples_ms: list[float]
    dense_share: float
    layer_idle_samples_ms: dict[str, list[float]]
    launches_per_iteration: int


class ForwardPair(Protocol):
    """The two whole forwards the schedule stage times, interleaved: the candidate (traced) and the dense baseline."""

    def candidate(self) -> object:
        """One traced forward of the candidate."""

    def dense(self) -> object:
        """One forward of the dense baseline."""

    def parts(self, span: list[float], kept: list[int]) -> ScheduleParts:
        """Busy time, dense share and per-layer host gaps of the candidate calls ``kept`` (0-based, warm-up counted)."""


class Narrowing(Protocol):
    """The dense model with a share of its FFN neurons removed: what the equal-latency comparison runs."""

    # How neurons are ranked, when the record should say so.
    importance: Note | None

    def forward(self, step: int) -> Callable[[], object]:
        """One forward of the dense model narrowed by ``step / FRACTION_STEPS`` (on this machine)."""

    def quality(self, step: int) -> QualityDelta:
        """Quality of that narrowed dense model against the dense one."""

    def target_dense_ms(self, step: int, launch: Launch) -> float | None:
        """Its whole forward on the target clock, projected (None without a target or a figure)."""

    def better(self, candidate: QualityDelta, narrowed: QualityDelta) -> bool:
        """Whether the candidate's quality beats the narrowed model's."""


class PreparedGraph(Protocol):
    """One workload made concrete for a timed replay: stages that need no timing, and what the timed stages run."""

    graph: GraphStage
    # Every layer and the whole forward projected onto the backend's GPU (None for a profile without one).
    target: TargetClock | None

    def lower(self, rounds: int | None) -> LowerStage:
        """The lower stage; with ``rounds``, each sparse layer's conversion timed."""

    def kernel_cases(self) -> list[KernelCase]:
        """Every layer the kernel stage times, in forward order."""

    def forwards(self) -> ForwardPair:
        """The candidate and dense forwards of the schedule stage."""

    def candidate_quality(self) -> QualityDelta:
        """The candidate's output quality against the dense model."""

    def narrowing(self) -> Narrowing | None:
        """The equal-latency model (None when the graph has no FFN to narrow)."""

    def reference(self, workload_file: FileDigest | None) -> tuple[list[FileDigest], WorkloadRef]:
        """The files the run depends on and what produced it (workload file, weights, knobs)."""


class GraphSource(Protocol):
    """A workload's graph: a declared one or a real checkpoint (see the module docstring)."""

    workload: Workload

    @property
    def shrinkable(self) -> bool:
        """Whether reduce may drop blocks and layers and narrow widths (a checkpoint's graph is fixed)."""

    @property
    def label(self) -> str:
        """The graph in a few words, for verdicts: ``graph of 12 layers``, ``model minilm-l6``."""

    def check_cost(self, repeats: int | None, source: str | None, *, timed: bool) -> None:
        """Refuse, before anything is allocated, a replay this machine cannot hold (or finish in time)."""

    def static_stages(self) -> tuple[GraphStage, LowerStage]:
        """Graph and lower stages without timing (``plan``, reduce's static probes)."""

    def layer_count(self) -> int:
        """Layers of the graph (a checkpoint's linears, not its override entries)."""

    def target_calls(self, paths: Mapping[str, str] | None = None, tokens: int | None = None) -> list[TargetCall]:
        """Every layer as a target call: linears on ``paths`` (default: as lowered), at ``tokens`` per forward."""

    def apply_layer_fix(self, fix: Fix) -> tuple[Workload | None, Note]:
        """A layer or block fix applied to a copy of the workload, or None and why it does not map."""

    def entry_text(self, layer: Layer) -> str:
        """How an added ``layers`` entry reads in reduce's list of changes."""

    def model_file(self) -> Path | None:
        """The checkpoint file the walk's fingerprint pins (None for a declared graph)."""

    def prepare(self, progress: Progress) -> PreparedGraph:
        """Graph and lower stages and everything the timed stages run (no timing yet)."""


def fix_is_advice(fix: Fix) -> Note:
    """A fix that does not map onto the workload: advice, by the rule and action code that proposed it."""
    return note("targets.fix_is_advice", rule=fix.rule, action=fix.code)
