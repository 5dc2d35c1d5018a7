"""Build the report sections of the review document once from a bundle's records (``records.report``).

Every figure report.md, report.html and the terminal print about latency, layers, fallbacks and the reality check
is computed here, by the functions of ``signoff.metrics`` that own it, and stored in the document: a renderer
reads it and computes nothing.
"""

from __future__ import annotations

from sparsedebug.core.stats import median, percentiles
from sparsedebug.locate.lower import sparse_use
from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.report import BackendStack, CollectedMetrics, LayerRow, Report, RunFigures, RunReport
from sparsedebug.records.run import KernelPath, RunRecord
from sparsedebug.signoff.metrics import (
    fallback_summary,
    latency,
    layer_rows,
    p50_speedup,
    reality_figures,
    run_clock,
    speedup_basis,
)
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.registry import replayed


def run_figures(role: str, run: RunRecord, base: RunRecord | None = None) -> RunFigures:
    """One run's figures (``records.report.RunFigures``): its clock, latency percentiles, speedup over ``base`` (the
    baseline itself: 1.0), median forward and budget; every output reads them here."""
    from sparsedebug.sources.workload.lowering import PROFILES

    profile = PROFILES.get(run.lower.backend)
    sched = run.schedule
    dense = run.outcome.dense_baseline_samples_ms
    return RunFigures(
        role=role, run=run.name, backend=run.lower.backend, clock=run_clock(run), replayed=replayed(run),
        profile_target=profile.target if profile is not None else None, latency=latency(run),
        dense_baseline=percentiles(dense) if dense else None,
        speedup=p50_speedup(base, run) if base is not None else None,
        speedup_basis=speedup_basis(base, run) if base is not None else None,
        busy_ms=median(sched.busy_samples_ms) if sched.busy_samples_ms else None,
        span_ms=median(sched.span_samples_ms) if sched.span_samples_ms else None,
        budget_ms=run.outcome.budget_ms, sparse_use=sparse_use(run), stacks=backend_stacks(run),
    )


def backend_stacks(run: RunRecord) -> list[BackendStack]:
    """Each sparse backend the run's trace dispatched to, with the shipped stack profile and path that know it."""
    from sparsedebug.sources.stacks import stack_for_backend

    rt = run.source.runtime
    out = []
    for backend in rt.sparse_backends if rt is not None else []:
        match = stack_for_backend(backend)
        if match is None:
            out.append(BackendStack(backend=backend))
            continue
        profile, path = match
        out.append(BackendStack(backend=backend, profile=profile.name, title=profile.title, package=profile.package, path=path.id,
                                measured_at=list(path.versions.measured_at)))
    return out


def collected_metrics(run: RunRecord, layers: list[LayerRow]) -> CollectedMetrics:
    """The playbook's metrics to collect from one run: kernel time by class (else the sparse path's share of the layers'
    time), sparse metadata over value bytes, and the weights re-converted on every call."""
    busy = sum(run.kernel.by_class_ms.values())
    shares = {k: v / busy for k, v in sorted(run.kernel.by_class_ms.items(), key=lambda kv: -kv[1])} if busy > 0 else {}
    total = sum(r.time_ms or 0.0 for r in layers)
    sparse = sum(r.time_ms or 0.0 for r in layers if r.path == KernelPath.SPARSE.value)
    on_sparse = [lo for lo in run.lower.layers if lo.path == KernelPath.SPARSE]
    converting = [lo for lo in run.lower.layers if lo.conversions_per_call > 0]
    return CollectedMetrics(
        class_shares=shares, sparse_time_share=sparse / total if not shares and total > 0 else None,
        metadata_bytes=sum(lo.metadata_bytes or 0 for lo in on_sparse), value_bytes=sum(lo.value_bytes or 0 for lo in on_sparse),
        converting_layers=len(converting),
        conversion_ms_per_forward=sum((lo.conversion_ms or 0.0) * lo.conversions_per_call for lo in converting),
    )


def run_report(role: str, run: RunRecord, base: RunRecord, decision: DecisionOutcome | None) -> RunReport:
    """The sections of one judged run: its default gate (from ``decision``, when given), layer matrix, dense-fallback
    impact, reality check and the metrics the playbook asks to collect."""
    layers = layer_rows(run)
    return RunReport(role=role, gate=decision.gates.get(role) if decision is not None else None, layers=layers,
                     fallback=fallback_summary(run, base), reality=reality_figures(base, run),
                     collected=collected_metrics(run, layers))


def build_report(b: LoadedBundle, decision: DecisionOutcome) -> Report:
    """Every report section of a bundle with its decision, as data."""
    base = b.baseline
    roles = [("candidate", b.candidate)] + ([("fixed", b.fixed)] if b.fixed is not None else [])
    return Report(
        latency=[run_figures("baseline", base, base), *(run_figures(role, run, base) for role, run in roles)],
        runs=[run_report(role, run, base, decision) for role, run in roles],
        baseline_layers=layer_rows(base),
        energy=b.energy,
        comparability=b.bisect.comparability if b.bisect is not None else None,
    )
