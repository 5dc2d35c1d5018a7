"""The decision a walk ends in: ship, bounded rollout, rollback, escalate or no change, with its reasons.

Computed once, from the bundle's records, when the bundle is written (and stored as
``decision.json``); every renderer reads the stored record instead of deciding again.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.core.errors import InternalError
from sparsedebug.core.judgement import judgement_of
from sparsedebug.records.comparability import LaunchMode
from sparsedebug.records.decision import DecisionCode, DecisionOutcome, Refusal
from sparsedebug.records.gate import GatePolicy, GateResult
from sparsedebug.records.playbook import Playbook
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import SampleComparison
from sparsedebug.signoff.gate import evaluate, judge_speed, machine_slowness
from sparsedebug.signoff.metrics import has_fallback_evidence, has_quality_evidence
from sparsedebug.sources.bundle import LoadedBundle

# Who owns the proposed change, by the winning mechanism.
MECHANISM_OWNER = {
    "compute": "compiler_sparsity_pass_owner",
    "memory": "serving_performance_owner",
    "scheduling": "serving_performance_owner",
    "precision": "model_optimization_lead",
    "thermal": "accelerator_architecture_owner",
}

# Who owns the proposed change, by what the change touches (``records.classification.FixAction``), after the
# playbook's accountabilities: the runtime, launches and conversion policy (serving performance); lowering and dense
# fallbacks (compiler sparsity pass); kernels, clocks and power (accelerator architecture); the model's own code,
# dtypes and pruning (model optimization). A fix kind not listed falls back on the winning mechanism's owner.
FIX_OWNER: dict[str, str] = {
    **dict.fromkeys(("cuda_graph", "convert_once", "set_threads", "batch_calls", "isolate_run", "pin_cpu_governor"),
                    "serving_performance_owner"),
    **dict.fromkeys(("check_sparse_kernel", "restore_neighbour_path", "pad_shape"), "compiler_sparsity_pass_owner"),
    **dict.fromkeys(("block_size", "lock_clocks", "raise_reuse"), "accelerator_architecture_owner"),
    **dict.fromkeys(("make_contiguous", "drop_attn_mask", "drop_dropout", "restore_head_dim", "cast_back", "cast_layer",
                     "set_precision", "keep_precision", "exclude_layer"), "model_optimization_lead"),
}


def change_owner(code: str | None, winner: str | None) -> str | None:
    """The owner id of the proposed change: by what the fix touches (``FIX_OWNER``), else by the winning mechanism."""
    by_fix = FIX_OWNER.get(code) if code is not None else None
    return by_fix or (MECHANISM_OWNER.get(winner) if winner is not None else None)


def _judged_runs(bundle: LoadedBundle) -> list[tuple[str, RunRecord]]:
    return [("candidate", bundle.candidate)] + ([("fixed", bundle.fixed)] if bundle.fixed is not None else [])


def _ship_refusals(book: Playbook, final: RunRecord, gate: GateResult) -> list[Refusal]:
    """Why ship is refused: each evidence the playbook requires that is missing, and each failing gate check."""
    checks = {c.id: c for c in gate.checks}
    refused: list[Refusal] = []
    for need in book.decision("ship").requires:
        speed, quality = checks.get("effective_speedup"), checks.get("quality_delta")
        if need == "fallback_evidence" and not has_fallback_evidence(final):
            refused.append(Refusal(code="no_fallback_evidence"))
        elif need == "quality_evidence" and not has_quality_evidence(final):
            refused.append(Refusal(code="no_quality_evidence"))
        elif need == "speedup" and speed is not None and speed.status != "pass":
            refused.append(Refusal(code="speedup_not_passed", check=speed.id, status=speed.status))
        elif need == "quality_holds" and quality is not None and quality.status == "fail":
            refused.append(Refusal(code="quality_fails", check=quality.id, status=quality.status))
    for c in gate.checks:
        if c.status == "fail" and c.id not in ("effective_speedup", "quality_delta"):
            refused.append(Refusal(code="check_fails", check=c.id, status=c.status))
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
    escalates, each with its own code (``render.words.gate.decision_reasons`` words them).
    """
    final = bundle.fixed or bundle.candidate
    gates = {role: evaluate(bundle.baseline, run, policy or GatePolicy()) for role, run in _judged_runs(bundle)}
    gate = gates["fixed" if bundle.fixed is not None else "candidate"]
    checks = {c.id: c for c in gate.checks}
    refused = _ship_refusals(book, final, gate)
    failing = [c for c in gate.checks if c.status == "fail"]
    winner = getattr(bundle.classification, "winner", None)
    fix = bundle.fix
    speed_fail = checks.get("effective_speedup") is not None and checks["effective_speedup"].status == "fail"
    quality_fail = checks.get("quality_delta") is not None and checks["quality_delta"].status == "fail"
    missing = [r for r in refused if r.check is None]
    speed = speed_comparison(bundle.baseline, final, policy or GatePolicy())
    judged = judgement_of(speed) if speed is not None else None
    win = judged == "win" and checks.get("effective_speedup") is not None and not failing
    code: DecisionCode
    if not refused:
        decision, code = "ship", "passes"
    elif judged == "inconclusive" and not failing:
        decision, code = "escalate", "too_few_samples"
    elif unchanged(bundle) and not failing and judged != "win":
        decision, code = "no_change", "unchanged"
    elif fix is not None and fix.applied and fix.moved and not failing:
        decision, code = "bounded_rollout", "fix_moved_holds"
    elif win and missing and len(missing) == len(refused):
        decision, code = "bounded_rollout", "win_missing_evidence"
    elif winner is None and bundle.classification is not None:
        decision, code = "escalate", "no_mechanism"
    elif speed_fail or quality_fail:
        decision, code = "rollback", "worse_than_baseline"
    elif fix is None:
        decision, code = "bounded_rollout", "no_fix_needed"
    elif fix.applied and fix.moved:
        decision, code = "escalate", "fix_moved_checks_fail"
    elif fix.applied:
        decision, code = "escalate", "fix_did_not_move"
    else:
        decision, code = "escalate", "fix_not_applied"
    cls_fix = bundle.classification.fix if bundle.classification is not None else None
    owner = change_owner(cls_fix.code if cls_fix is not None else None, winner.value if winner is not None else None)
    return DecisionOutcome(
        decision=decision, code=code, judged_on="fixed candidate" if bundle.fixed is not None else "candidate",
        failing=[c.id for c in failing], ship_refused=refused, gate=gate, gates=gates, owner=owner,
        across_launch=across_launch(bundle.baseline, final), speed=speed, judgement=judged,
    )


def across_launch(baseline: RunRecord, judged: RunRecord) -> list[LaunchMode]:
    """The baseline's and the judged run's launch modes when they differ (a pair allowed with --allow-different launch,
    or a CUDA-graph fix's fixed run against an eager baseline): its speedups are then not like for like."""
    from sparsedebug.locate.comparable import launch_of

    base, run = launch_of(baseline), launch_of(judged)
    return [base, run] if base is not None and run is not None and base != run else []


def unchanged(bundle: LoadedBundle) -> bool:
    """Bisect found no regression and every stage it could compare the same as the baseline (an A/A pair: a run
    against a copy of itself, or a re-run of the same build; a CUDA-graph trace's graph stage cannot be compared, its
    layers being kernel names): no fixed run, nothing to decide on but that nothing changed."""
    bis = bundle.bisect
    return (bundle.fixed is None and bis is not None and bis.state == "no_regression"
            and any(stage.status == "same" for stage in bis.stages)
            and all(stage.status in ("same", "not_comparable") for stage in bis.stages))


def speed_comparison(baseline: RunRecord, judged: RunRecord, policy: GatePolicy) -> SampleComparison | None:
    """The judged run's latency against the baseline's by the one rule (``core.judgement``, the policy's
    ``significance``), as the gate's speed check judges it; None without latency samples on both."""
    if not baseline.outcome.latency_samples_ms or not judged.outcome.latency_samples_ms:
        return None
    return judge_speed(baseline, judged, policy.significance, drift=machine_slowness(baseline, judged))


# Decisions that fail `playbook run --check`.
FAILING_DECISIONS: tuple[str, ...] = ("rollback", "escalate")

# Bundle roles whose records the decision reads; their digests are stored with it.
DECIDED_ON: tuple[str, ...] = ("baseline", "candidate", "fixed", "bisect", "classification", "fix")


def decision_inputs(bundle: LoadedBundle, written: Mapping[str, str] | None = None) -> dict[str, str]:
    """sha256 of every bundle file the decision reads, by file name (files absent are left out); ``written``: the
    sha256 by role of the records a walk has just written, so that none is read back."""
    from sparsedebug.core.io import file_digest

    out: dict[str, str] = {}
    for role in DECIDED_ON:
        path = bundle.path(role)
        if path is not None and written is not None and role in written:
            out[path.name] = written[role]
        elif path is not None and path.is_file():
            out[path.name] = file_digest(path).sha256
    return out


def decide_bundle(
    bundle: LoadedBundle, book: Playbook, policy: GatePolicy | None = None, written: Mapping[str, str] | None = None
) -> DecisionOutcome:
    """:func:`decide`, with the digests of the records it was taken on (so a later edit is noticed); ``written`` as
    :func:`decision_inputs`."""
    return decide(bundle, book, policy).model_copy(update={"based_on": decision_inputs(bundle, written)})


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
