"""The figures of one run that several outputs print, apart from the review document's sections (``records.report``).

A run's clock and latency figures (``RunFigures``), its supported-layer rows, its dense-fallback summary and its
sparse reality check: computed by ``signoff.metrics`` and ``signoff.report``. They live here, not in
``records.report``, so that a command that only labels its latencies' clock (``bisect``) imports none of the gate,
energy, bundle and classification records the whole document holds; ``records.report`` re-exports them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.basis import Basis
from sparsedebug.records.engine import SparseUse
from sparsedebug.records.notes import Note
from sparsedebug.records.run import SparsityIntent
from sparsedebug.records.stats import Percentiles

# measured: timed on the CPU that ran the replay; untraced: timed on the device with the profiler off (``--latency``);
# traced: a profiler trace's iterations (the profiler's cost is in them); profiled: an engine's per-layer profile;
# projected: onto the target GPU.
Clock = Literal["measured", "untraced", "traced", "profiled", "projected"]


class LayerRow(Record):
    """One layer joined across the graph, lower and kernel stages."""

    name: str
    op: str
    weight_shape: list[int] | None
    input_shape: list[int] | None
    dtype: str
    intended: SparsityIntent
    path: str | None
    reason: str | None
    detail: Note | None
    flops: float
    time_ms: float | None
    dense_time_ms: float | None
    precision: str | None
    rel_err: float | None
    conversions_per_call: int
    conversion_ms: float | None
    metadata_bytes: int | None
    value_bytes: int | None
    meant_sparse: bool = Field(description="The layer was declared (or inferred) as sparse (core.patterns.declared_sparse).")
    fell_back: bool = Field(description="Meant to be sparse but runs dense: a fallback (core.patterns.is_fallback).")

    @property
    def conversion_per_call_ms(self) -> float:
        """Time the layer spends re-converting its weights on every call (measured apart; 0 when converted once)."""
        if not self.conversions_per_call or self.conversion_ms is None:
            return 0.0
        return self.conversions_per_call * self.conversion_ms

    @property
    def call_ms(self) -> float | None:
        """Median time of one call as the forward makes it: the kernel (``time_ms``, which never holds a per-call
        conversion: ``records.run``) plus the per-call weight conversion timed apart."""
        if self.time_ms is None:
            return None
        return self.time_ms + self.conversion_per_call_ms


class FallbackSummary(Record):
    """How much of the model meant to be sparse actually runs dense, and what it costs."""

    meant_sparse: int
    fell_back: int
    rate: float | None
    reasons: dict[str, int]
    fallback_layers: list[str]
    dense_flop_share: float | None
    dense_time_share: float | None
    fallback_time_share: float | None
    fallback_flop_share: float | None = Field(description="FLOPs in fallbacks over FLOPs declared sparse (``core.patterns.fallback_flop_share``).")
    fallback_share_of_all_flops: float | None = Field(description="FLOPs in fallbacks over all FLOPs of the run.")
    sparse_kernel_speedup: float | None
    # How the speedup was measured, or why it was not (None: no layer meant sparse).
    sparse_kernel_speedup_source: Note | None
    amdahl_ceiling: float | None
    speedup_left_on_table: float | None


class RealityFigures(Record):
    """The figures of the sparse reality check: what the pattern promised against what the run got."""

    nominal: float = Field(description="The pattern's M/N (the largest over the run's declared patterns).")
    ceiling: float | None = Field(description="FallbackSummary.amdahl_ceiling: every meant-sparse layer at M/N.")
    real: float | None = Field(description="Baseline p50 / run p50; the run's own effective speedup without baseline samples.")
    fallback_time_share: float | None = Field(description="Share of kernel time in dense fallbacks.")
    dense_time_share: float | None = Field(description="Share of kernel time on dense paths.")


class BackendStack(Record):
    """A sparse backend a trace dispatched to, and the shipped stack profile and path whose kernels it names
    (``sources.stacks.stack_for_backend``; the profile fields None: no profile knows it)."""

    backend: str
    profile: str | None = Field(None, description="The stack profile's name (records.stacks.StackProfile.name).")
    title: str | None = Field(None, description="The stack profile's title.")
    package: str | None = Field(None, description="The package whose version the profile means.")
    path: str | None = Field(None, description="The sparse path's id in that profile.")
    measured_at: list[str] = Field(default_factory=list, description="The package versions the path's rules were measured at.")


class RunFigures(Record):
    """One run's figures as every output prints them: its clock, its whole-forward latency percentiles, its speedup
    over the baseline, its median forward (busy and span), its budget. Built by ``signoff.report.run_figures``."""

    role: str = Field(description="baseline, candidate or fixed (or the role a command gives a single run).")
    run: str = Field(description="The run's name.")
    backend: str = Field(description="The run's lowering backend (lower.backend).")
    clock: Clock = Field(description="The clock of the run's own timings (signoff.metrics.run_clock).")
    replayed: bool = Field(description="Timed here by the built-in replay (not an import or a loaded record).")
    profile_target: str | None = Field(None, description="The GPU the run's backend profile projects onto (None: it models none).")
    latency: Percentiles | None = Field(None, description="p50/p95/p99 of outcome.latency_samples_ms; None without samples.")
    dense_baseline: Percentiles | None = Field(None, description="p50/p95/p99 of outcome.dense_baseline_samples_ms (the dense "
                                               "model timed beside it); None without.")
    speedup: float | None = Field(None, description="signoff.metrics.p50_speedup over the baseline (the paired estimate when "
                                  "both were timed in one session); None without a baseline or samples on a side.")
    speedup_basis: Basis | None = Field(None, description="What speedup is taken over (signoff.metrics.speedup_basis): "
                                        "paired_rounds or per_forward (p50 over p50); None without a speedup.")
    busy_ms: float | None = Field(None, description="Median of schedule.busy_samples_ms (kernels or layers busy per forward).")
    span_ms: float | None = Field(None, description="Median of schedule.span_samples_ms (the whole forward's span).")
    budget_ms: float | None = None
    sparse_use: SparseUse | None = Field(None, description="Whether a TensorRT engine's sparse kernels ran (None: no engine facts).")
    stacks: list[BackendStack] = Field(default_factory=list, description="Each sparse backend the run's trace dispatched to.")
