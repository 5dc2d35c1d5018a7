"""Build the memo model once from a bundle's records (or from one gate verdict); every output renders it.

Each figure is read from the record that owns it (the run records' samples, the bisect result, the
classification's attribution, the fix outcome's movements, the default gate on the judged run) and carries
where it came from. Nothing here writes words: the phrasing lives in ``sparsedebug.render.memo``.
"""

from __future__ import annotations

from sparsedebug.core.errors import UserError
from sparsedebug.core.patterns import kernel_named
from sparsedebug.core.stats import median
from sparsedebug.records.basis import per_iteration
from sparsedebug.records.bundle import Movement
from sparsedebug.records.classification import Classification, Fix
from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.gate import GateCheck, GateResult
from sparsedebug.records.memo import (
    HEADLINE_MIN_MARGIN,
    HEADLINE_MIN_SHARE,
    MEMO_SCHEMA_VERSION,
    Action,
    Claim,
    ClockLegend,
    Figure,
    Hypothesis,
    Memo,
    ResultRow,
    Signoff,
    Symptom,
)
from sparsedebug.records.notes import Note
from sparsedebug.records.playbook import Playbook
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import TAIL_MIN_SAMPLES
from sparsedebug.signoff.decide import stored_decision
from sparsedebug.signoff.invariants import SHARE_PAST_WHOLE, enforce
from sparsedebug.signoff.memo_engine import check_figures, model_label, sparse_kernels_claim
from sparsedebug.signoff.memo_engine import fig as _fig
from sparsedebug.signoff.memo_results import (
    CHECK_ORDER,
    beyond_limit,
    blockers,
    check_judgement,
    device_name,
    layer_set,
    missing_evidence,
    owner_terms,
    reasons,
    results,
    shared_cause_terms,
    speed_disturbed,
    undecided_why,
    with_fallback_layers,
    with_precision_changes,
    with_shared_cause,
)
from sparsedebug.signoff.memo_stage import first_stage_claim
from sparsedebug.signoff.metrics import SPEEDUP_FIELD, fallback_summary, p50_speedup, run_clock, speedup_basis
from sparsedebug.signoff.movement import expected_latency
from sparsedebug.signoff.report import build_report
from sparsedebug.signoff.tags import build_tags_claim
from sparsedebug.sources.bundle import FILES, LoadedBundle
from sparsedebug.sources.registry import input_kinds

# Memo section -> the anchor in report.md (and report.html) holding its full detail.
DETAIL_ANCHORS: dict[str, str] = {
    "symptom": "memo-detail-symptom",
    "mechanism": "memo-detail-mechanism",
    "action": "memo-detail-action",
    "signoff": "memo-detail-signoff",
    "gate": "correctness-quality-and-performance-matrix-default-gate-vs-the-baseline",
}



def _p50(role: str, run: RunRecord) -> Figure | None:
    samples = run.outcome.latency_samples_ms
    if not samples:
        return None
    return _fig("latency_p50_ms", median(samples), "ms", FILES[role], "outcome.latency_samples_ms (median)",
                role=role, clock=run_clock(run))


def _speedup(b: LoadedBundle, role: str) -> Figure | None:
    run = b.runs()[role]
    value = p50_speedup(b.baseline, run)
    if value is None:
        return None
    basis = speedup_basis(b.baseline, run)
    return _fig("speedup_p50", value, "x", FILES[role], SPEEDUP_FIELD[basis], role=role, clock=run_clock(run), basis=basis)



def _check_claim(check: GateCheck, run: RunRecord, role: str, book: Playbook | None) -> Claim:
    owner = owner_terms(book, [check.id]).get(f"owner.{check.id}", "") if book is not None else ""
    test = check.test
    figures = check_figures(check, run, role)
    if test is not None and test.kind == "too_few" and test.needed:
        figures.append(_fig("samples_needed", float(test.needed), "count", "gate policy",
                            f"checks[{check.id}].test.needed"))
    limits = {f"limit.{f.quantity}": f.direction for f in check.figures if f.limit is not None and f.direction is not None}
    # below TAIL_MIN_SAMPLES the tail check counts samples past the baseline's slowest: no p99 is stated as such
    few = check.id == "p99_latency" and test is not None and test.n_cand is not None and test.n_cand < TAIL_MIN_SAMPLES
    tail: dict[str, str] = {"tail": "few"} if few else {}
    return Claim(kind="reason", code=check.id, figures=figures,
                 terms={"status": check.status, "role": role, "on_inconclusive": check.on_inconclusive or "", "owner": owner,
                        "why": undecided_why(check) if check.status == "inconclusive" else "",
                        "judgement": check_judgement(check), "beyond_limit": ",".join(beyond_limit(check)), **limits, **tail})


def _check_claims(result: GateResult, run: RunRecord, role: str, book: Playbook | None = None) -> list[Claim]:
    order = {cid: i for i, cid in enumerate(CHECK_ORDER)}
    checks = sorted(result.checks, key=lambda c: order.get(c.id, len(order)))
    return [_check_claim(c, run, role, book) for c in checks]


def _symptom(b: LoadedBundle, rows: list[ResultRow]) -> Symptom:
    base, cand = b.baseline, b.candidate
    metric: list[Claim] = []
    figures = [f for f in (_p50("baseline", base), _p50("candidate", cand), _speedup(b, "candidate")) if f is not None]
    code = None
    outcome = next((m for m in b.bisect.stage("outcome").metrics), None) if b.bisect is not None and any(
        s.stage == "outcome" for s in b.bisect.stages) else None
    if outcome is not None and outcome.traced_host_wait_share is not None:
        code = "rests_on_traced"
        figures.append(_fig("traced_host_wait_share", outcome.traced_host_wait_share, "share", FILES["bisect"],
                            "stages[outcome].metrics[0].traced_host_wait_share"))
    cell = next((c for r in rows for c in r.cells if c.code == "speedup" and c.terms.get("role") == "candidate"), None)
    verdict = {k: cell.terms[k] for k in ("status", "why") if cell is not None and cell.terms.get(k)}  # the speed check's, as the table
    metric.append(Claim(kind="speedup", code=code, figures=figures, terms=verdict))
    if cand.target is not None and cand.target.forward.speedup is not None:
        fwd = cand.target.forward
        tf = [_fig("target_speedup", fwd.speedup, "x", FILES["candidate"], "target.forward.speedup", role="candidate", clock="projected")]  # type: ignore[arg-type]
        if fwd.candidate is not None:
            tf.append(_fig("target_forward_ms", fwd.candidate.total_ms, "ms", FILES["candidate"], "target.forward.candidate.total_ms",
                           role="candidate", clock="projected"))
        if fwd.dense is not None:
            tf.append(_fig("target_forward_ms", fwd.dense.total_ms, "ms", FILES["candidate"], "target.forward.dense.total_ms",
                           role="dense", clock="projected"))
        metric.append(Claim(kind="target_speedup", figures=tf, terms={"device": cand.target.device, "launch": cand.target.launch,
                                                                      "basis": cand.target.forward.basis}))
    used = sparse_kernels_claim(b)
    if used is not None:
        metric.append(used)
    q = cand.outcome.quality
    if q is not None:
        qf = [_fig("perplexity", q.perplexity, "perplexity", FILES["candidate"], "outcome.quality.perplexity", role="candidate")
              if q.perplexity is not None else
              _fig("cosine", q.cosine, "cosine", FILES["candidate"], "outcome.quality.cosine", role="candidate")]
        if q.dense_perplexity is not None:
            qf.append(_fig("perplexity", q.dense_perplexity, "perplexity", FILES["candidate"], "outcome.quality.dense_perplexity", role="dense"))
        metric.append(Claim(kind="quality", figures=qf, terms={"model": model_label(q.evidence.model) if q.evidence else ""}))
    else:
        metric.append(Claim(kind="quality", code="not_measured"))
    slice_terms = {"run": cand.name, "backend": cand.lower.backend, "source": cand.source.kind}
    what = next((k.what for k in input_kinds() if k.source == cand.source.kind), None)
    if what is not None:
        slice_terms["source_what"] = what.split(" (")[0]
    if q is not None and q.evidence is not None:
        slice_terms["model"] = model_label(q.evidence.model)
    if cand.workload is not None and cand.workload.seed is not None:
        slice_terms["seed"] = str(cand.workload.seed)
    slice_figs = [_fig("layers", len(cand.graph.layers), "count", FILES["candidate"], "graph.layers", role="candidate")]
    if cand.graph.tokens is not None:
        slice_figs.append(_fig("tokens", cand.graph.tokens, "count", FILES["candidate"], "graph.tokens", role="candidate"))
    return Symptom(failing_metric=metric, slice=Claim(kind="slice", figures=slice_figs, terms=slice_terms),
                   first_stage=first_stage_claim(b), build_tags=build_tags_claim(b))


def _share_figures(cls: Classification, mechanism: str) -> list[Figure]:
    att = cls.attribution
    if att is None:
        return []
    share = att.share_of(mechanism)  # type: ignore[arg-type]
    if share is None:
        return []
    out = [_fig("carried_ms", share.ms, "ms", FILES["classification"], "attribution.mechanisms[].ms", role=mechanism,
                clock=None)]
    if share.share is not None:
        out.append(_fig("carried_share", share.share, "share", FILES["classification"], "attribution.mechanisms[].share", role=mechanism))
    return out


def _against_term(cls: Classification, mechanism: str) -> dict[str, str]:
    """What pulls the other way from a share past 100% (``MechanismShare.against``), as a claim term; empty otherwise."""
    share = cls.attribution.share_of(mechanism) if cls.attribution is not None else None  # type: ignore[arg-type]
    return {"against": ",".join(share.against)} if share is not None and share.against else {}


def _hypothesis(b: LoadedBundle) -> Hypothesis:
    cls = b.classification
    if cls is None:
        return Hypothesis(primary=Claim(kind="primary_mechanism", code="not_classified"))
    att = cls.attribution
    delta = ([_fig("change_ms", att.delta_ms, "ms", FILES["classification"], "attribution.delta_ms")] if att is not None else [])
    if att is not None and att.on_trace_clock and att.untraced_delta_ms is not None:  # split on the trace's clock; untraced beside
        delta.append(_fig("untraced_change_ms", att.untraced_delta_ms, "ms", FILES["classification"], "attribution.untraced_delta_ms"))
    if att is not None and sum(max(m.share or 0.0, 0.0) for m in att.mechanisms) > SHARE_PAST_WHOLE and att.unattributed_ms * att.delta_ms < 0:
        # the mechanisms' shares add past the whole change: what no mechanism carries moved the other way
        delta.append(_fig("unattributed_ms", att.unattributed_ms, "ms", FILES["classification"], "attribution.unattributed_ms"))
    bis = b.bisect
    if bis is not None and bis.accounted_share is not None and att is not None:  # the first stage's share, beside the mechanism's
        delta.append(_fig("stage_share", bis.accounted_share, "share", FILES["bisect"], "accounted_share", role=bis.first_stage))
    ranked = sorted(cls.scores, key=lambda s: s.rank)
    if cls.winner is None and cls.leading is not None:
        primary = Claim(kind="primary_mechanism", code="not_established", figures=_share_figures(cls, cls.leading.value) + delta,
                        terms={"mechanism": cls.leading.value, "ranked_by": cls.ranked_by, "settle": cls.settle or "",
                               **_against_term(cls, cls.leading.value)})
    elif cls.winner is None:
        primary = Claim(kind="primary_mechanism", code="none", figures=delta, terms={"ranked_by": cls.ranked_by, "settle": cls.settle or ""})
    else:
        w = cls.winner.value
        figs = _share_figures(cls, w) + delta
        score = next(s for s in cls.scores if s.mechanism == cls.winner)
        if cls.ranked_by == "score":
            figs.append(_fig("score", score.score, "ratio", FILES["classification"], "scores[].score", role=w))
        established = _established(cls)
        unconfirmed = any(m.mechanism == cls.winner for m in cls.missing_evidence)  # only the timings stand behind it
        primary = Claim(kind="primary_mechanism", code="established" if established else "not_established", figures=figs,
                        terms={"mechanism": w, "ranked_by": cls.ranked_by, **_against_term(cls, w), **({"confirmed": "no"} if unconfirmed else {})})
    competing = []
    for s in ranked:
        name = s.mechanism.value
        if name == (cls.winner or cls.leading or "").__str__() and (cls.winner or cls.leading) is not None:
            continue
        figs = _share_figures(cls, name) if cls.ranked_by == "attribution" else [
            _fig("score", s.score, "ratio", FILES["classification"], "scores[].score", role=name)]
        competing.append(Claim(kind="competing_mechanism", code=s.status, figures=figs,
                               terms={"mechanism": name, "ranked_by": cls.ranked_by, **_against_term(cls, name)}))
    rules: dict[str, list[str]] = {}  # one claim per mechanism, however many captures it lacks
    for m in cls.missing_evidence:
        rules.setdefault(m.mechanism.value, []).extend(r for r in m.rules if r not in rules.get(m.mechanism.value, []))
    missing = [Claim(kind="missing_evidence", code=name, items=items) for name, items in rules.items()]
    return Hypothesis(primary=primary, competing=competing, missing=missing)


def _established(cls: Classification) -> bool:
    """The winner carries at least HEADLINE_MIN_SHARE of the change and HEADLINE_MIN_MARGIN times the runner-up
    (ranked by attribution); ranked by rule score, there is no measured share and the rule ranking stands."""
    if cls.ranked_by != "attribution" or cls.attribution is None or cls.winner is None:
        return cls.winner is not None
    shares = sorted((m.share or 0.0 for m in cls.attribution.mechanisms), reverse=True)
    top = cls.attribution.share_of(cls.winner)
    if top is None or top.share is None:
        return False
    runner = next((s for s in shares[1:]), 0.0)
    return top.share >= HEADLINE_MIN_SHARE and (runner <= 0 or top.share >= HEADLINE_MIN_MARGIN * runner)


def _expected(b: LoadedBundle, fix: Fix | None) -> tuple[Claim, Movement | None]:
    """The expected movement of the latency p50 (projected, or why not) and the fix's measured latency movement."""
    fo = b.fix
    lat = next((m for m in (fo.movements if fo else []) if m.metric == "latency p50"), None)
    clock = run_clock(b.candidate)
    # (before, expected after, the record that holds the projection, the code of what it stands on)
    projection: tuple[float, float, str, str] | None = None
    unprojected: tuple[Note, str] | None = None  # why there is no projection, and the record that says so
    if lat is not None and lat.expected_after is not None:
        basis = lat.expected_basis.code if lat.expected_basis is not None else ""
        projection = (lat.before, lat.expected_after, FILES["fix"], basis)
    elif lat is not None and lat.expected_basis is not None:
        unprojected = (lat.expected_basis, FILES["fix"])
    elif lat is None and fix is not None and b.candidate.outcome.latency_samples_ms:  # no re-run: project from the candidate alone
        after, basis_note = expected_latency(b.candidate, b.baseline, fix)
        if after is not None:
            projection = (median(b.candidate.outcome.latency_samples_ms), after, FILES["classification"], basis_note.code)
        else:
            unprojected = (basis_note, FILES["classification"])
    if projection is not None:
        before, after, source, basis = projection
        figs = [_fig("latency_p50_ms", before, "ms", FILES["candidate"], "outcome.latency_samples_ms (median)", role="candidate", clock=clock),
                _fig("latency_p50_ms", after, "ms", source, "movements[latency p50].expected_after", role="expected", clock=clock)]
        if before:
            figs.append(_fig("change", after / before - 1, "share", source, "movements[latency p50]", role="expected"))
        base_samples = b.baseline.outcome.latency_samples_ms
        graphed = fix is not None and fix.code == "cuda_graph"  # a graphed candidate over an eager baseline is no headline
        if base_samples and after > 0 and not graphed:  # what the projection makes of the headline: the speedup it would reach
            figs.append(_fig("speedup_p50", median(base_samples) / after, "x", source, "movements[speedup over baseline (p50)].expected_after",
                             role="expected", clock=clock, basis="per_forward"))
        expected = Claim(kind="expected_movement", code="projected", figures=figs,
                         terms={"metric": "latency_p50_ms", "basis": basis.removeprefix("movement."),
                                "removes_basis": fix.basis or "" if fix is not None else ""})
    else:
        terms = {"metric": fix.metric, "direction": fix.direction} if fix is not None else {}
        figs = []
        why, source = unprojected if unprojected is not None else (None, "")
        saving, p50 = (why.values.get("saving_ms"), why.values.get("p50_ms")) if why is not None else (None, None)
        if why is not None and why.code == "movement.saving_past_forward" and isinstance(saving, float | int) \
                and isinstance(p50, float | int):  # the saving, timed apart from the forward, sums past it
            terms["why"] = "saving_past_forward"
            figs = [_fig("saving_ms", float(saving), "ms", source, "movements[latency p50].expected_basis.saving_ms", clock=clock),
                    _fig("latency_p50_ms", float(p50), "ms", FILES["candidate"], "outcome.latency_samples_ms (median)",
                         role="candidate", clock=clock)]
        expected = Claim(kind="expected_movement", code="not_projected", terms=terms, figures=figs)
    return expected, lat


def _action(b: LoadedBundle, decision: DecisionOutcome, book: Playbook) -> Action:
    cls = b.classification
    fix = cls.fix if cls is not None else None
    owner = book.owner(decision.owner).title if decision.owner is not None else ""
    if fix is None:
        change = Claim(kind="change", code="none")
    else:
        terms = {"kind": fix.kind, "rule": fix.rule, "metric": fix.metric, "direction": fix.direction, "owner": owner,
                 "action_code": fix.code or ""}
        for key in ("knob", "layer", "action"):
            value = getattr(fix, key)
            if value is not None:
                terms[key] = str(value)
        if fix.value is not None:
            terms["value"] = str(fix.value)
        if fix.targets:
            terms["tensors"] = ",".join(fix.targets[0].tensors)
            terms["restore"] = fix.targets[0].restore or ""
        for key in ("was", "names_layer", "layer_role"):
            value = getattr(fix, key)
            if value is not None:
                terms[key] = str(value)
        applied = b.fix
        if applied is not None:
            terms["applied"] = "yes" if applied.applied else "no"
        figs = []
        wait = per_iteration(b.candidate.schedule, b.candidate.schedule.host_wait_ms)
        if wait is not None:  # what a change "so the GPU stops waiting on the host" stands on (the memo's claims check)
            figs.append(_fig("host_wait_ms", wait, "ms", FILES["candidate"], "schedule.host_wait_ms (per iteration)", role="candidate",
                             clock=run_clock(b.candidate), basis="per_iteration"))
        items = sorted({f"{t.cause}:{','.join(t.tensors) or 'weights'}" for t in fix.targets})
        layers = [layer for t in fix.targets for layer in t.layers]
        if layers:
            terms["target_layers"] = ",".join(layers[:3])
            terms["target_set"] = "|".join(layer_set(list(dict.fromkeys(layers))))
            figs.append(_fig("target_layers", len(layers), "count", FILES["classification"], "fix.targets[].layers"))
        if fix.removes_ms is not None:
            figs.append(_fig("removes_ms", fix.removes_ms, "ms", FILES["classification"], f"fix.removes_ms ({fix.basis})",
                             clock=run_clock(b.candidate)))
            terms["basis"] = fix.basis or ""
        change = Claim(kind="change", code=fix.kind, terms=terms, figures=figs, items=items)
    expected, lat = _expected(b, fix)
    fo = b.fix
    clock = run_clock(b.candidate)
    measured = None
    if fo is not None and lat is not None and b.fixed is not None:
        figs = [_fig("latency_p50_ms", lat.before, "ms", FILES["candidate"], "outcome.latency_samples_ms (median)", role="candidate", clock=clock),
                _fig("latency_p50_ms", lat.after, "ms", FILES["fixed"], "outcome.latency_samples_ms (median)", role="fixed", clock=run_clock(b.fixed))]
        if lat.before:
            figs.append(_fig("change", lat.after / lat.before - 1, "share", FILES["fix"], "movements[latency p50]", role="measured"))
        direction = lat.direction or ("faster" if lat.after < lat.before else ("slower" if lat.after > lat.before else "same"))
        agrees = {True: "yes", False: "no", None: ""}[lat.as_expected]
        disturbed = {"timings": "unstable"} if speed_disturbed(decision.gates.get("fixed")) else {}
        against = {"against": fo.pairing.candidate} if fo.pairing is not None else {}  # locate's candidate, or one replayed beside it
        measured = Claim(kind="measured_movement", code="moved" if fo.moved else ("not_moved" if fo.moved is False else "unjudged"),
                         figures=figs, terms={"direction": direction, "agrees": agrees, **disturbed, **against})
    return Action(change=change, expected=expected, measured=measured, risks=_risks(b, decision))


def run_changes(cand: RunRecord, fixed: RunRecord) -> list[str]:
    """What the fixed run changes besides knobs, as ``dimension=before->after``: launch mode, device, dtype, phase, tokens
    (``locate.comparable.check_pair``'s differences, every dimension allowed)."""
    from sparsedebug.locate.comparable import check_pair
    from sparsedebug.records.comparability import DIMENSIONS

    differences = check_pair(cand, fixed, DIMENSIONS).check.differences
    return ["=".join((d.dimension, "->".join((d.base, d.cand)))) for d in differences if d.dimension != "model"]


def _risks(b: LoadedBundle, decision: DecisionOutcome) -> list[Claim]:
    final_role = "fixed" if b.fixed is not None else "candidate"
    final = b.fixed or b.candidate
    gate = decision.gate
    out: list[Claim] = []
    prec = next((c for c in gate.checks if c.id == "precision_drift"), None) if gate is not None else None
    cand_gate = decision.gates.get("candidate") if b.fixed is not None else None
    cand_prec = next((c for c in cand_gate.checks if c.id == "precision_drift"), None) if cand_gate is not None else None
    as_before = {"candidate_status": cand_prec.status} if cand_prec is not None else {}  # a fixed run's status beside the candidate's
    out.append(Claim(kind="risk", code="correctness", terms={"status": prec.status if prec else "off", "role": final_role, **as_before}))
    q_before, q_after = b.candidate.outcome.quality, final.outcome.quality
    qf = []
    if q_after is not None:
        qf.append(_fig("cosine", q_after.cosine, "cosine", FILES[final_role], "outcome.quality.cosine", role=final_role))
    if b.fixed is not None and q_before is not None:
        qf.insert(0, _fig("cosine", q_before.cosine, "cosine", FILES["candidate"], "outcome.quality.cosine", role="candidate"))
    out.append(Claim(kind="risk", code="quality", figures=qf, terms={"role": final_role}))
    cls = b.classification
    thermal = next((s for s in cls.scores if s.mechanism.value == "thermal"), None) if cls is not None else None
    out.append(Claim(kind="risk", code="thermal", terms={"status": thermal.status if thermal else "unknown"}))
    if b.fixed is not None:
        kb = b.candidate.workload.knobs if b.candidate.workload else {}
        kf = b.fixed.workload.knobs if b.fixed.workload else {}
        changed = [f"{k}={kb.get(k)}->{kf.get(k)}" for k in sorted(set(kb) | set(kf)) if kb.get(k) != kf.get(k)]
        changed += run_changes(b.candidate, b.fixed)
        out.append(Claim(kind="risk", code="compatibility", items=changed, terms={"backend": final.lower.backend}))
    return out


def _signoff(b: LoadedBundle, book: Playbook, decision: DecisionOutcome, decision_claim: Claim) -> Signoff:
    final_role = "fixed" if b.fixed is not None else "candidate"
    final = b.fixed or b.candidate
    fb = fallback_summary(final, b.baseline)
    figs = [_fig("layers", len(final.graph.layers), "count", FILES[final_role], "graph.layers", role=final_role)]
    by_kernel = kernel_named(final)  # a CUDA-graph trace's rows are kernel names: no per-layer count to state
    if fb.meant_sparse and not by_kernel:
        figs += [_fig("fell_back", fb.fell_back, "count", FILES[final_role], "lower.layers[].path", role=final_role),
                 _fig("meant_sparse", fb.meant_sparse, "count", FILES[final_role], "graph.layers[].intended", role=final_role)]
    report = b.manifest.files.get("report", FILES["report"])
    artifact = Claim(kind="artifact", figures=figs, terms={"file": report, **({"rows": "kernel_names"} if by_kernel else {})})
    # the signing owners who hold nothing open here: no blocking check the decision gives them, not the proposed change
    holding = {v for k, v in decision_claim.terms.items() if k.startswith("owner.") and k.removeprefix("owner.") in decision_claim.items}
    idle = [o for o in book.memo.required_owners if book.owner(o).title not in holding and o != decision.owner]
    owners = Claim(kind="owners", items=[book.owner(o).title for o in book.memo.required_owners],
                   terms={"change_owner": book.owner(decision.owner).title if decision.owner else "", "idle": ",".join(idle)})
    return Signoff(artifact=artifact, owners=owners, decision=decision_claim)


def _clocks(runs: list[RunRecord]) -> list[ClockLegend]:
    out: list[ClockLegend] = []
    seen: set[tuple[str, str]] = set()
    for run in runs:
        clock, device = run_clock(run), device_name(run)
        if (clock, device) not in seen:
            seen.add((clock, device))
            out.append(ClockLegend(clock=clock, device=device))
        if run.target is not None and ("projected", run.target.device) not in seen:
            seen.add(("projected", run.target.device))
            out.append(ClockLegend(clock="projected", device=run.target.device))
    return out


def build_memo(b: LoadedBundle, book: Playbook) -> Memo:
    """The memo model of a bundle with its decision (``signoff.decide.with_decision``): built once, rendered by every format."""
    decision = stored_decision(b)
    judged_role = "fixed" if b.fixed is not None else "candidate"
    judged = b.fixed or b.candidate
    checks = _check_claims(decision.gate, judged, judged_role, book) if decision.gate is not None else []
    owner = book.owner(decision.owner).title if decision.owner is not None else ""
    missing = missing_evidence(decision)
    blocking = blockers(decision, missing)
    report = build_report(b, decision)
    checks = with_shared_cause(with_precision_changes(with_fallback_layers(checks, report, judged_role), b.baseline, judged))
    evidence = judged.outcome.quality.evidence if judged.outcome.quality is not None else None
    if evidence is not None and "/" not in evidence.model:  # a registered model: the quality study can run on it by name
        checks = [c.model_copy(update={"terms": {**c.terms, "model": evidence.model}}) if c.code == "quality_delta" else c
                  for c in checks]
    decision_claim = Claim(kind="decision", code=decision.decision, items=blocking, terms={
        "judged_on": judged_role, "label": book.decision(decision.decision).label, "owner": owner,
        "recomputed": ",".join(decision.recomputed), "speed_judgement": decision.judgement or "", **owner_terms(book, blocking),
        **shared_cause_terms(checks),
        **({"none_meant_sparse": "yes"} if not any(fallback_summary(r).meant_sparse for r in b.runs().values()) else {})})
    columns, rows = results(b, report)
    allowed: list[str] = sorted({d.dimension for d in report.comparability.differences if d.allowed}) if report.comparability else []
    return enforce(Memo(
        title=book.memo.title, bundle=b.root.name, decision=decision_claim,
        reasons=reasons(decision, checks, missing, judged_role, book, allowed),
        clocks=_clocks(list(b.runs().values())), symptom=_symptom(b, rows), hypothesis=_hypothesis(b),
        action=_action(b, decision, book), signoff=_signoff(b, book, decision, decision_claim), checks=checks, gate=decision.gate,
        report=report, columns=columns, results=rows, headline=[f for f in (_speedup(b, judged_role),) if f is not None],
        detail={k: f"{b.manifest.files.get('report', FILES['report'])}#{v}" for k, v in DETAIL_ANCHORS.items()},
    ), b)


def with_review(b: LoadedBundle, book: Playbook) -> LoadedBundle:
    """The bundle (with its decision, ``signoff.decide.with_decision``) holding its review document, built once here:
    every bundle renderer reads it."""
    return b.model_copy(update={"memo": build_memo(b, book)})


def gate_memo(result: GateResult, base: RunRecord, cand: RunRecord, book: Playbook | None = None) -> Memo:
    """The memo of one gate verdict (``gate --summary``, ``memo --format github``): pass or fail, its checks, and the
    owner of each failing one (from ``book``, the default playbook when None)."""
    from sparsedebug.sources.playbook import load_playbook

    book = book or load_playbook()
    checks = _check_claims(result, cand, "candidate", book)
    code = "fail" if not result.passed else ("inconclusive" if result.inconclusive else "pass")
    failing: list[str] = [c.id for c in result.checks if c.status == "fail"]
    decision = Claim(kind="decision", code=code, items=failing, terms={
        "judged_on": "candidate", "baseline": result.baseline, "candidate": result.candidate, **owner_terms(book, failing)})
    reasons = [c for c in checks if c.terms.get("status") == "fail" or (c.terms.get("status") == "inconclusive")]
    speed = [f for c in checks for f in c.figures if f.quantity == "speedup_p50" and f.role == "candidate"]
    return Memo(title="sparsedebug gate", bundle=f"{result.baseline} vs {result.candidate}", decision=decision, reasons=reasons,
                clocks=_clocks([base, cand]), checks=checks, gate=result, headline=speed[:1])


def require_current(b: LoadedBundle) -> None:
    """Refuse a bundle written before the memo model (no memo.json): re-running the walk rebuilds it. (A memo.json of
    another schema version is refused when the bundle is loaded, like every record.)"""
    if b.memo is None:
        raise UserError(
            f"{b.root}: written by an older sparsedebug (no memo.json; this release reads memo schema {MEMO_SCHEMA_VERSION}); "
            "re-run `sparsedebug playbook run` on its inputs to rebuild the bundle"
        )
