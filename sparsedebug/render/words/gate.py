"""Words for the gate: each check's name, its figures against their limits, the test that decided, and the
notes behind the verdict (codes ``gate.*``); and the decision's reasons (codes of ``signoff.decide``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparsedebug.records.notes import NoteValue
from sparsedebug.records.stats import P99_FEW_SAMPLES
from sparsedebug.render.words.notes import Phrase, say
from sparsedebug.render.words.targets import fix_how_words

if TYPE_CHECKING:  # types only: wording a note (say) imports no gate, bundle or decision record
    from sparsedebug.records.bundle import CandidatePairing, FixOutcome
    from sparsedebug.records.decision import DecisionOutcome, Refusal
    from sparsedebug.records.gate import GateCheck, GateFigure, GatePolicy, GateTest

# What each check is, as the gate's table and JUnit name it.
CHECK_NAMES = {
    "effective_speedup": "effective speedup (baseline p50 / candidate p50)",
    "p99_latency": "p99 latency (candidate / baseline)",
    "quality_delta": "quality delta vs dense",
    "fallback_rate": "dense fallback rate (meant-sparse layers running dense)",
    "precision_drift": "precision drift (kernel error vs fp64; precision changes)",
}

_QUANTITY = {
    "speedup_p50": "speedup", "p99_ratio": "p99 ratio", "p99_ms": "p99", "cosine": "cosine", "rel_err": "rel err",
    "accuracy": "accuracy", "accuracy_drop": "accuracy drop", "fallback_rate": "fallback rate",
    "worst_err_share": "worst layer error", "precision_changes": "precision changes", "layers_within": "layers within tolerance",
}

_POLICY_EFFECT = {"fail": "; on_inconclusive: fail, so the gate fails", "warn": "; on_inconclusive: warn", "pass": "; on_inconclusive: pass"}


def _value(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.3f}x"
    if unit == "ms":
        return f"{value:.3f} ms"
    if unit == "share":
        return f"{value:.1%}"
    if unit == "count":
        return f"{value:g}"
    if unit == "cosine":
        return f"{value:.4f}"
    return f"{value:.4g}"


def figure_words(f: GateFigure) -> str:
    """One measured figure: ``speedup 1.234x (10 vs 10 samples)``, ``fallback rate 12.5% (1/8)``."""
    if f.value is None:
        return "n/a"
    text = f"{_QUANTITY[f.quantity]} {_value(f.value, f.unit)}"
    if f.quantity == "worst_err_share":
        return f"worst layer at {f.value:.0%} of its tolerance"
    if f.quantity == "p99_ratio":
        return f"p99 ratio {f.value:.3f}x"
    if f.quantity == "fallback_rate" and f.count is not None and f.of is not None:
        text += f" ({f.count}/{f.of})"
    elif f.quantity == "speedup_p50" and f.count is not None:
        text += f" ({f.count} vs {f.of} samples)" if f.of is not None else f" (paired over {f.count} rounds of one session)"
    elif f.baseline is not None and f.quantity in ("p99_ms", "accuracy"):
        text += f" vs {_value(f.baseline, f.unit)}"
    return text


def measured_words(check: GateCheck) -> str:
    """What the check measured, every figure, or ``-`` when it measured nothing."""
    shown = [figure_words(f) for f in check.figures if f.value is not None]
    return "; ".join(shown) or "-"


def _limit_words(f: GateFigure) -> str | None:
    if f.limit is None or f.direction is None:
        return None
    sign = ">=" if f.direction == "at_least" else "<="
    if f.quantity == "worst_err_share":
        return "kernel rel err <= each precision's tolerance"
    if f.quantity == "precision_changes":
        return "no precision change"
    if f.quantity == "p99_ratio":
        return f"<= {f.limit:g}x baseline p99"
    if f.quantity == "p99_ms":
        return f"p99 <= budget {f.limit:g} ms"
    if f.quantity == "fallback_rate":
        return f"<= {f.limit:.0%}"
    if f.quantity == "speedup_p50":
        return f">= {f.limit:g}x"
    return f"{_QUANTITY[f.quantity]} {sign} {f.limit:g}"


def threshold_words(check: GateCheck, policy: GatePolicy) -> str:
    """The limits the check held its figures to, and how a timing shortfall must be judged."""
    limits = [w for w in (_limit_words(f) for f in check.figures) if w]
    sig = policy.significance
    if check.id == "effective_speedup" and policy.effective_speedup is not None:
        return (f">= {policy.effective_speedup.min:g}x (shortfall must exceed x{sig.factor:g} and be significant, one-sided, "
                f"at alpha {sig.alpha:g})")
    if check.id == "p99_latency" and policy.p99_latency is not None:
        budget = " and <= budget" if policy.p99_latency.use_budget else ""
        return f"<= {policy.p99_latency.max_ratio:g}x baseline p99{budget} (beyond noise at alpha {sig.alpha:g})"
    if check.id == "precision_drift" and policy.precision_drift is not None:
        tol = ", ".join(f"{k} {v:g}" for k, v in policy.precision_drift.max_rel_err.items())
        return f"kernel rel err <= {tol}" + ("" if policy.precision_drift.allow_precision_change else "; no precision change")
    if check.id == "quality_delta" and policy.quality_delta is not None:
        pol = policy.quality_delta
        parts = [f"cosine >= {pol.min_cosine:g}"] if pol.min_cosine is not None else []
        parts += [f"rel err <= {pol.max_rel_err:g}"] if pol.max_rel_err is not None else []
        parts += [f"accuracy drop <= {pol.max_accuracy_drop:g}"] if pol.max_accuracy_drop is not None else []
        parts += ["beats a dense model at equal latency"] if pol.require_equal_latency_win else []
        return ", ".join(parts) or "(no thresholds)"
    return ", ".join(limits) or "-"


def test_words(test: GateTest) -> str:
    """How the check decided, from the test's facts."""
    samples = f"{test.n_base} vs {test.n_cand} samples"
    ratio = f"median ratio x{test.ratio:.3f}" if test.ratio is not None else ""
    if test.kind == "too_few":
        return (f"inconclusive: {samples}, too few to judge ({test.needed} a side needed: capture or run that many); "
                f"{ratio} not tested")
    if test.kind in ("rank", "paired_rank"):
        how = "signed-rank test over paired rounds" if test.kind == "paired_rank" else "rank test"
        if test.p is None:
            return f"too few samples for a {how} ({samples}; {ratio} not tested)"
        if test.significant:
            steady = "persistent" if test.persistent else "not persistent (one burst is not a shift)"
            return f"{how}: significant, p={test.p:.3g} at alpha {test.alpha:g}, {ratio} ({samples}); {steady}"
        if test.alpha is not None and test.p <= test.alpha and test.factor is not None:
            return f"{how}: p={test.p:.3g} but {ratio} within x{test.factor:g}, below the minimum effect ({samples})"
        return f"{how}: no significant difference, p={test.p:.3g} > {test.alpha:g}, {ratio} ({samples})"
    if test.kind in ("separation", "paired_separation"):
        test_name = "a one-sided signed-rank test over paired blocks of rounds" if test.kind == "paired_separation" else "a one-sided rank test"
        return (f"{samples}, too few for {test_name} at alpha {test.alpha:g} ({test.needed} a side needed); "
                f"decided on separation by x{test.factor:g} ({ratio})")
    if test.kind == "exceedance":
        need = f"{test.needed} exceedances needed" if test.needed is not None else "no count is significant with these samples"
        p = f", p={test.p:.3g}" if test.p is not None else ""
        return f"one-sided exceedance count ({samples}; {need} at alpha {test.alpha:g}{p})"
    return f"too few samples for a rank test ({samples}): decided on the factor alone, {ratio} against x{test.factor:g}"


def _violations(check: GateCheck) -> list[str]:
    """Each figure past its limit: ``cosine 0.8000 < 0.9``."""
    out = []
    for f in check.figures:
        if f.value is None or f.limit is None or f.direction is None or f.quantity not in ("cosine", "rel_err", "accuracy_drop"):
            continue
        if f.direction == "at_least" and f.value < f.limit:
            out.append(f"{_QUANTITY[f.quantity]} {_value(f.value, f.unit) if f.unit != 'share' else f'{f.value:.4f}'} < {f.limit:g}")
        elif f.direction == "at_most" and f.value > f.limit:
            out.append(f"{_QUANTITY[f.quantity]} {f.value:.4f} > {f.limit:g}" if f.unit == "share" else f"{_QUANTITY[f.quantity]} {f.value:.4g} > {f.limit:g}")
    return out


def _lead(check: GateCheck) -> list[str]:
    """The check's own headline, from its figures and its test."""
    first = check.figures[0] if check.figures else None
    if check.id == "effective_speedup" and first is not None and first.value is not None and first.limit is not None:
        if check.test is None:
            return [f"speedup {first.value:.3f}x meets {first.limit:g}x"]
        verdict = {"fail": "fails", "pass": "within noise of", "inconclusive": "short of"}.get(check.status, check.status)
        drift = f"within this machine's own drift between the runs (x{check.test.drift:.3f}): " if check.test.drift is not None else ""
        return [f"speedup {first.value:.3f}x {verdict} {first.limit:g}x: {drift}{test_words(check.test)}"]
    if check.id == "quality_delta":
        return _violations(check) or (["within guardrails"] if check.status == "pass" and not check.basis else [])
    if check.id == "fallback_rate" and first is not None and first.count is not None:
        base = f"; baseline rate {first.baseline:.0%}" if first.baseline is not None else ""
        return [f"{first.count} of {first.of} meant-sparse layers run dense{base}"]
    if check.id == "precision_drift" and check.status == "pass" and first is not None and first.quantity == "worst_err_share":
        return [f"{first.count} layer(s) within tolerance"]
    return []


def detail_words(check: GateCheck) -> str:
    """The check's verdict in one line: its headline, its notes, what its policy made of an inconclusive one."""
    parts = _lead(check) + [say(n) for n in check.basis]
    if check.status == "inconclusive" and check.on_inconclusive is not None and not any(
        n.code in ("gate.timings_unstable", "gate.no_latency_samples", "gate.p99_too_few") for n in check.basis
    ):
        parts.append(_POLICY_EFFECT[check.on_inconclusive][2:])
    return "; ".join(parts) or "within the limits"


def status_label(check: GateCheck) -> str:
    """The result in words; an inconclusive check says what its policy made of it (fails the gate, warning, passes)."""
    if check.status == "inconclusive":
        policy = check.on_inconclusive or "pass"
        effect = {"fail": "fails the gate", "warn": "warning", "pass": "passes"}[policy]
        return f"INCONCLUSIVE ({effect}: on_inconclusive {policy})"
    return {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP"}[check.status]


def _names(v: Mapping[str, NoteValue], key: str, shown: int | None = None) -> str:
    """A list value as names, the first ``shown`` of them and ``...`` for the rest."""
    value = v.get(key)
    items = [str(x) for x in value] if isinstance(value, list) else [str(value)]
    more = " ..." if shown is not None and len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def _runs(v: Mapping[str, NoteValue]) -> str:
    runs = v.get("runs")
    return " and ".join(str(r) for r in runs) if isinstance(runs, list) else str(runs)


_TIMING_PROBLEMS = {
    "core.timing_spread": "samples spread wider than the policy allows",
    "core.timing_disturbed": "rounds still disturbed after re-measuring",
    "core.timing_contention": "other processes competing for the cores",
}


def _unstable_why(v: Mapping[str, NoteValue]) -> str:
    """What made the timings unstable, and what to do: in one interleaved session the machine's common drift
    cancels in each round's ratio, so what is left is spread within the rounds, which more rounds or a quieter
    machine narrow; two separate runs are rerun on a quiet machine."""
    problems = v.get("problems")
    said = [_TIMING_PROBLEMS.get(str(p), str(p)) for p in problems] if isinstance(problems, list) else []
    what = f": {', '.join(said)}" if said else ""
    if v.get("session"):
        return f"{what}; drift common to both sides cancels in each round's ratio, this spread does not: rerun with more rounds or on a quieter machine"
    return f"{what}; rerun on a quiet machine"


def _policy(v: Mapping[str, NoteValue]) -> str:
    return _POLICY_EFFECT.get(str(v.get("policy")), "")


def _beyond(v: Mapping[str, NoteValue]) -> str:
    text = f"{v['over']} of {v['samples']} candidate samples above {v['max_ratio']:g}x the baseline's largest ({v['limit_ms']:.3f} ms)"
    if v.get("left_base") or v.get("left_cand"):
        text += (f" ({v['left_base']} baseline and {v['left_cand']} candidate round(s) left out: their interleaved dense "
                 "reference was disturbed)")
    return text


def _budget_misses(v: Mapping[str, NoteValue]) -> str:
    if not v.get("baseline_misses"):
        return ""
    lower = v.get("baseline_lower_ms")
    bound = f" (p99 lower bound {lower:.3f} ms)" if isinstance(lower, float) else ""
    return f"; the baseline misses it too{bound}: this machine is too slow for it"


def _within_budget_noise(v: Mapping[str, NoteValue]) -> str:
    lower = v.get("lower_ms")
    why = f"lower bound {lower:.3f} ms" if isinstance(lower, float) else f"{v['samples']} samples, not all over it"
    return f"p99 {v['p99_ms']:.3f} ms over the {v['budget_ms']:g} ms budget but within noise ({why})"


def _percentiles(v: Mapping[str, NoteValue]) -> str:
    return (f"baseline p50/p95/p99 {v['base_p50']:.3f}/{v['base_p95']:.3f}/{v['base_p99']:.3f} ms, candidate "
            f"{v['cand_p50']:.3f}/{v['cand_p95']:.3f}/{v['cand_p99']:.3f} ms ({v['clock']} clock)")


def _equal_latency(v: Mapping[str, NoteValue]) -> str:
    if v.get("wins"):
        return f"sparsity beats a dense model narrowed to the same latency ({v['narrowed']:.0%} of its FFN neurons removed)"
    return f"a dense model narrowed to the same latency ({v['narrowed']:.0%} of its FFN neurons removed) has better quality"


_MISSING = {
    "quality": "the candidate carries no quality measurement vs dense",
    "lowering": "the candidate has no lowering decisions",
    "kernel_error": "no per-layer kernel error vs an fp64 reference in the candidate",
}

PHRASES: dict[str, Phrase] = {
    "gate.no_evidence": lambda v: f"no evidence: {_MISSING[str(v['missing'])]}",
    "gate.timings_unstable": lambda v: f"inconclusive: timings unstable ({_runs(v)}){_unstable_why(v)}, neither pass nor fail{_policy(v)}",
    "gate.no_latency_samples": lambda v: (f"inconclusive: no latency samples in {_runs(v)} (0 measured), neither pass nor fail; "
                                          f"record the run's latency (replay, or a trace with iterations){_policy(v)}"),
    "gate.own_speedup": "run {run}'s own recorded speedup vs the dense model timed beside it {speedup:.3f}x",
    "gate.p99_exceeds": lambda v: f"p99 ratio {v['ratio']:.3f} > {v['max_ratio']:g}: {_beyond(v)}, p={v['p']:.3g} (one-sided)",
    "gate.p99_exceeds_separated": lambda v: (f"p99 ratio {v['ratio']:.3f} > {v['max_ratio']:g}: {_beyond(v)}: too few samples "
                                             f"for the count to reach alpha {v['alpha']:g}, but separated"),
    "gate.p99_within_noise": lambda v: (f"p99 ratio {v['ratio']:.3f} above {v['max_ratio']:g} but within noise: {_beyond(v)} ("
                                        + (f"{v['needed']} needed at alpha {v['alpha']:g})" if v.get("needed") is not None
                                           else f"no count is significant with {v['samples']} samples)")),
    "gate.budget_every_sample": lambda v: (f"every one of the {v['samples']} candidate samples is over the {v['budget_ms']:g} ms "
                                           f"budget{_budget_misses(v)}"),
    "gate.budget_p99": lambda v: (f"p99 {v['p99_ms']:.3f} ms over the {v['budget_ms']:g} ms budget (lower bound "
                                  f"{v['lower_ms']:.3f} ms){_budget_misses(v)}"),
    "gate.budget_within_noise": _within_budget_noise,
    "gate.percentiles": _percentiles,
    "gate.p99_too_few": lambda v: (f"inconclusive: {v['base']} vs {v['cand']} samples, too few to judge a tail "
                                   f"({v.get('needed', 3)} a side needed: capture or run that many){_policy(v)}"),
    "gate.p99_few_samples": lambda v: f"{P99_FEW_SAMPLES.format(n=v['n'])}: the check is the exceedance count, not the p99",
    "gate.equal_latency": _equal_latency,
    "gate.no_equal_latency": "no equal-latency comparison recorded",
    "gate.nothing_meant_sparse": "no layer of the candidate is meant to be sparse",
    "gate.fallback_layers": lambda v: (f"run dense: {_names(v, 'layers', 5)} ({_names(v, 'reasons')})"
                                       + (f"; {v['time_share']:.1%} of kernel time in these fallbacks" if isinstance(v.get("time_share"), float) else "")),
    "gate.layer_error": "{layer} rel err {rel_err:.3g} > {limit:g} ({precision})",
    "gate.worst_layer_error": "worst {layer} rel err {rel_err:.3g} ({share:.0%} of its tolerance)",
    "gate.precision_changed": lambda v: (("precision changed (allowed by the policy): " if v.get("allowed") else "precision changed: ")
                                         + _names(v, "changes", 5)),
    "gate.no_tolerance": "no tolerance for {modes} in the policy",
}


def significance_words(test: GateTest, pairing: CandidatePairing | None = None) -> str:
    """The latency test of a fix's re-run: against the candidate replayed again in its session (and why, when the
    machine drifted since locate), or against the candidate locate measured (the machine did not drift)."""
    if test.same_session:
        why = " (the machine drifted since locate, or could not be shown not to)" if pairing is not None and pairing.candidate == "fresh" else ""
        return f"against the candidate replayed again in the fixed run's interleaved session, round by round{why}: {test_words(test)}"
    if pairing is not None and pairing.candidate == "locate":
        return f"against the candidate locate measured, unpaired (the dense reference shows no drift between the two sessions): {test_words(test)}"
    return test_words(test)


_CAPTURES = {
    "no_quality_evidence": "a quality measurement of the candidate against the dense model (replay the workload, or `sparsedebug quality`)",
    "no_fallback_evidence": "a lowering decision with its reason for every layer (an annotated trace, or a replay)",
}


def refusal_words(refusal: Refusal, decision: DecisionOutcome) -> str:
    """One reason ship is refused."""
    label = decision.judged_on
    check = next((c for c in decision.gate.checks if c.id == refusal.check), None) if decision.gate is not None else None
    detail = detail_words(check) if check is not None else ""
    return {
        "no_fallback_evidence": f"no fallback evidence: the {label} lacks a lowering decision with reason for every layer",
        "no_quality_evidence": f"no quality evidence: the {label} carries no quality measurement against the dense model",
        "speedup_not_passed": f"effective speedup check {refusal.status}: {detail}",
        "quality_fails": f"quality guardrail fails: {detail}",
        "check_fails": f"gate check {refusal.check} fails: {detail}",
    }[refusal.code]


def decision_reasons(decision: DecisionOutcome, fix: FixOutcome | None) -> list[str]:
    """The decision's reasons in words: its rule's, then a speedup across launch modes."""
    label = decision.judged_on
    checks = {c.id: c for c in decision.gate.checks} if decision.gate is not None else {}
    failing = [checks[i] for i in decision.failing if i in checks]
    failed_text = "; ".join(f"gate check {c.id} fails: {detail_words(c)}" for c in failing)
    q = checks.get("quality_delta")
    holds = "speed and quality" if q is not None and q.status == "pass" else "speed (quality not measured)"
    target = (fix.target if fix is not None else None) or "its target metric"
    code = decision.code
    if code == "passes":
        reason = f"the {label} passes every gate check with fallback and quality evidence in the bundle"
    elif code == "unchanged":
        reason = (f"the {label} does not differ from the baseline beyond noise in any stage that could be compared, "
                  "and no gate check fails: "
                  "there is no change to roll back or escalate")
    elif code == "fix_moved_holds":
        reason = f"the bounded fix moved {target} and the {label} holds {holds}, but ship is refused until the evidence below is in"
    elif code == "win_missing_evidence":
        missing = [r for r in decision.ship_refused if r.check is None]
        speed = checks.get("effective_speedup")
        what = "; ".join(("quality evidence" if r.code == "no_quality_evidence" else "fallback evidence") + " is missing" for r in missing)
        captures = " and ".join(_CAPTURES[r.code] for r in missing if r.code in _CAPTURES) or "the evidence named below"
        reason = (f"the {label} is a measured win ({measured_words(speed) if speed is not None else '-'}) with no failing gate "
                  f"check, but {what}: capture {captures} before shipping")
    elif code == "no_mechanism":
        what = failed_text or "the gate finds no measured win"
        reason = f"no mechanism won the classification and {what}: the evidence does not single out a cause"
    elif code == "worse_than_baseline":
        bad = [c for c in failing if c.id in ("effective_speedup", "quality_delta")]
        worse = " and ".join("slower" if c.id == "effective_speedup" else "worse in quality" for c in bad)
        recovered = " even after the bounded fix" if fix is not None and fix.applied else " and no fix was applied"
        reason = f"the {label} is {worse} than the baseline allows{recovered} ({'; '.join(detail_words(c) for c in bad)})"
    elif code == "no_fix_needed":
        reason = f"no fix was needed and the {label} holds {holds}, but ship is refused until the evidence below is in"
    elif code == "fix_moved_checks_fail":
        reason = f"the bounded fix moved {target}, but {failed_text}"
    elif code == "too_few_samples":
        s = decision.speed
        counts = f"{s.n_base} vs {s.n_cand} samples; {s.needed} a side needed" if s is not None else "too few samples"
        reason = (f"the {label}'s latency samples are too few to judge it against the baseline ({counts}): "
                  "capture or run that many, then decide")
    elif code == "fix_did_not_move":
        how = fix_how_words(fix) if fix is not None else ""
        reason = f"the applied fix did not move {target} ({how}) and the evidence is incomplete"
    else:
        reason = f"the proposed fix was not applied, so nothing shows it removes the cause: {fix_how_words(fix) if fix is not None else ''}"
    reasons = [reason]
    if decision.across_launch:
        base, run = decision.across_launch
        reasons.append(f"its speedup over the baseline is across launch modes ({base} baseline vs {run} {label}): not like for like")
    return reasons
