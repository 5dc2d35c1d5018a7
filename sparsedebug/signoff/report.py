"""Build the report sections of the review document once from a bundle's records (``records.report``).

Every figure report.md, report.html and the terminal print about latency, layers, fallbacks and the reality check
is computed here, by the functions of ``signoff.metrics`` that own it, and stored in the document: a renderer
reads it and computes nothing.
"""

from __future__ import annotations

from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.report import LatencyRow, Report, RunReport
from sparsedebug.records.run import RunRecord
from sparsedebug.signoff.metrics import fallback_summary, latency, layer_rows, p50_speedup, reality_figures, run_clock
from sparsedebug.sources.bundle import LoadedBundle


def latency_row(role: str, run: RunRecord, base: RunRecord) -> LatencyRow:
    """One run's whole-forward latency row: percentiles, the speedup over ``base``."""
    return LatencyRow(role=role, run=run.name, latency=latency(run), speedup=p50_speedup(base, run),
                      budget_ms=run.outcome.budget_ms, clock=run_clock(run))


def run_report(role: str, run: RunRecord, base: RunRecord, decision: DecisionOutcome) -> RunReport:
    """The sections of one judged run: its default gate, layer matrix, dense-fallback impact and reality check."""
    return RunReport(role=role, gate=decision.gates.get(role), layers=layer_rows(run), fallback=fallback_summary(run, base),
                     reality=reality_figures(base, run))


def build_report(b: LoadedBundle, decision: DecisionOutcome) -> Report:
    """Every report section of a bundle with its decision, as data."""
    base = b.baseline
    roles = [("candidate", b.candidate)] + ([("fixed", b.fixed)] if b.fixed is not None else [])
    return Report(
        latency=[latency_row("baseline", base, base), *(latency_row(role, run, base) for role, run in roles)],
        runs=[run_report(role, run, base, decision) for role, run in roles],
        energy=b.energy,
        comparability=b.bisect.comparability if b.bisect is not None else None,
    )
