"""The decision a walk ends in: ship, bounded rollout, rollback, escalate or no change, with its reasons.

Computed once, from the bundle's records, when the bundle is written (and stored as
``decision.json``); every renderer reads the stored record instead of deciding again.
"""

from __future__ import annotations

from sparsedebug.core.errors import InternalError
from sparsedebug.records.comparability import LaunchMode
from sparsedebug.records.decision import DecisionCode, DecisionOutcome
from sparsedebug.records.gate import GatePolicy, GateResult
from sparsedebug.records.playbook import Playbook
from sparsedebug.records.run import RunRecord
from sparsedebug.signoff.gate import evaluate
from sparsedebug.signoff.metrics import has_fallback_evidence, has_quality_evidence, p50_speedup
from sparsedebug.sources.bundle import LoadedBundle

# Who owns the proposed change, by the winning mechanism.
MECHANISM_OWNER = {
    "compute": "compiler_sparsity_pass_owner",
    "memory": "serving_performance_owner",
    "scheduling": "serving_performance_owner",
    "precision": "model_optimization_lead",
    "thermal": "accelerator_architecture_owner",
}


def _judged_runs(bundle: LoadedBundle) -> list[tuple[str, RunRecord]]:
    return [("candidate", bundle.candidate)] + ([("fixed", bundle.fixed)] if bundle.fixed is not None else [])


def _ship_refusals(book: Playbook, final: RunRecord, label: str, gate: GateResult) -> list[str]:
    """Why ship is refused: each evidence the playbook requires that is missing, and each failing gate check."""
    checks = {c.id: c for c in gate.checks}
    refused: list[str] = []
    for need in book.decision("ship").requires:
        if need == "fallback_evidence" and not has_fallback_evidence(final):
            refused.append(f"no fallback evidence: the {label} lacks a lowering decision with reason for every layer")
        elif need == "quality_evidence" and not has_quality_evidence(final):
            refused.append(f"no quality evidence: the {label} carries no quality measurement against the dense model")
        elif need == "speedup" and checks.get("effective_speedup") is not None:
            if checks["effective_speedup"].status != "pass":
                refused.append(f"effective speedup check {checks['effective_speedup'].status}: {checks['effective_speedup'].detail}")
        elif need == "quality_holds" and checks.get("quality_delta") is not None:
            if checks["quality_delta"].status == "fail":
                refused.append(f"quality guardrail fails: {checks['quality_delta'].detail}")
    for c in gate.checks:
        if c.status == "fail" and c.id not in ("effective_speedup", "quality_delta"):
            refused.append(f"gate check {c.id} fails: {c.detail}")
    return refused


def decide(bundle: LoadedBundle, book: Playbook, policy: GatePolicy | None = None) -> DecisionOutcome:
    """Ship, bounded rollout, rollback, escalate or no change, from the bundle's evidence.

    Judged on the fixed run when there is one, else the candidate. A candidate that ship refuses and that bisect
    finds the same as the baseline in every stage, with no failing gate check and no measured win (an A/A pair),
    is ``no_change``. ``ship`` needs
    the gate to pass and both fallback and quality evidence in the judged run.
    Otherwise: a fix that measurably moved its metric with no failing check, or a
    measured win (faster than the baseline, no failing check) that lacks only
    evidence, goes to ``bounded_rollout`` naming the evidence to capture; no winning
    mechanism escalates; a judged run that fails the speed or quality check rolls
    back; an applied fix that did not move its metric, or a fix not applied,
    escalates, each saying which.
    """
    final = bundle.fixed or bundle.candidate
    label = "fixed candidate" if bundle.fixed is not None else "candidate"
    gates = {role: evaluate(bundle.baseline, run, policy or GatePolicy()) for role, run in _judged_runs(bundle)}
    gate = gates["fixed" if bundle.fixed is not None else "candidate"]
    checks = {c.id: c for c in gate.checks}
    refused = _ship_refusals(book, final, label, gate)
    failing = [c for c in gate.checks if c.status == "fail"]
    winner = getattr(bundle.classification, "winner", None)
    reasons: list[str] = []
    fix = bundle.fix
    speed_fail = checks.get("effective_speedup") is not None and checks["effective_speedup"].status == "fail"
    quality_fail = checks.get("quality_delta") is not None and checks["quality_delta"].status == "fail"
    missing = [r for r in refused if r.startswith("no ")]
    win = measured_win(bundle.baseline, final) and checks.get("effective_speedup") is not None and not failing
    failed_text = "; ".join(f"gate check {c.id} fails: {c.detail}" for c in failing)
    code: DecisionCode
    launch = across_launch(bundle.baseline, final)
    if not refused:
        reasons.append(f"the {label} passes every gate check with fallback and quality evidence in the bundle")
        decision, code = "ship", "passes"
    elif unchanged(bundle) and not failing and not measured_win(bundle.baseline, final):
        reasons.append(f"the {label} does not differ from the baseline in any stage beyond noise and no gate check fails: "
                       "there is no change to roll back or escalate")
        decision, code = "no_change", "unchanged"
    elif fix is not None and fix.applied and fix.moved and not failing:
        q = checks.get("quality_delta")
        holds = "speed and quality" if q is not None and q.status == "pass" else "speed (quality not measured)"
        reasons.append(f"the bounded fix moved {fix.target or 'its target metric'} and the {label} holds {holds}, "
                       "but ship is refused until the evidence below is in")
        decision, code = "bounded_rollout", "fix_moved_holds"
    elif win and missing and len(missing) == len(refused):
        speed = checks["effective_speedup"]
        reasons.append(
            f"the {label} is a measured win ({speed.measured}) with no failing gate check, but "
            + "; ".join(m.split(": ", 1)[0][3:] + " is missing" for m in missing)
            + f": capture {_capture_text(missing)} before shipping"
        )
        decision, code = "bounded_rollout", "win_missing_evidence"
    elif winner is None and bundle.classification is not None:
        what = failed_text or "the gate finds no measured win"
        reasons.append(f"no mechanism won the classification and {what}: the evidence does not single out a cause")
        decision, code = "escalate", "no_mechanism"
    elif speed_fail or quality_fail:
        worse = " and ".join(w for w, bad in (("slower", speed_fail), ("worse in quality", quality_fail)) if bad)
        recovered = " even after the bounded fix" if fix is not None and fix.applied else " and no fix was applied"
        failed = "; ".join(checks[i].detail for i, bad in (("effective_speedup", speed_fail), ("quality_delta", quality_fail)) if bad)
        reasons.append(f"the {label} is {worse} than the baseline allows{recovered} ({failed})")
        decision, code = "rollback", "worse_than_baseline"
    elif fix is None:
        q = checks.get("quality_delta")
        holds = "speed and quality" if q is not None and q.status == "pass" else "speed (quality not measured)"
        reasons.append(f"no fix was needed and the {label} holds {holds}, but ship is refused until the evidence below is in")
        decision, code = "bounded_rollout", "no_fix_needed"
    elif fix.applied and fix.moved:
        reasons.append(f"the bounded fix moved {fix.target or 'its target metric'}, but {failed_text}")
        decision, code = "escalate", "fix_moved_checks_fail"
    elif fix.applied:
        reasons.append(f"the applied fix did not move {fix.target or 'its target metric'} ({fix.how}) and the evidence is incomplete")
        decision, code = "escalate", "fix_did_not_move"
    else:
        reasons.append(f"the proposed fix was not applied, so nothing shows it removes the cause: {fix.how}")
        decision, code = "escalate", "fix_not_applied"
    reasons += [f"its speedup over the baseline is across launch modes ({launch[0]} baseline vs {launch[1]} {label}): not like for like"] if launch else []
    owner = MECHANISM_OWNER.get(winner.value) if winner is not None else None
    return DecisionOutcome(decision=decision, code=code, judged_on=label, reasons=reasons, ship_refused=refused, gate=gate, gates=gates, owner=owner,
                           across_launch=launch)


def across_launch(baseline: RunRecord, judged: RunRecord) -> list[LaunchMode]:
    """The baseline's and the judged run's launch modes when they differ (a pair allowed with --allow-different launch,
    or a CUDA-graph fix's fixed run against an eager baseline): its speedups are then not like for like."""
    from sparsedebug.locate.comparable import launch_of

    base, run = launch_of(baseline), launch_of(judged)
    return [base, run] if base is not None and run is not None and base != run else []


def unchanged(bundle: LoadedBundle) -> bool:
    """Bisect found no regression and every stage the same as the baseline (an A/A pair: a run against a copy of
    itself, or a re-run of the same build): no fixed run, nothing to decide on but that nothing changed."""
    bis = bundle.bisect
    return (bundle.fixed is None and bis is not None and bis.state == "no_regression" and bool(bis.stages)
            and all(stage.status == "same" for stage in bis.stages))


def measured_win(baseline: RunRecord, judged: RunRecord) -> bool:
    """The judged run's p50 latency is below the baseline's (both measured)."""
    speedup = p50_speedup(baseline, judged)
    return speedup is not None and speedup > 1.0


_CAPTURES = {
    "quality": "a quality measurement of the candidate against the dense model (replay the workload, or `sparsedebug quality`)",
    "fallback": "a lowering decision with its reason for every layer (an annotated trace, or a replay)",
}


def _capture_text(missing: list[str]) -> str:
    """The artifacts that settle the missing-evidence refusals, in words."""
    return " and ".join(text for key, text in _CAPTURES.items() if any(m.startswith(f"no {key} evidence") for m in missing)) or "the evidence named below"


# Decisions that fail `playbook run --check`.
FAILING_DECISIONS: tuple[str, ...] = ("rollback", "escalate")

# Bundle roles whose records the decision reads; their digests are stored with it.
DECIDED_ON: tuple[str, ...] = ("baseline", "candidate", "fixed", "bisect", "classification", "fix")


def decision_inputs(bundle: LoadedBundle) -> dict[str, str]:
    """sha256 of every bundle file the decision reads, by file name (files absent are left out)."""
    from sparsedebug.core.io import file_digest

    out: dict[str, str] = {}
    for role in DECIDED_ON:
        path = bundle.path(role)
        if path is not None and path.is_file():
            out[path.name] = file_digest(path).sha256
    return out


def decide_bundle(bundle: LoadedBundle, book: Playbook, policy: GatePolicy | None = None) -> DecisionOutcome:
    """:func:`decide`, with the digests of the records it was taken on (so a later edit is noticed)."""
    return decide(bundle, book, policy).model_copy(update={"based_on": decision_inputs(bundle)})


def with_decision(bundle: LoadedBundle, book: Playbook, policy: GatePolicy | None = None) -> LoadedBundle:
    """The bundle with its decision: the stored one while the records it was taken on are unchanged;
    otherwise (a bundle from before decisions were stored, or records edited since) decided again,
    naming the changed files. Renderers read ``bundle.decision`` only."""
    stored = bundle.decision
    if stored is not None and stored.based_on == decision_inputs(bundle):
        return bundle
    changed = sorted(set(stored.based_on.items()) ^ set(decision_inputs(bundle).items())) if stored is not None else []
    fresh = decide_bundle(bundle, book, policy)
    fresh = fresh.model_copy(update={"recomputed": sorted({name for name, _ in changed})})
    return bundle.model_copy(update={"decision": fresh})


def stored_decision(bundle: LoadedBundle) -> DecisionOutcome:
    """The bundle's decision record; an internal error when a renderer is handed a bundle without one."""
    if bundle.decision is None:
        raise InternalError("bundle has no decision record: pass it through signoff.decide.with_decision first")
    return bundle.decision
