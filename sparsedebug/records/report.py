"""The report sections of the review document: the figures report.md, report.html and the terminal print, computed
once by ``sparsedebug.signoff.report`` from a bundle's records.

Each section is data, never words: the latency table (one row per run, its percentiles and its one speedup), each
judged run's default gate, supported-layer matrix, dense-fallback impact and sparse reality check, the energy report
and the comparability check the pair passed. A renderer turns them into words and draws their figures. The per-run
figures (``RunFigures``, ``LayerRow``, ``FallbackSummary``, ``RealityFigures``, ``BackendStack``, ``Clock``) are
defined in ``records.figures`` and re-exported here.
"""

from __future__ import annotations

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.comparability import Comparability
from sparsedebug.records.energy import EnergyReport
from sparsedebug.records.figures import BackendStack, Clock, FallbackSummary, LayerRow, RealityFigures, RunFigures
from sparsedebug.records.gate import GateResult

# The per-run figures live in ``records.figures`` (a run's clock label imports none of the gate, energy and bundle records).
__all__ = ["BackendStack", "Clock", "CollectedMetrics", "FallbackSummary", "LayerRow", "RealityFigures", "Report", "RunFigures", "RunReport"]


class CollectedMetrics(Record):
    """The playbook's metrics to collect, as far as the run's record carries them (computed once, by the report builder)."""

    class_shares: dict[str, float] = Field(default_factory=dict, description="Share of kernel time per kernel class, largest "
                                           "first (empty without per-class kernel time).")
    sparse_time_share: float | None = Field(None, description="Share of the layers' kernel time on the sparse path, where "
                                            "no per-class time is recorded (None: no layer timing).")
    metadata_bytes: int = Field(0, description="Sparse-path layers' metadata bytes.")
    value_bytes: int = Field(0, description="Sparse-path layers' value bytes.")
    converting_layers: int = Field(0, description="Layers that re-convert their weights on every call.")
    conversion_ms_per_forward: float = Field(0.0, description="Their conversion time per forward, in ms.")

    @property
    def metadata_share(self) -> float | None:
        """Metadata bytes over value bytes (None without value bytes)."""
        return self.metadata_bytes / self.value_bytes if self.value_bytes else None


class RunReport(Record):
    """The sections of one judged run (candidate, or fixed): its default gate, layer matrix, fallbacks, reality check."""

    role: str
    gate: GateResult | None = Field(None, description="The default gate of this run against the baseline.")
    layers: list[LayerRow] = Field(default_factory=list, description="The supported-layer matrix, in graph order.")
    fallback: FallbackSummary
    reality: RealityFigures | None = Field(None, description="None when no layer declares an N:M pattern.")
    collected: CollectedMetrics | None = Field(None, description="The playbook's metrics to collect (None on documents "
                                               "from before they were kept).")


class Report(Record):
    """Every section of a bundle's deployment report, as data."""

    latency: list[RunFigures] = Field(description="Every run, baseline first, then candidate and fixed.")
    runs: list[RunReport] = Field(description="The judged runs: candidate, then fixed.")
    baseline_layers: list[LayerRow] = Field(default_factory=list, description="The baseline's layer rows (the page draws them "
                                            "beside the judged runs').")
    energy: EnergyReport | None = None
    comparability: Comparability | None = Field(None, description="The comparability check the pair passed (bisect).")

    def run(self, role: str) -> RunReport | None:
        """The sections of the judged run in ``role``."""
        return next((r for r in self.runs if r.role == role), None)

    def figures(self, role: str) -> RunFigures | None:
        """The figures of the run in ``role``."""
        return next((r for r in self.latency if r.role == role), None)
