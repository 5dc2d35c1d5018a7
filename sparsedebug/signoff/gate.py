"""The CI gate: a YAML policy of thresholds evaluated on a baseline and a candidate run.

Five checks, one per threshold (each is one JUnit testcase):

- ``effective_speedup``: candidate p50 speedup over the baseline must reach
  ``min``. A shortfall fails only when it is real, the asv way: the candidate's
  samples must be slower than the target (baseline samples divided by ``min``)
  by more than ``significance.factor`` AND a one-sided Mann-Whitney U rank test (in
  the direction of harm: the candidate slower) must reject at ``significance.alpha``
  (``sparsedebug.core.stats.compare_samples``), persistently. 3 samples a side
  reach alpha 0.05 one-sided. With too few samples for the test to ever reach
  ``alpha`` (2 against 2), a shortfall fails when the samples are separated (every
  candidate sample beyond every baseline sample by the factor) and is otherwise
  ``inconclusive``. Two replays of one interleaved session (``replay_pair``) are
  tested round by round instead (a one-sided signed-rank test on the per-round
  ratios, :mod:`sparsedebug.core.paired`; 5 rounds reach 0.05), so the machine's
  drift during the session cancels.
- ``p99_latency``: candidate p99 / baseline p99 at most ``max_ratio``, and within
  the candidate's latency budget when it records one and ``use_budget`` is on; each
  fails only beyond sampling noise (a one-sided exceedance count and order-statistic
  bounds of the p99, ``core.tails``). 3 samples a side can fail it (all 3 above
  ``max_ratio`` x the baseline's largest); with fewer, separated samples fail and
  anything else is ``inconclusive``.

What an inconclusive speed or tail check does in CI is its section's
``on_inconclusive`` (``fail`` by default, ``warn`` or ``pass``).

For two replays whose dense references are the same computation, the speed and p99
checks allow for how far the machine itself moved that identical work between them
(``sparsedebug.locate.reference``): a shortfall within the machine's own drift is not
the candidate's.
- ``quality_delta``: candidate output quality against the dense model (cosine,
  relative error, task accuracy drop), and optionally the equal-latency verdict.
- ``fallback_rate``: share of layers meant to be sparse that run dense.
- ``precision_drift``: per-layer kernel error against the fp64 reference within
  the tolerance of that layer's precision, and no layer changing precision
  against the baseline unless allowed (``core.patterns.precision_changes``: by
  its labels, or a move onto an fp32 path its kernels show; classify's
  ``precision.dtype_change`` reads the same list).

A check whose evidence is absent from the records is ``skipped`` (or ``fail``
with ``missing_evidence: fail``), except the speed and tail checks: a run with no
latency samples at all has too few to decide, so they are ``inconclusive`` and their
``on_inconclusive`` (``fail`` by default) decides: absence is never a pass. The gate
passes when no check fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, validate
from sparsedebug.core.judgement import DEFAULT_RULE, judge, judgement_of, needed_samples, short_of
from sparsedebug.core.paired import paired_ratio
from sparsedebug.core.patterns import precision_changes, precision_from
from sparsedebug.core.stats import TAIL_MIN_SAMPLES, median
from sparsedebug.core.tails import P99, exceedance_p, exceedances_needed, quantile_bounds
from sparsedebug.core.timing import unstable_runs
from sparsedebug.locate.reference import calm_latencies, machine_drift, session_block
from sparsedebug.records.gate import (
    CheckId,
    CheckStatus,
    GateCheck,
    GateFigure,
    GatePolicy,
    GateResult,
    GateTest,
    OnInconclusive,
    P99Policy,
)
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import Judgement, JudgementRule, SampleComparison
from sparsedebug.signoff.metrics import fallback_summary, latency, layer_rows, p50_speedup, run_clock


def load_policy(path: Path | None) -> GatePolicy:
    """Load a gate policy YAML; ``None`` gives the built-in default. An empty file is a ``UserError``, not the defaults."""
    if path is None:
        return GatePolicy()
    data = load_data(path)
    if data is None:
        raise UserError(
            f"{path}: empty policy file; write the thresholds to change (see playbooks/gate-default.yaml), "
            "or leave out --policy for the defaults"
        )
    return validate(GatePolicy, data, str(path))


Shift = Literal["slower", "faster", "same", "inconclusive"]


def _tested(cmp: SampleComparison, *, factor: float) -> GateTest:
    """The facts of the rule's judgement (``core.judgement``) as the gate records them: the rank test (two-sample, or
    signed-rank over paired rounds), or too few samples to run it and how many a side are needed."""
    kind = "too_few" if not cmp.enough_samples else ("paired_rank" if cmp.paired else "rank")
    return GateTest(
        kind=kind, p=cmp.p_value, alpha=cmp.alpha, factor=factor, n_base=cmp.n_base, n_cand=cmp.n_cand, needed=cmp.needed,
        ratio=cmp.ratio, significant=cmp.significant, persistent=cmp.persistent, same_session=cmp.paired,
        judgement=judgement_of(cmp),
    )


def judge_shift(
    before: list[float], after: list[float], *, rule: JudgementRule = DEFAULT_RULE, block: int | None = None,
) -> tuple[Shift, GateTest]:
    """Whether ``after`` is slower, faster or the same as ``before`` by the one rule (``core.judgement``), and the
    test that said so; ``inconclusive`` on fewer samples than the rule needs.

    ``block`` (the two timed in the same rounds of one session, one sample per round each): the test
    runs on the paired rounds (:func:`sparsedebug.core.paired.compare_paired`).
    """
    rounds = block if block is not None and len(before) == len(after) else None
    cmp = judge(before, after, rule, block=rounds)
    shifts: dict[Judgement, Shift] = {"loss": "slower", "win": "faster", "no_change": "same", "inconclusive": "inconclusive"}
    test = _tested(cmp, factor=rule.factor)
    return shifts[judgement_of(cmp)], test


def _missing(check_id: CheckId, why: str, policy: GatePolicy) -> GateCheck:
    """A check whose evidence is absent: skipped, or failed under ``missing_evidence: fail``; ``why`` names what is missing."""
    status: CheckStatus = "fail" if policy.missing_evidence == "fail" else "skipped"
    return GateCheck(id=check_id, status=status, basis=[note("gate.no_evidence", missing=why)])


def _unstable(check_id: CheckId, base: RunRecord, cand: RunRecord, policy: OnInconclusive) -> GateCheck | None:
    """An ``inconclusive`` check when either run's whole-forward timings were unstable, else None.

    Runs timed in the same rounds (one interleaved session) are not stopped by sustained contention
    alone: it slowed both sides of every round alike.
    """
    same_rounds = session_block(base, cand) is not None
    unstable = unstable_runs([(run.name, run.outcome.timing) for run in (base, cand)], same_rounds=same_rounds)
    if not unstable:
        return None
    problems = sorted({n.code for run in (base, cand) if run.outcome.timing is not None for n in run.outcome.timing.problems})
    return GateCheck(id=check_id, status="inconclusive", on_inconclusive=policy,
                     basis=[note("gate.timings_unstable", runs=unstable, policy=policy, session=same_rounds, problems=problems)])


def _no_samples(check_id: CheckId, base: RunRecord, cand: RunRecord, policy: OnInconclusive) -> GateCheck:
    """A timing check on a run with no latency samples: zero samples are too few to decide, so the check is
    ``inconclusive`` and its ``on_inconclusive`` (``fail`` by default) decides; never a skipped pass."""
    empty = [run.name for run in (base, cand) if not run.outcome.latency_samples_ms]
    return GateCheck(id=check_id, status="inconclusive", on_inconclusive=policy,
                     basis=[note("gate.no_latency_samples", runs=empty, policy=policy)])


def _drift_note(base: RunRecord, cand: RunRecord) -> list[Note]:
    """The machine's own drift between two replays of the same dense work, as locate records it (one session: none)."""
    facts = machine_drift(base, cand).facts
    return [facts] if facts is not None else []


def machine_slowness(base: RunRecord, cand: RunRecord) -> float:
    """How much slower (>= 1) the machine itself ran identical dense work in the candidate's replay than in the
    baseline's (``locate.reference.machine_drift``); 1.0 when not measured."""
    band = machine_drift(base, cand).forward_band
    return band[1] if band is not None else 1.0


def judge_speed(
    base: RunRecord, cand: RunRecord, rule: JudgementRule = DEFAULT_RULE, *, target: float = 1.0, drift: float = 1.0,
) -> SampleComparison:
    """The candidate's latency samples against the baseline's divided by ``target`` (a required speedup), by the one
    rule (``core.judgement``): round by round for two runs of one session; a slowdown within the machine's own
    ``drift`` (>= 1) is no change (``drift_band`` then holds it). Both runs must hold latency samples."""
    b, c = base.outcome.latency_samples_ms, cand.outcome.latency_samples_ms
    block = session_block(base, cand) if len(b) == len(c) else None
    cmp = judge([x / target for x in b], c, rule, block=block)
    speedup = 1.0 / (paired_ratio(b, c, block) if block is not None else median(c) / median(b))
    if cmp.direction == "slower" and target / speedup <= drift * rule.factor:
        return cmp.model_copy(update={"direction": "same", "significant": False, "persistent": False, "drift_band": [1.0, drift]})
    return cmp


def check_speedup(base: RunRecord, cand: RunRecord, policy: GatePolicy, drift: float = 1.0) -> GateCheck:
    """Candidate p50 speedup over the baseline, significance as asv: factor and rank test.

    ``drift`` (>= 1) is how much slower the machine itself ran identical work in the
    candidate's run than in the baseline's: a shortfall within it is the machine's.
    """
    assert policy.effective_speedup is not None
    target = policy.effective_speedup.min
    sig = policy.significance
    on_inc = policy.effective_speedup.on_inconclusive
    b, c = base.outcome.latency_samples_ms, cand.outcome.latency_samples_ms
    if not b or not c:
        return _no_samples("effective_speedup", base, cand, on_inc)
    unstable = _unstable("effective_speedup", base, cand, on_inc)
    if unstable is not None:
        return unstable
    block = session_block(base, cand) if len(b) == len(c) else None
    speedup = p50_speedup(base, cand)  # one session: the paired estimate, free of the drift both sides saw
    assert speedup is not None
    figure = GateFigure(quantity="speedup_p50", value=speedup, unit="x", limit=target, direction="at_least",
                        count=len(b), of=None if block is not None else len(c))
    basis = []
    if cand.outcome.effective_speedup is not None:
        basis.append(note("gate.own_speedup", run=cand.name, speedup=cand.outcome.effective_speedup))
    # a loss fails, a win or no change passes, too few samples for the rule is inconclusive whatever the ratio
    cmp = judge_speed(base, cand, sig, target=target, drift=drift)
    test = _tested(cmp, factor=sig.factor)
    if cmp.drift_band is not None:
        test = test.model_copy(update={"drift": drift})
    statuses: dict[Judgement, CheckStatus] = {"loss": "fail", "win": "pass", "no_change": "pass", "inconclusive": "inconclusive"}
    status = statuses[judgement_of(cmp)]
    return GateCheck(
        id="effective_speedup", status=status, figures=[figure], test=test, basis=basis,
        on_inconclusive=on_inc if status == "inconclusive" else None,
    )


def _p99_problems(base: RunRecord, cand: RunRecord, pol: P99Policy, alpha: float, drift: float) -> tuple[list[Note], list[Note], GateTest]:
    """Failures and notes of the p99 check, and its exceedance test: each fails only beyond sampling noise
    (``core.tails``): the ratio when more calm candidate rounds exceed ``max_ratio`` x the baseline's largest (x the
    machine's ``drift``) than chance puts there at ``alpha``; the budget when the candidate's p99 lower confidence
    bound is over it."""
    bl, cl = latency(base), latency(cand)
    assert bl is not None and cl is not None
    b_tail = quantile_bounds(base.outcome.latency_samples_ms, P99, alpha)
    c_tail = quantile_bounds(cand.outcome.latency_samples_ms, P99, alpha)
    (b_samples, b_left), (c_samples, c_left) = calm_latencies(base), calm_latencies(cand)
    limit = pol.max_ratio * max(b_samples) * drift
    over = sum(1 for x in c_samples if x > limit)
    need = exceedances_needed(len(b_samples), len(c_samples), alpha)
    p_tail = exceedance_p(over, len(b_samples), len(c_samples))
    ratio = cl.p99 / bl.p99
    test = GateTest(kind="exceedance", p=p_tail, alpha=alpha, n_base=len(b_samples), n_cand=len(c_samples), needed=need,
                    ratio=ratio, drift=drift if drift > 1.0 else None)
    problems: list[Note] = []
    notes: list[Note] = []
    beyond = {"over": over, "samples": len(c_samples), "max_ratio": pol.max_ratio, "limit_ms": limit,
              "left_base": b_left, "left_cand": c_left}
    if need is not None and over >= need:
        problems.append(note("gate.p99_exceeds", ratio=ratio, p=p_tail, **beyond))
    elif need is None and len(b_samples) >= 2 and len(c_samples) >= 2 and over == len(c_samples):
        problems.append(note("gate.p99_exceeds_separated", ratio=ratio, alpha=alpha, **beyond))
    elif ratio > pol.max_ratio:
        notes.append(note("gate.p99_within_noise", ratio=ratio, needed=need, alpha=alpha, **beyond))
    budget = cand.outcome.budget_ms
    small = len(c_samples) < TAIL_MIN_SAMPLES
    if pol.use_budget and budget is not None:
        base_misses = bool(b_samples) and min(b_samples) > budget if small else b_tail.low > budget
        # two sides of one session that both miss the budget: the machine ran slow for both (a busy CI runner), not the
        # candidate's miss; the ratio check above still judges the candidate against the baseline
        missed = notes if base_misses and session_block(base, cand) is not None else problems
        if small and min(c_samples) > budget:
            missed.append(note("gate.budget_every_sample", samples=len(c_samples), budget_ms=budget, baseline_misses=base_misses))
        elif small and cl.p99 > budget:
            notes.append(note("gate.budget_within_noise", p99_ms=cl.p99, budget_ms=budget, samples=len(c_samples), lower_ms=None))
        elif not small and c_tail.low > budget:
            missed.append(note("gate.budget_p99", p99_ms=cl.p99, budget_ms=budget, lower_ms=c_tail.low,
                                 baseline_misses=base_misses, baseline_lower_ms=b_tail.low))
        elif cl.p99 > budget:
            notes.append(note("gate.budget_within_noise", p99_ms=cl.p99, budget_ms=budget, samples=len(c_samples), lower_ms=c_tail.low))
    return problems, notes, test


def check_p99(base: RunRecord, cand: RunRecord, policy: GatePolicy, drift: float = 1.0) -> GateCheck:
    """Candidate p99 against the baseline's p99, and against the candidate's latency budget.

    Each fails only beyond sampling noise (:func:`_p99_problems`; ``drift`` >= 1 is how much
    slower the machine itself ran identical work in the candidate's run). With too few
    samples for the exceedance count to reach alpha and no separation, or unstable
    timings, the check is inconclusive (its ``on_inconclusive`` decides).
    """
    assert policy.p99_latency is not None
    pol = policy.p99_latency
    alpha = policy.significance.alpha
    bl, cl = latency(base), latency(cand)
    if bl is None or cl is None:
        return _no_samples("p99_latency", base, cand, pol.on_inconclusive)
    unstable = _unstable("p99_latency", base, cand, pol.on_inconclusive)
    if unstable is not None:
        return unstable
    problems, notes, test = _p99_problems(base, cand, pol, alpha, drift)
    (b_calm, _bl), (c_calm, _cl) = calm_latencies(base), calm_latencies(cand)
    n = min(bl.n, cl.n)
    # the one rule (core.judgement): fewer calm samples a side than it needs judge nothing, whatever they show
    short = short_of(len(b_calm), len(c_calm), policy.significance)
    inconclusive = short is not None or (not problems and exceedances_needed(len(b_calm), len(c_calm), alpha) is None)
    if short is not None:
        problems, test = [], test.model_copy(update={"kind": "too_few", "needed": short, "p": None})
    figures = [
        GateFigure(quantity="p99_ratio", value=cl.p99 / bl.p99, unit="ratio", limit=pol.max_ratio, direction="at_most"),
        GateFigure(quantity="p99_ms", value=cl.p99, unit="ms", baseline=bl.p99,
                   limit=cand.outcome.budget_ms if pol.use_budget else None, direction="at_most" if pol.use_budget and cand.outcome.budget_ms is not None else None),
    ]
    tail = [note("gate.percentiles", base_p50=bl.p50, base_p95=bl.p95, base_p99=bl.p99, cand_p50=cl.p50, cand_p95=cl.p95, cand_p99=cl.p99,
                 clock=_clock(base, cand))]
    if inconclusive:
        tail.append(note("gate.p99_too_few", base=len(b_calm), cand=len(c_calm), alpha=alpha, policy=pol.on_inconclusive,
                         needed=short if short is not None else needed_samples(policy.significance)))
    elif n < TAIL_MIN_SAMPLES:
        tail.append(note("gate.p99_few_samples", n=n))
    status: CheckStatus = "inconclusive" if inconclusive else ("fail" if problems else "pass")
    return GateCheck(
        id="p99_latency", status=status, on_inconclusive=pol.on_inconclusive if inconclusive else None,
        figures=figures, test=test, basis=[*problems, *notes, *tail],
    )


def _clock(base: RunRecord, cand: RunRecord) -> str:
    """Which clock the runs' latencies were read on (``signoff.metrics.bundle_clock``'s code)."""
    clocks = {run_clock(run) for run in (base, cand)}
    return clocks.pop() if len(clocks) == 1 else "mixed"


def check_quality(base: RunRecord, cand: RunRecord, policy: GatePolicy) -> GateCheck:
    """Candidate quality against the dense model, within the policy's guardrails."""
    assert policy.quality_delta is not None
    pol = policy.quality_delta
    q = cand.outcome.quality
    if q is None:
        return _missing("quality_delta", "quality", policy)
    figures = [
        GateFigure(quantity="cosine", value=q.cosine, unit="cosine", limit=pol.min_cosine,
                   direction="at_least" if pol.min_cosine is not None else None,
                   baseline=base.outcome.quality.cosine if base.outcome.quality is not None else None),
        GateFigure(quantity="rel_err", value=q.rel_err, unit="ratio", limit=pol.max_rel_err,
                   direction="at_most" if pol.max_rel_err is not None else None),
    ]
    failed = (pol.min_cosine is not None and q.cosine < pol.min_cosine) or (pol.max_rel_err is not None and q.rel_err > pol.max_rel_err)
    if q.accuracy is not None and q.dense_accuracy is not None:
        drop = q.dense_accuracy - q.accuracy
        figures.append(GateFigure(quantity="accuracy", value=q.accuracy, unit="share", baseline=q.dense_accuracy))
        figures.append(GateFigure(quantity="accuracy_drop", value=drop, unit="share", limit=pol.max_accuracy_drop,
                                  direction="at_most" if pol.max_accuracy_drop is not None else None))
        failed = failed or (pol.max_accuracy_drop is not None and drop > pol.max_accuracy_drop)
    basis: list[Note] = []
    eq = cand.outcome.equal_latency
    if eq is not None:
        loses = pol.require_equal_latency_win and not eq.sparsity_wins
        failed = failed or loses
        basis.append(note("gate.equal_latency", wins=eq.sparsity_wins, required=pol.require_equal_latency_win,
                          narrowed=eq.narrowed_ffn_fraction))
    elif pol.require_equal_latency_win:
        basis.append(note("gate.no_equal_latency"))
    return GateCheck(id="quality_delta", status="fail" if failed else "pass", figures=figures, basis=basis)


def check_fallback(base: RunRecord, cand: RunRecord, policy: GatePolicy) -> GateCheck:
    """Share of the candidate's meant-sparse layers that run dense."""
    assert policy.fallback_rate is not None
    pol = policy.fallback_rate
    if not cand.lower.layers:
        return _missing("fallback_rate", "lowering", policy)
    fb = fallback_summary(cand)
    if fb.rate is None:
        return GateCheck(id="fallback_rate", status="pass", figures=[
            GateFigure(quantity="fallback_rate", value=None, unit="share", limit=pol.max_rate, direction="at_most")],
            basis=[note("gate.nothing_meant_sparse")])
    base_fb = fallback_summary(base) if base.lower.layers else None
    figure = GateFigure(quantity="fallback_rate", value=fb.rate, unit="share", limit=pol.max_rate, direction="at_most",
                        count=fb.fell_back, of=fb.meant_sparse, baseline=base_fb.rate if base_fb is not None else None)
    basis = [note("gate.fallback_layers", layers=fb.fallback_layers, reasons=[f"{k} x{v}" for k, v in sorted(fb.reasons.items())],
                  time_share=fb.fallback_time_share)] if fb.fallback_layers else []
    return GateCheck(id="fallback_rate", status="fail" if fb.rate > pol.max_rate else "pass", figures=[figure], basis=basis)


def check_precision(base: RunRecord, cand: RunRecord, policy: GatePolicy) -> GateCheck:
    """Per-layer kernel error within its precision's tolerance; no unplanned precision change."""
    assert policy.precision_drift is not None
    pol = policy.precision_drift
    rows = layer_rows(cand)
    measured_rows = [r for r in rows if r.rel_err is not None]
    # the one list of precision changes classify's precision.dtype_change reads too (labels, or a move onto fp32)
    changes = precision_changes(base, cand)
    if not measured_rows and not changes:
        return _missing("precision_drift", "kernel_error", policy)
    over: list[Note] = []
    worst_name, worst_err, worst_ratio = "", 0.0, 0.0
    unknown_modes: set[str] = set()
    for r in measured_rows:
        key = precision_from(r.precision, r.dtype) or (r.precision or r.dtype).lower()
        limit = pol.max_rel_err.get(key)
        err = r.rel_err or 0.0
        if limit is None:
            unknown_modes.add(key)
            continue
        if err / limit > worst_ratio:
            worst_name, worst_err, worst_ratio = r.name, err, err / limit
        if err > limit:
            over.append(note("gate.layer_error", layer=r.name, rel_err=err, limit=limit, precision=key))
    figures = []
    if measured_rows:
        figures.append(GateFigure(quantity="worst_err_share", value=worst_ratio, unit="share", limit=1.0, direction="at_most",
                                  count=len(measured_rows)))
    figures.append(GateFigure(quantity="precision_changes", value=float(len(changes)), unit="count",
                              limit=None if pol.allow_precision_change else 0.0, direction=None if pol.allow_precision_change else "at_most"))
    basis: list[Note] = list(over)
    if measured_rows and worst_name:
        basis.append(note("gate.worst_layer_error", layer=worst_name, rel_err=worst_err, share=worst_ratio))
    if changes:
        basis.append(note("gate.precision_changed", changes=[f"{c.layer} {c.how}" for c in changes], allowed=pol.allow_precision_change))
    if unknown_modes:
        basis.append(note("gate.no_tolerance", modes=sorted(unknown_modes)))
    failed = bool(over) or (bool(changes) and not pol.allow_precision_change)
    return GateCheck(id="precision_drift", status="fail" if failed else "pass", figures=figures, basis=basis)


def evaluate(base: RunRecord, cand: RunRecord, policy: GatePolicy | None = None) -> GateResult:
    """Run every enabled check on ``base`` versus ``cand``."""
    pol = policy or GatePolicy()
    checks: list[GateCheck] = []
    drift = machine_slowness(base, cand)  # slowness the machine alone put on the candidate's run
    drift_notes = _drift_note(base, cand)
    for check_id, checker in (("effective_speedup", check_speedup), ("p99_latency", check_p99)):
        if getattr(pol, check_id) is not None:
            check = checker(base, cand, pol, drift)
            checks.append(check.model_copy(update={"basis": check.basis + drift_notes}))
    if pol.quality_delta is not None:
        checks.append(check_quality(base, cand, pol))
    if pol.fallback_rate is not None:
        checks.append(check_fallback(base, cand, pol))
    if pol.precision_drift is not None:
        checks.append(check_precision(base, cand, pol))
    return GateResult(
        baseline=base.name,
        candidate=cand.name,
        passed=not any(c.fails_gate for c in checks),
        checks=checks,
        policy=pol,
        inconclusive=any(c.status == "inconclusive" for c in checks),
        separately_recorded=bool(base.outcome.latency_samples_ms and cand.outcome.latency_samples_ms) and session_block(base, cand) is None,
        workloads=[run.workload.file.path for run in (base, cand) if run.workload is not None and run.workload.file is not None]
        if all(run.workload is not None and run.workload.file is not None for run in (base, cand)) else [],
    )
