"""The memo's results table and its owners per blocker: built once from the bundle's report, rendered by every format.

One column per run (baseline, candidate, fixed), one row per figure a lead acts on: the speedup, p50/p95/p99, the
quality against dense at the equal latency budget (the seed's headline metric), the meant-sparse layers running
dense, the precision check and the energy per token. Each cell holds the figures it prints and, where the default
gate holds the row to a limit, the run's status under it; a cell with no evidence says what to capture. Who owns a
failing check is the playbook's (``Owner.checks``).
"""

from __future__ import annotations

import re

from sparsedebug.core.patterns import kernel_named, precision_changes
from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.findings import index_ranges
from sparsedebug.records.gate import GateCheck, GateResult
from sparsedebug.records.memo import Claim, Figure, ResultColumn, ResultRow, ResultRowId
from sparsedebug.records.playbook import Playbook
from sparsedebug.records.report import Report
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import TAIL_MIN_SAMPLES
from sparsedebug.signoff.memo_engine import check_field, fig, limit_field, past_limit
from sparsedebug.signoff.metrics import SPEEDUP_FIELD, fallback_summary, run_clock
from sparsedebug.sources.bundle import FILES, LoadedBundle

CHECK_ORDER: tuple[str, ...] = ("effective_speedup", "quality_delta", "fallback_rate", "precision_drift", "p99_latency")
"""The gate checks in the order a failing one is the more decisive reason."""

ROW_CHECK: dict[ResultRowId, str | None] = {
    "speedup": "effective_speedup", "latency": "p99_latency", "quality": "quality_delta", "fallback": "fallback_rate",
    "precision": "precision_drift", "energy": None,
}
"""Each row of the table and the default gate's check that holds it to a limit (None: no limit)."""

MISSING_CHECK: dict[str, str] = {"quality": "quality_delta", "fallback": "fallback_rate"}
"""Missing evidence (``missing_evidence``) -> the check it leaves undecided, whose owner captures it."""


def _check(report: Report | None, role: str, check_id: str | None) -> GateCheck | None:
    run = report.run(role) if report is not None else None
    if run is None or run.gate is None or check_id is None:
        return None
    return next((c for c in run.gate.checks if c.id == check_id), None)


def _limit(check: GateCheck | None, quantity: str, name: str) -> list[Figure]:
    """The policy's limit of ``quantity`` as the memo's figure ``name`` (the key ``signoff.memo_engine.check_figures`` gives it)."""
    f = next((f for f in check.figures if f.quantity == quantity), None) if check is not None else None
    if f is None or f.limit is None or f.direction is None:
        return []
    return [fig(name, f.limit, f.unit, "gate policy", limit_field(check.id, quantity))]  # type: ignore[union-attr]


def speed_disturbed(gate: GateResult | None) -> bool:
    """Whether ``gate``'s speed check could not decide because other load disturbed the timings."""
    speed = next((c for c in gate.checks if c.id == "effective_speedup"), None) if gate is not None else None
    return speed is not None and speed.status == "inconclusive" and undecided_why(speed) == "unstable"


def undecided_why(check: GateCheck) -> str:
    """Why an inconclusive check could not decide: ``too_few`` samples, ``unstable`` timings (other load), or ``""``."""
    if check.test is not None and check.test.kind == "too_few":
        return "too_few"
    return "unstable" if any(b.code == "gate.timings_unstable" for b in check.basis) else ""


def check_judgement(check: GateCheck) -> str:
    """What the significance test behind a check made of the difference: the rule's judgement (``win``, ``loss``,
    ``no_change``, ``inconclusive``), ``not_significant`` for a test that did not reach its alpha, ``""`` for a check
    held to its limit by the figure alone."""
    test = check.test
    if test is None:
        return ""
    if test.judgement is not None:
        return test.judgement
    return "not_significant" if test.p is not None and test.alpha is not None and test.p >= test.alpha else ""


def beyond_limit(check: GateCheck) -> list[str]:
    """The check's figures on the failing side of their limits (the quantities, in the check's order)."""
    return [f.quantity for f in check.figures
            if f.value is not None and f.limit is not None and f.direction is not None and past_limit(f.value, f.limit, f.direction)]


def _cell(row: ResultRowId, role: str, state: str, figures: list[Figure], check: GateCheck | None, **terms: str) -> Claim:
    status = check.status if check is not None and check.status in ("pass", "fail", "inconclusive") else ""
    why = {"why": undecided_why(check)} if check is not None and status == "inconclusive" else {}
    return Claim(kind="result", code=row, figures=figures, terms={"role": role, "state": state, "status": status, **why, **terms})


def _speedup(report: Report, role: str) -> Claim:
    figs = report.figures(role)
    check = _check(report, role, "effective_speedup")
    if role == "baseline":
        return _cell("speedup", role, "reference", [], None)
    if figs is None or figs.speedup is None:
        return _cell("speedup", role, "not_measured", [], check, capture="latency samples on both sides")
    basis = figs.speedup_basis or "per_forward"
    sp = fig("speedup_p50", figs.speedup, "x", FILES[role], SPEEDUP_FIELD[basis], role=role, clock=figs.clock, basis=basis)
    return _cell("speedup", role, "measured", [sp, *_limit(check, "speedup_p50", "speedup_min")], check)


def _latency(report: Report, role: str) -> Claim:
    figs = report.figures(role)
    check = _check(report, role, "p99_latency")
    if figs is None or figs.latency is None:
        return _cell("latency", role, "not_measured", [], check, capture="latency samples")
    lat, record = figs.latency, FILES.get(role, f"{role}.run.json")
    # below TAIL_MIN_SAMPLES a p95 or p99 only interpolates between the slowest samples: the cell states the slowest
    few = lat.n < TAIL_MIN_SAMPLES and lat.slowest is not None
    points = [("p50", lat.p50), ("slowest", lat.slowest)] if few else [("p50", lat.p50), ("p95", lat.p95), ("p99", lat.p99)]
    out = [fig(f"latency_{p}_ms", value, "ms", record, f"outcome.latency_samples_ms ({p})", role=role, clock=figs.clock)
           for p, value in points if value is not None]
    out.append(fig("latency_samples", lat.n, "count", record, "outcome.latency_samples_ms (count)", role=role))
    if few and role == "baseline":  # the table says once why its cells state the slowest sample, not p95 and p99
        out.append(fig("tail_min_samples", TAIL_MIN_SAMPLES, "count", "sparsedebug", "records.stats.TAIL_MIN_SAMPLES"))
    ratio = next((f for f in check.figures if f.quantity == "p99_ratio" and f.value is not None), None) if check else None
    if ratio is not None and ratio.value is not None and not few:
        out.append(fig("p99_ratio", ratio.value, ratio.unit, record, check_field("p99_latency", "p99_ratio"), role=role, clock=figs.clock))
    return _cell("latency", role, "measured", [*out, *_limit(check, "p99_ratio", "p99_max_ratio")], check,
                 tail="few" if few else "estimated")


def _quality(report: Report, run: RunRecord, role: str) -> Claim:
    check = _check(report, role, "quality_delta")
    if role == "baseline":
        return _cell("quality", role, "reference", [], None)
    q, eq, record = run.outcome.quality, run.outcome.equal_latency, FILES[role]
    if q is None:  # what to capture: a sparse model's quality against dense, or (nothing meant sparse) the outputs against the baseline's
        capture = "quality" if fallback_summary(run).meant_sparse else "outputs"
        return _cell("quality", role, "not_measured", [], check, capture=capture)
    figs = [fig("perplexity", q.perplexity, "perplexity", record, "outcome.quality.perplexity", role=role)
            if q.perplexity is not None else fig("cosine", q.cosine, "cosine", record, "outcome.quality.cosine", role=role)]
    terms: dict[str, str] = {"metric": "perplexity" if q.perplexity is not None else "cosine"}
    if eq is not None:
        dense = eq.narrowed.perplexity if q.perplexity is not None and eq.narrowed.perplexity is not None else eq.narrowed.cosine
        figs += [fig("equal_latency_dense", dense, "perplexity" if terms["metric"] == "perplexity" else "cosine", record,
                     "outcome.equal_latency.narrowed", role=role),
                 fig("equal_latency_removed", eq.narrowed_ffn_fraction, "share", record, "outcome.equal_latency.narrowed_ffn_fraction",
                     role=role)]
        terms["equal_latency"] = "matched" if eq.latency_matched is not False else "not_matched"
        terms["sparsity_wins"] = "yes" if eq.sparsity_wins else "no"
    return _cell("quality", role, "measured", [*figs, *_limit(check, "cosine", "cosine_min")], check, **terms)


def _fallback(report: Report, run: RunRecord, baseline: RunRecord, role: str) -> Claim:
    check = _check(report, role, "fallback_rate")
    jr = report.run(role)
    fb = jr.fallback if jr is not None else fallback_summary(run, None if role == "baseline" else baseline)
    record = FILES.get(role, f"{role}.run.json")
    if not fb.meant_sparse:
        return _cell("fallback", role, "none_meant", [], check)
    if kernel_named(run):  # a CUDA-graph trace's layers are kernel names: its count is of kernels, not of the model's layers
        return _cell("fallback", role, "kernel_named", [fig("sparse_kernels", fb.meant_sparse, "count", record, "graph.layers[].intended",
                                                            role=role)], check)
    figs = [fig("fell_back", fb.fell_back, "count", record, "lower.layers[].path", role=role),
            fig("meant_sparse", fb.meant_sparse, "count", record, "graph.layers[].intended", role=role)]
    return _cell("fallback", role, "measured", [*figs, *_limit(check, "fallback_rate", "fallback_rate_max")], check)


def _precision(report: Report, role: str, run: RunRecord, baseline: RunRecord) -> Claim:
    check = _check(report, role, "precision_drift")
    if role == "baseline":
        return _cell("precision", role, "reference", [], None)
    if check is None or check.status not in ("pass", "fail", "inconclusive"):
        return _cell("precision", role, "not_measured", [], check, capture="precision")
    record = FILES.get(role, f"{role}.run.json")
    figs = [fig(f.quantity, f.value, f.unit, record, f"checks[precision_drift].{f.quantity}", role=role)
            for f in check.figures if f.value is not None and f.quantity in ("precision_changes", "worst_err_share")]
    # which layers changed format, from which to which (the check's own list: core.patterns.precision_changes)
    changed = precision_change_codes(baseline, run)
    return _cell("precision", role, "measured", figs, check, **({"changed": changed} if changed else {}))


def _energy(report: Report, role: str) -> Claim:
    side = report.energy.side(role) if report.energy is not None else None
    per_token = side.joules_per_token if side is not None else None
    per_forward = side.joules_per_forward if side is not None else None
    got = per_token or per_forward
    if side is None or got is None:
        return _cell("energy", role, "not_measured", [], None, capture="power_replay" if side is not None and side.replayed else "power")
    quantity = "joules_per_token" if per_token is not None else "joules_per_forward"
    figs = [fig(quantity, got.p50, "joules", FILES["energy"], f"sides[{role}].{quantity}.p50", role=role)]
    if side.mean_power_w is not None:
        figs.append(fig("mean_power_w", side.mean_power_w, "watts", FILES["energy"], f"sides[{role}].mean_power_w", role=role))
    return _cell("energy", role, "measured", figs, None, per=quantity, scope=side.scope or "")


def results(b: LoadedBundle, report: Report) -> tuple[list[ResultColumn], list[ResultRow]]:
    """The results table of a bundle: its columns (each run with its clock) and rows (a cell per column)."""
    runs = b.runs()
    columns = [ResultColumn(role=role, run=run.name, clock=run_clock(run), device=device_name(run)) for role, run in runs.items()]
    rows: list[ResultRow] = []
    for row, check in ROW_CHECK.items():
        cells = []
        for role, run in runs.items():
            if row == "speedup":
                cells.append(_speedup(report, role))
            elif row == "latency":
                cells.append(_latency(report, role))
            elif row == "quality":
                cells.append(_quality(report, run, role))
            elif row == "fallback":
                cells.append(_fallback(report, run, b.baseline, role))
            elif row == "precision":
                cells.append(_precision(report, role, run, b.baseline))
            else:
                cells.append(_energy(report, role))
        rows.append(ResultRow(row=row, check=check, cells=_capture_once(cells)))
    return columns, rows


def _capture_once(cells: list[Claim]) -> list[Claim]:
    """A row whose unmeasured cells all ask for the same capture asks once, in its last such cell; the others say
    ``capture=same`` (not measured, the capture beside them)."""
    asking = [c for c in cells if c.terms.get("state") == "not_measured" and c.terms.get("capture")]
    if len(asking) < 2 or len({c.terms["capture"] for c in asking}) > 1:
        return cells
    same = {id(c) for c in asking[:-1]}
    return [c.model_copy(update={"terms": {**c.terms, "capture": "same"}}) if id(c) in same else c for c in cells]


BLOCK_NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)|(?<=#)\d+")
"""A layer's block number: a numeric part of a dotted name (``layers.3.mlp``), or a call ordinal (``linear#3 [...]``)."""


def layer_set(names: list[str]) -> list[str]:
    """A set of layers written once: layers that differ only in their block number as one pattern with the blocks,
    ``encoder.layer.[0-3,5].output.dense`` (as ``records.findings.group_label`` writes a pooled group) (one block: the name itself), in the order first named."""
    groups: dict[str, list[int]] = {}
    single: dict[str, str] = {}
    for name in names:
        m = BLOCK_NUMBER.search(name)
        if m is None:
            groups.setdefault(name, [])
            single[name] = name
            continue
        key = name[:m.start()] + "{}" + name[m.end():]
        groups.setdefault(key, []).append(int(m.group()))
    out = []
    for key, blocks in groups.items():
        uniq = sorted(set(blocks))
        if key in single:
            out.append(single[key])
        elif len(uniq) == 1:
            out.append(key.replace("{}", str(uniq[0])))
        else:
            out.append(key.replace("{}", "[" + index_ranges(uniq) + "]"))
    return out


def device_name(run: RunRecord) -> str:
    """The device a run's own latencies were timed on, as the memo names it."""
    if run_clock(run) == "measured":
        return "this CPU"
    return ", ".join(g.name for g in run.fingerprint.gpus) if run.fingerprint and run.fingerprint.gpus else run.lower.backend


def blockers(decision: DecisionOutcome, missing_evidence: list[str]) -> list[str]:
    """The checks that keep the decision from ship, most decisive first: failing checks, checks an inconclusive
    verdict fails by policy, and the checks missing evidence leaves undecided."""
    out: list[str] = []
    for check in decision.gate.checks if decision.gate is not None else []:
        if check.status == "fail" or (check.status == "inconclusive" and check.on_inconclusive == "fail"):
            out.append(check.id)
    out += [MISSING_CHECK[m] for m in missing_evidence if m in MISSING_CHECK and MISSING_CHECK[m] not in out]
    order = {cid: i for i, cid in enumerate(CHECK_ORDER)}
    return sorted(out, key=lambda c: order.get(c, len(order)))


def owner_terms(book: Playbook, checks: list[str]) -> dict[str, str]:
    """``owner.<check>`` -> the title of the owner the playbook makes accountable for it (checks no owner claims left out)."""
    out = {}
    for check in checks:
        owner = book.check_owner(check)
        if owner is not None:
            out[f"owner.{check}"] = owner.title
    return out


def reasons(decision: DecisionOutcome, checks: list[Claim], missing_evidence: list[str], judged_role: str,
             book: Playbook, allowed: list[str]) -> list[Claim]:
    """The decision's own rule first (unless a failing check says it), the pair's allowed differences, then every
    failing check (and every check an inconclusive verdict fails by policy), then missing evidence, each with its owner."""
    failing = [c for c in checks if c.terms.get("status") == "fail"]
    undecided = [c for c in checks if c.terms.get("status") == "inconclusive" and c.terms.get("on_inconclusive") == "fail"]
    out: list[Claim] = []
    if decision.code not in (None, "worse_than_baseline") or not failing:
        own = undecided if decision.code == "too_few_samples" else []
        owners = sorted({c.terms["owner"] for c in own if c.terms.get("owner")})
        counted = next((c for c in own if c.figure("samples_needed") and c.figure("speedup_p50_count")), None)
        # the speed figure's count is the baseline's samples, its "of" the judged run's (signoff.gate.check_speedup)
        figures = [f for q in ("speedup_p50_count", "speedup_p50_of", "samples_needed") if counted is not None and (f := counted.figure(q))]
        out.append(Claim(kind="reason", code=decision.code or decision.decision, figures=figures,
                         terms={"judged_on": judged_role, "owner": " and the ".join(owners)}))
        undecided = [c for c in undecided if c not in own]
    if decision.across_launch:
        out.append(Claim(kind="reason", code="across_launch", terms={"base": decision.across_launch[0], "run": decision.across_launch[1]}))
    elif allowed:
        out.append(Claim(kind="reason", code="allowed_difference", items=allowed))
    out += [_with_effects(c, failing) for c in failing if not c.terms.get("caused_by")] + _undecided_once(undecided)
    for m in missing_evidence:
        owner = owner_terms(book, [MISSING_CHECK[m]]).get(f"owner.{MISSING_CHECK[m]}", "") if m in MISSING_CHECK else ""
        out.append(Claim(kind="reason", code="missing_evidence", terms={"evidence": m, "owner": owner}))
    return out


def _with_effects(check: Claim, failing: list[Claim]) -> Claim:
    """A failing check with the checks it causes (``with_shared_cause``) folded in: one reason for one cause."""
    caused = [c for c in failing if c.terms.get("caused_by") == check.code]
    if not caused:
        return check
    return check.model_copy(update={"terms": {**check.terms, "causes": ",".join(c.code or "" for c in caused)},
                                    "figures": [*check.figures, *(f for c in caused for f in c.figures)]})


def _undecided_once(undecided: list[Claim]) -> list[Claim]:
    """Checks an undecided verdict fails by policy, one reason per cause and owner (``undecided``, its checks in the
    ``checks`` term): the speed and p99 checks that other load disturbed are one thing to fix, not two."""
    groups: dict[tuple[str, str, str], list[Claim]] = {}
    for c in undecided:
        groups.setdefault((c.terms.get("why", ""), c.terms.get("owner", ""), c.terms.get("role", "")), []).append(c)
    return [Claim(kind="reason", code="undecided", figures=[f for c in cs for f in c.figures],
                  terms={"checks": ",".join(c.code or "" for c in cs), "why": why, "owner": owner, "role": role, "status": "inconclusive",
                         "on_inconclusive": "fail"})
            for (why, owner, role), cs in groups.items()]


def with_shared_cause(checks: list[Claim]) -> list[Claim]:
    """The checks, the failing fallback check marked ``caused_by=precision_drift`` when every layer it names runs dense
    because the sparse kernel rejects its dtype and is a layer whose precision changed: one cause fails both checks,
    and the memo states it once, under the precision check's owner."""
    fallback = next((c for c in checks if c.code == "fallback_rate" and c.terms.get("status") == "fail"), None)
    precision = next((c for c in checks if c.code == "precision_drift" and c.terms.get("status") == "fail"), None)
    if fallback is None or precision is None or fallback.terms.get("why") != "dtype_unsupported" or not fallback.items:
        return checks
    changed = [x.split(":")[0] for x in precision.terms.get("changed", "").split("|") if x]
    if not changed or layer_set(changed) != fallback.items:
        return checks
    marked = {**fallback.terms, "caused_by": "precision_drift", "owner": precision.terms.get("owner", "")}
    return [c.model_copy(update={"terms": marked}) if c is fallback else c for c in checks]


def shared_cause_terms(checks: list[Claim]) -> dict[str, str]:
    """The decision's terms for a check another one causes (``with_shared_cause``): its owner is the cause's, and
    ``one_cause`` names both, so the blockers list says so."""
    out: dict[str, str] = {}
    for c in checks:
        cause = c.terms.get("caused_by")
        if cause and c.code:
            out[f"owner.{c.code}"] = c.terms.get("owner", "")
            out["one_cause"] = f"{cause},{c.code}"
    return out


def missing_evidence(decision: DecisionOutcome) -> list[str]:
    """The evidence whose absence refuses ship (fallback, quality)."""
    out = []
    for refusal in decision.ship_refused:
        if refusal.code == "no_fallback_evidence":
            out.append("fallback")
        elif refusal.code == "no_quality_evidence":
            out.append("quality")
    return out


def with_fallback_layers(checks: list[Claim], report: Report, role: str) -> list[Claim]:
    """The checks, the fallback check naming the judged run's layers that run dense (written once) and why."""
    run = report.run(role)
    rows = [r for r in run.layers if r.fell_back] if run is not None else []
    if not rows:
        return checks
    why = sorted({r.reason for r in rows if r.reason})
    out = []
    for c in checks:
        if c.code == "fallback_rate":
            c = c.model_copy(update={"items": layer_set([r.name for r in rows]), "terms": {**c.terms, "why": ",".join(why)}})
        out.append(c)
    return out


def with_precision_changes(checks: list[Claim], baseline: RunRecord, judged: RunRecord) -> list[Claim]:
    """The checks, the precision check naming the judged run's layers that changed format and from which to which
    (``core.patterns.precision_changes``, the check's own list)."""
    named = precision_change_codes(baseline, judged)
    if not named:
        return checks
    return [c.model_copy(update={"terms": {**c.terms, "changed": named}}) if c.code == "precision_drift" else c for c in checks]


def precision_change_codes(baseline: RunRecord, run: RunRecord) -> str:
    """``layer:was:now|...`` for each layer of ``run`` whose precision changed against ``baseline`` (empty: none), as
    the precision cell and the precision reason carry it (``core.patterns.precision_changes``, the check's own list)."""
    return "|".join(":".join((c.layer, c.before or "?", c.after or "?")) for c in precision_changes(baseline, run))
