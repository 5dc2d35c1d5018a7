"""Records of the target clock: latency projected onto the GPU a backend profile models.

A replay times this machine's numpy kernels; users deploy to a GPU. Every
latency therefore has a clock: ``this_machine`` (measured here) or ``target``
(projected from measurements of that GPU by
:mod:`sparsedebug.sources.target.model`). These records hold the projections:
per linear layer its dense and sparse time, host and GPU kept apart, each with
its provenance (the measured rows and traces it came from, or ``extrapolated``
outside the measured range, or ``estimate`` for non-linear ops); per forward the
dense and candidate totals and the speedup; and, for ``sparsedebug predict``,
the token count from which 2:4 pays off per shape.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.notes import Note

# Which clock a latency is on: measured on this machine, or projected onto the target GPU.
Clock = Literal["this_machine", "target"]

# How the target launches work: one host call per op (eager), or one replayed CUDA graph per forward.
Launch = Literal["eager", "cuda_graph"]

# How a projected figure was obtained, best first. ``measured``: the query is a measured point; ``interpolated``:
# between measured points; ``estimate``: a documented formula (bytes over an effective bandwidth measured on the
# target) rather than a timing of that op; ``extrapolated``: outside the measured range (a shape smaller or larger
# than every measured one, a token count beyond the rows, a dtype the ratio was not measured for); ``unavailable``: no
# data supports a figure (a dtype never measured, a backend whose sparse matmul raises).
Basis = Literal["measured", "interpolated", "estimate", "extrapolated", "unavailable"]

# What a projection claims about 2:4 on one layer: a win or a loss only where the speedup's 90% interval excludes 1.0.
Verdict = Literal["sparse wins", "sparse loses", "uncertain here"]

BASIS_ORDER: tuple[Basis, ...] = ("measured", "interpolated", "estimate", "extrapolated", "unavailable")


def worst_basis(bases: list[Basis]) -> Basis:
    """The least direct basis among ``bases`` (``measured`` for none)."""
    return max(bases, key=BASIS_ORDER.index, default="measured")


class Provenance(Record):
    """Where one projected figure came from."""

    basis: Basis
    sources: list[str] = Field(
        default_factory=list,
        description="The measured inputs used, each naming its file and row or trace layer (e.g. 'results.json gemm[15] ...').",
    )
    notes: list[Note] = Field(default_factory=list, description="How the figure was formed from the sources (coded facts).")


class PathTime(Record):
    """One path (dense or sparse) of one layer on the target clock: host and GPU kept apart."""

    gpu_ms: float = Field(description="GPU (kernel) time of one call.")
    host_ms: float = Field(description="Host time of one call under this launch mode (0 under a CUDA graph).")
    per_call_ms: float = Field(
        description=(
            "Time per call when calls follow each other: max(host, GPU) eager (the host prepares the next call "
            "while the GPU runs this one), GPU time under a CUDA graph. Host and GPU time are never added."
        )
    )
    gpu: Provenance
    host: Provenance
    basis: Basis = Field(description="Basis of the figure that sets per_call_ms (the larger of host and GPU, eager).")
    gpu_low_ms: float | None = Field(None, description="90% interval of gpu_ms (fit residuals and distance from measured points).")
    gpu_high_ms: float | None = None
    per_call_low_ms: float | None = Field(None, description="90% interval of per_call_ms.")
    per_call_high_ms: float | None = None
    decades_from_measured: float | None = Field(
        None, description="Distance (decades over log tokens, out, in) from the nearest measured GPU time of this path."
    )


class LayerProjection(Record):
    """One layer projected onto the target: dense and (where there is one) sparse path."""

    name: str
    op: str
    shape: list[int] | None = Field(None, description="(out, in) for linear layers.")
    tokens: int
    dtype: str
    path: Literal["dense", "sparse"] = Field(description="The path the layer takes in the candidate on this target.")
    dense: PathTime | None = Field(None, description="None when no figure can be projected (see notes).")
    sparse: PathTime | None = Field(None, description="None for non-linear ops and where the target has no sparse path.")
    speedup: float | None = Field(None, description="Dense per-call time / sparse per-call time, on the target clock.")
    speedup_low: float | None = Field(None, description="90% interval of the speedup: dense low / sparse high.")
    speedup_high: float | None = Field(None, description="Dense high / sparse low.")
    verdict: Verdict | None = Field(None, description="sparse wins / loses only where the speedup interval excludes 1.0.")
    measure: Note | None = Field(None, description="With 'uncertain here': what to measure on the target to settle it.")
    basis: Basis = Field(description="The least direct basis among the per-call figures of this layer.")
    notes: list[Note] = Field(
        default_factory=list, description="Why a path has no figure (no rows measured, sparse matmul raises, lowered dense)."
    )

    def chosen(self) -> PathTime | None:
        """The path time the candidate pays for this layer."""
        return self.sparse if self.path == "sparse" else self.dense


class ForwardTime(Record):
    """One whole forward on the target clock."""

    total_ms: float = Field(description="Whole-forward latency: GPU timeline end, host and GPU overlapped as launched.")
    gpu_ms: float = Field(description="Sum of GPU time of every layer.")
    host_ms: float = Field(description="Sum of host time of every layer (0 under a CUDA graph, plus the graph launch).")
    idle_ms: float = Field(description="total_ms - gpu_ms: GPU waiting for the host or between kernels.")


class ForwardProjection(Record):
    """The whole forward, dense baseline against the candidate, on the target clock."""

    launch: Launch
    dense: ForwardTime | None
    candidate: ForwardTime | None
    speedup: float | None = Field(None, description="Dense total / candidate total on the target clock.")
    speedup_low: float | None = Field(
        None, description="90% interval of the speedup: every linear layer at the end of its interval (non-linear ops at their estimate)."
    )
    speedup_high: float | None = None
    verdict: Verdict | None = Field(None, description="sparse wins / loses only where the speedup interval excludes 1.0.")
    basis: Basis
    extrapolated_layers: list[str] = Field(default_factory=list, description="Layers whose figures are extrapolated or unavailable.")
    missing_layers: list[str] = Field(default_factory=list, description="Layers with no figure on the target (no whole-forward total then).")


class SlowerThanDense(Record):
    """Lowering flag: a layer that takes the sparse path but is projected slower than dense on the target."""

    reason: Literal["slower_than_dense"] = "slower_than_dense"
    backend: str
    launch: Launch
    tokens: int
    dense_ms: float = Field(description="Projected dense per-call time on the target.")
    sparse_ms: float = Field(description="Projected sparse per-call time on the target.")
    basis: Basis


class LatencyMatch(Record):
    """An equal-latency search on one clock: the narrowing that matches the candidate's latency."""

    clock: Clock
    narrowed_ffn_fraction: float
    narrowed_latency_ms: float
    candidate_latency_ms: float
    latency_matched: bool


class TokenRange(Record):
    """Consecutive token counts with one verdict."""

    first: int
    last: int
    verdict: Verdict


class BreakEven(Record):
    """From which token count 2:4 pays off for one weight shape on the target."""

    shape: list[int]
    dtype: str
    launch: Launch
    tokens_from: int | None = Field(
        None,
        description=(
            "Smallest token count from which the speedup's 90% interval lies above 1.0 at every count up to "
            "searched_up_to; None where no such count is supported (never from an extrapolation the interval does not bear)."
        ),
    )
    loses_up_to: int | None = Field(None, description="Largest token count up to which the interval lies below 1.0 at every count.")
    uncertain_tokens: list[int] | None = Field(
        None, description="[first, last] token counts searched where the interval contains 1.0 (the verdict is 'uncertain here')."
    )
    central_crossing: int | None = Field(
        None, description="Smallest token count from which the central estimate stays above 1.0: shown, never claimed."
    )
    ranges: list[TokenRange] = Field(default_factory=list, description="Every token count from 1 to searched_up_to, by verdict.")
    searched_up_to: int
    basis: Basis = Field(description="extrapolated when the crossing lies outside the measured token range.")
    measure: Note | None = Field(None, description="What to measure on the target to settle the uncertain range.")
    notes: list[Note] = Field(default_factory=list, description="Why there is no search (basis unavailable); empty when ranges were searched.")


class TargetClock(Record):
    """What a replay records about the target: per layer and whole forward, projected."""

    clock: Literal["target"] = "target"
    backend: str
    device: str
    launch: Launch
    tokens: int
    method: str = Field(description="Which projection method (an id; see sparsedebug.sources.target.model.METHOD).")
    layers: list[LayerProjection]
    forward: ForwardProjection
    break_even: list[BreakEven] = Field(default_factory=list, description="Per distinct linear shape: from which tokens 2:4 pays off.")


class PredictAt(Record):
    """Every layer (or shape) and the total at one token count."""

    tokens: int
    layers: list[LayerProjection]
    forward: ForwardProjection


class PredictReport(Record):
    """``sparsedebug predict --json``: projected dense and sparse time on the target, with provenance."""

    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["predict"] = "predict"
    clock: Literal["target"] = "target"
    backend: str
    device: str
    launch: Launch
    workload: str | None = Field(None, description="Workload name when one was given.")
    method: str = Field(description="Which projection method (an id; see sparsedebug.sources.target.model.METHOD).")
    results: list[PredictAt]
    break_even: list[BreakEven]
