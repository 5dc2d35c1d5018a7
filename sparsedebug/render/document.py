"""The review document of a bundle as the bundle renderers read it (``LoadedBundle.memo``, built once by
``sparsedebug.signoff.memo.build_memo``): its report sections, and each run's figures by role or by run."""

from __future__ import annotations

from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.memo import Memo
from sparsedebug.records.report import Report, RunFigures, RunReport
from sparsedebug.records.run import RunRecord


def review(bundle: LoadedBundle) -> Memo:
    """The bundle's review document (a ValueError for a bundle handed over without one: an internal error)."""
    if bundle.memo is None:
        raise ValueError(f"bundle {bundle.root}: no review document; build it with signoff.memo.with_review first")
    return bundle.memo


def report(bundle: LoadedBundle) -> Report:
    """The report sections of the bundle's review document."""
    doc = review(bundle)
    if doc.report is None:
        raise ValueError(f"bundle {bundle.root}: its review document holds no report sections")
    return doc.report


def role_of(bundle: LoadedBundle, run: RunRecord) -> str:
    """The role of one of the bundle's runs: baseline, candidate or fixed."""
    for role, candidate in (("fixed", bundle.fixed), ("candidate", bundle.candidate), ("baseline", bundle.baseline)):
        if candidate is run:
            return role
    raise ValueError(f"run {run.name} is not one of bundle {bundle.root}'s runs")


def figures(bundle: LoadedBundle, run: RunRecord | str) -> RunFigures:
    """The figures of one of the bundle's runs (given as the run or its role)."""
    role = run if isinstance(run, str) else role_of(bundle, run)
    found = report(bundle).figures(role)
    if found is None:
        raise ValueError(f"bundle {bundle.root}: no figures for role {role}")
    return found


def sections(bundle: LoadedBundle, role: str) -> RunReport:
    """The report sections of the judged run in ``role`` (candidate or fixed)."""
    found = report(bundle).run(role)
    if found is None:
        raise ValueError(f"bundle {bundle.root}: no report sections for role {role}")
    return found


def decision(bundle: LoadedBundle) -> DecisionOutcome:
    """The bundle's decision (``signoff.decide.with_decision``; a ValueError without one: an internal error)."""
    if bundle.decision is None:
        raise ValueError(f"bundle {bundle.root}: no decision record; pass it through signoff.decide.with_decision first")
    return bundle.decision
