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
__all__ = ["BackendStack", "Clock", "FallbackSummary", "LayerRow", "RealityFigures", "Report", "RunFigures", "RunReport"]


class RunReport(Record):
    """The sections of one judged run (candidate, or fixed): its default gate, layer matrix, fallbacks, reality check."""

    role: str
    gate: GateResult | None = Field(None, description="The default gate of this run against the baseline.")
    layers: list[LayerRow] = Field(default_factory=list, description="The supported-layer matrix, in graph order.")
    fallback: FallbackSummary
    reality: RealityFigures | None = Field(None, description="None when no layer declares an N:M pattern.")


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
