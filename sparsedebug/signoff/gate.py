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
from sparsedebug.core.paired import compare_timings, enough_pairs, fewest_pairs, paired_ratio, per_round_separated
from sparsedebug.core.patterns import precision_changes, precision_from
from sparsedebug.core.stats import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    P99_FEW_SAMPLES,
    TAIL_MIN_SAMPLES,
    enough_samples,
    fewest_samples,
    median,
    separated,
)
from sparsedebug.core.tails import P99, exceedance_p, exceedances_needed, quantile_bounds
from sparsedebug.core.timing import unstable_reason
from sparsedebug.locate.reference import MachineDrift, calm_latencies, machine_drift, session_block
from sparsedebug.records.gate import CheckStatus, GateCheck, GatePolicy, GateResult, OnInconclusive, P99Policy
from sparsedebug.records.run import RunRecord
from sparsedebug.signoff.metrics import bundle_clock, equal_latency_sentence, fallback_summary, latency, layer_rows


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


def judge_shift(
    before: list[float], after: list[float], *, alpha: float = DEFAULT_ALPHA, factor: float = DEFAULT_MIN_EFFECT,
    block: int | None = None,
) -> tuple[Literal["slower", "faster", "same"], str]:
    """Whether ``after`` is slower, faster or the same as ``before``, the asv way.

    With enough samples for a rank test to reach ``alpha``: significant (Mann-Whitney U)
    AND the median ratio beyond ``factor`` AND persistent (in both halves of the samples
    and without outliers: one burst of noise is not a shift). With too few (3 against 3),
    the factor alone decides, and the reason says so. ``block`` (the two timed in the same
    rounds of one session, one sample per round each): the test runs on the paired
    rounds (:func:`sparsedebug.core.paired.compare_paired`; 6 rounds reach 0.05).
    """
    rounds = block is not None and len(before) == len(after)
    if enough_pairs(len(after) // (block or 1), alpha) if rounds else enough_samples(len(before), len(after), alpha):
        cmp = compare_timings(before, after, block=block if rounds else None, alpha=alpha, min_effect=factor)
        if cmp.direction != "same" and not cmp.persistent:
            return "same", f"not a real shift: {cmp.reason}"
        return cmp.direction, cmp.reason
    ratio = median(after) / median(before)
    direction: Literal["slower", "faster", "same"] = (
        "slower" if ratio >= factor else ("faster" if ratio <= 1.0 / factor else "same")
    )
    return direction, (
        f"too few samples for a rank test ({len(before)} vs {len(after)}): decided on the factor alone, "
        f"median ratio x{ratio:.3f} against x{factor:g}"
    )


def judge_slowdown(
    before: list[float], after: list[float], *, alpha: float = DEFAULT_ALPHA, factor: float = DEFAULT_MIN_EFFECT, block: int | None = None
) -> tuple[Literal["slower", "same", "inconclusive"], str]:
    """Whether ``after`` is slower than ``before``, tested on the side of harm only (the gate's question).

    With enough samples for a one-sided rank test to reach ``alpha`` (3 against 3 at
    0.05): significant AND the median ratio beyond ``factor`` AND persistent. With
    fewer, the samples decide only when separated (every ``after`` sample beyond every
    ``before`` sample by ``factor``): then slower; otherwise inconclusive, never a pass.
    ``block`` (both timed in the same rounds of one session, one sample per round each):
    the same, by balanced blocks of that many rounds (:func:`sparsedebug.core.paired.compare_paired`,
    5 blocks reach 0.05; with fewer, every round's candidate beyond its own baseline by ``factor``).
    """
    m, n = len(before), len(after)
    rounds = block is not None and m == n
    if (enough_pairs(n // (block or 1), alpha, one_sided=True) if rounds else enough_samples(m, n, alpha, one_sided=True)):
        cmp = compare_timings(before, after, block=block if rounds else None, alpha=alpha, min_effect=factor, alternative="greater")
        if cmp.direction == "slower" and not cmp.persistent:
            return "same", f"not a real shift: {cmp.reason}"
        return ("slower" if cmp.direction == "slower" else "same"), f"one-sided: {cmp.reason}"
    ratio = median(after) / median(before)
    if rounds:
        need, test = fewest_pairs(alpha, one_sided=True) * (block or 1), "a one-sided signed-rank test over paired blocks of rounds"
        apart = per_round_separated(before, after, factor)
        evidence = f"every round's candidate beyond its own baseline by x{factor:g}"
    else:
        need, test = fewest_samples(alpha, one_sided=True), "a one-sided rank test"
        apart = separated(before, after, factor)
        evidence = f"every candidate sample beyond every baseline sample by x{factor:g}"
    if min(m, n) >= 2 and apart:
        return "slower", (
            f"{m} vs {n} samples, too few for {test} at alpha {alpha:g} ({need} a side needed), "
            f"but separated: {evidence} (median ratio x{ratio:.3f})"
        )
    return "inconclusive", (
        f"{m} vs {n} samples, too few for {test} at alpha {alpha:g} ({need} a side needed), and not "
        f"separated by x{factor:g} (median ratio x{ratio:.3f}): neither pass nor fail"
    )


def _missing(check_id: str, name: str, threshold: str, why: str, policy: GatePolicy) -> GateCheck:
    status: CheckStatus = "fail" if policy.missing_evidence == "fail" else "skipped"
    return GateCheck(id=check_id, name=name, status=status, measured="-", threshold=threshold, detail=f"no evidence: {why}")


def _inconclusive(
    check_id: str, name: str, threshold: str, base: RunRecord, cand: RunRecord, policy: OnInconclusive
) -> GateCheck | None:
    """An ``inconclusive`` check when either run's whole-forward timings were unstable, else None."""
    same_rounds = session_block(base, cand) is not None
    reason = unstable_reason([(base.name, base.outcome.timing), (cand.name, cand.outcome.timing)], same_rounds=same_rounds)
    if reason is None:
        return None
    return GateCheck(
        id=check_id, name=name, status="inconclusive", measured="-", threshold=threshold, on_inconclusive=policy,
        detail=f"inconclusive: timings unstable, neither pass nor fail ({reason}); rerun on a quiet machine{_policy_note(policy)}",
    )


def _no_samples(check_id: str, name: str, threshold: str, base: RunRecord, cand: RunRecord, policy: OnInconclusive) -> GateCheck:
    """A timing check on a run with no latency samples: zero samples are too few to decide, so the check is
    ``inconclusive`` and its ``on_inconclusive`` (``fail`` by default) decides; never a skipped pass."""
    empty = [run.name for run in (base, cand) if not run.outcome.latency_samples_ms]
    return GateCheck(
        id=check_id, name=name, status="inconclusive", measured="-", threshold=threshold, on_inconclusive=policy,
        detail=f"inconclusive: no latency samples in {' and '.join(empty)} (0 measured), neither pass nor fail; "
        f"record the run's latency (replay, or a trace with iterations){_policy_note(policy)}",
    )


def _policy_note(policy: OnInconclusive) -> str:
    return {"fail": "; on_inconclusive: fail, so the gate fails", "warn": "; on_inconclusive: warn", "pass": "; on_inconclusive: pass"}[policy]


def check_speedup(base: RunRecord, cand: RunRecord, policy: GatePolicy, drift: float = 1.0) -> GateCheck:
    """Candidate p50 speedup over the baseline, significance as asv: factor and rank test.

    ``drift`` (>= 1) is how much slower the machine itself ran identical work in the
    candidate's run than in the baseline's: a shortfall within it is the machine's.
    """
    assert policy.effective_speedup is not None
    target = policy.effective_speedup.min
    sig = policy.significance
    name = "effective speedup (baseline p50 / candidate p50)"
    threshold = f">= {target:g}x (shortfall must exceed x{sig.factor:g} and be significant, one-sided, at alpha {sig.alpha:g})"
    on_inc = policy.effective_speedup.on_inconclusive
    b, c = base.outcome.latency_samples_ms, cand.outcome.latency_samples_ms
    if not b or not c:
        return _no_samples("effective_speedup", name, threshold, base, cand, on_inc)
    unstable = _inconclusive("effective_speedup", name, threshold, base, cand, on_inc)
    if unstable is not None:
        return unstable
    block = session_block(base, cand) if len(b) == len(c) else None
    if block is not None:  # one session: the paired estimate, free of the drift both sides saw
        speedup = 1.0 / paired_ratio(b, c, block)
        measured = f"{speedup:.3f}x (paired over {len(b)} rounds of one session)"
    else:
        speedup = median(b) / median(c)
        measured = f"{speedup:.3f}x ({len(b)} vs {len(c)} samples)"
    extra = ""
    if cand.outcome.effective_speedup is not None:
        extra = f"; run {cand.name}'s own recorded speedup vs the dense model timed beside it {cand.outcome.effective_speedup:.3f}x"
    if speedup >= target:
        return GateCheck(
            id="effective_speedup", name=name, status="pass", measured=measured, threshold=threshold,
            detail=f"speedup {speedup:.3f}x meets {target:g}x{extra}",
        )
    scaled = [x / target for x in b]
    direction, why = judge_slowdown(scaled, c, alpha=sig.alpha, factor=sig.factor, block=block)
    if direction != "same" and target / speedup <= drift * sig.factor:
        direction, why = "same", f"within this machine's own drift between the runs (x{drift:.3f}): {why}"
    statuses: dict[str, CheckStatus] = {"slower": "fail", "same": "pass", "inconclusive": "inconclusive"}
    status = statuses[direction]
    verdict = {"fail": "fails", "pass": "within noise of", "inconclusive": "short of"}[status]
    tail = _policy_note(on_inc) if status == "inconclusive" else ""
    return GateCheck(
        id="effective_speedup", name=name, status=status, measured=measured, threshold=threshold,
        on_inconclusive=on_inc if status == "inconclusive" else None,
        detail=f"speedup {speedup:.3f}x {verdict} {target:g}x: {why}{extra}{tail}",
    )


def _p99_problems(base: RunRecord, cand: RunRecord, pol: P99Policy, alpha: float, drift: float) -> tuple[list[str], list[str]]:
    """Failures and notes of the p99 check: each fails only beyond sampling noise (``core.tails``): the ratio when more
    calm candidate rounds exceed ``max_ratio`` x the baseline's largest (x the machine's ``drift``) than chance puts
    there at ``alpha``; the budget when the candidate's p99 lower confidence bound is over it."""
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
    problems, notes = [], []
    beyond = f"{over} of {len(c_samples)} candidate samples above {pol.max_ratio:g}x the baseline's largest ({limit:.3f} ms"
    beyond += f", with the machine's drift x{drift:.3f})" if drift > 1.0 else ")"
    if b_left or c_left:
        beyond += f" ({b_left} baseline and {c_left} candidate round(s) left out: their interleaved dense reference was disturbed)"
    if need is not None and over >= need:
        problems.append(f"p99 ratio {ratio:.3f} > {pol.max_ratio:g}: {beyond}, p={p_tail:.3g} (one-sided)")
    elif need is None and len(b_samples) >= 2 and len(c_samples) >= 2 and over == len(c_samples):
        problems.append(f"p99 ratio {ratio:.3f} > {pol.max_ratio:g}: {beyond}: too few samples for the count to reach alpha {alpha:g}, but separated")
    elif ratio > pol.max_ratio:
        enough = f"{need} needed at alpha {alpha:g}" if need is not None else f"no count is significant with {len(c_samples)} samples"
        notes.append(f"p99 ratio {ratio:.3f} above {pol.max_ratio:g} but within noise: {beyond} ({enough})")
    budget = cand.outcome.budget_ms
    small = len(c_samples) < TAIL_MIN_SAMPLES
    if pol.use_budget and budget is not None:
        if small and min(c_samples) > budget:
            also = "; the baseline misses it too: this machine is too slow for it" if b_samples and min(b_samples) > budget else ""
            problems.append(f"every one of the {len(c_samples)} candidate samples is over the {budget:g} ms budget{also}")
        elif small and cl.p99 > budget:
            notes.append(f"p99 {cl.p99:.3f} ms over the {budget:g} ms budget but within noise: {len(c_samples)} samples, not all over it")
        elif not small and c_tail.low > budget:
            also = f"; the baseline misses it too (p99 lower bound {b_tail.low:.3f} ms): this machine is too slow for it" if b_tail.low > budget else ""
            problems.append(f"p99 {cl.p99:.3f} ms over the {budget:g} ms budget (lower bound {c_tail.low:.3f} ms){also}")
        elif cl.p99 > budget:
            notes.append(f"p99 {cl.p99:.3f} ms over the {budget:g} ms budget but within noise (lower bound {c_tail.low:.3f} ms)")
    return problems, notes


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
    name = "p99 latency (candidate / baseline)"
    threshold = f"<= {pol.max_ratio:g}x baseline p99" + (" and <= budget" if pol.use_budget else "") + f" (beyond noise at alpha {alpha:g})"
    bl, cl = latency(base), latency(cand)
    if bl is None or cl is None:
        return _no_samples("p99_latency", name, threshold, base, cand, pol.on_inconclusive)
    unstable = _inconclusive("p99_latency", name, threshold, base, cand, pol.on_inconclusive)
    if unstable is not None:
        return unstable
    problems, notes = _p99_problems(base, cand, pol, alpha, drift)
    (b_calm, _bl), (c_calm, _cl) = calm_latencies(base), calm_latencies(cand)
    n = min(bl.n, cl.n)
    inconclusive = not problems and exceedances_needed(len(b_calm), len(c_calm), alpha) is None
    small = ""
    if inconclusive:
        small = (f"; inconclusive: {len(b_calm)} vs {len(c_calm)} samples, too few for the exceedance count to reach alpha {alpha:g} "
                 f"(3 a side needed) and not separated{_policy_note(pol.on_inconclusive)}")
    elif n < TAIL_MIN_SAMPLES:
        small = f"; {P99_FEW_SAMPLES.format(n=n)}: the check is the exceedance count, not the p99"
    detail = (
        f"baseline p50/p95/p99 {bl.p50:.3f}/{bl.p95:.3f}/{bl.p99:.3f} ms, candidate "
        f"{cl.p50:.3f}/{cl.p95:.3f}/{cl.p99:.3f} ms ({bundle_clock([base, cand])}){small}"
    )
    detail = "; ".join([*problems, *notes, detail])
    status: CheckStatus = "inconclusive" if inconclusive else ("fail" if problems else "pass")
    return GateCheck(
        id="p99_latency", name=name, status=status, on_inconclusive=pol.on_inconclusive if inconclusive else None,
        measured=f"{cl.p99 / bl.p99:.3f}x ({cl.p99:.3f} ms vs {bl.p99:.3f} ms)", threshold=threshold, detail=detail,
    )


def check_quality(base: RunRecord, cand: RunRecord, policy: GatePolicy) -> GateCheck:
    """Candidate quality against the dense model, within the policy's guardrails."""
    assert policy.quality_delta is not None
    pol = policy.quality_delta
    parts = []
    if pol.min_cosine is not None:
        parts.append(f"cosine >= {pol.min_cosine:g}")
    if pol.max_rel_err is not None:
        parts.append(f"rel err <= {pol.max_rel_err:g}")
    if pol.max_accuracy_drop is not None:
        parts.append(f"accuracy drop <= {pol.max_accuracy_drop:g}")
    if pol.require_equal_latency_win:
        parts.append("beats a dense model at equal latency")
    threshold = ", ".join(parts) or "(no thresholds)"
    name = "quality delta vs dense"
    q = cand.outcome.quality
    if q is None:
        return _missing("quality_delta", name, threshold, "the candidate carries no quality measurement vs dense", policy)
    problems = []
    if pol.min_cosine is not None and q.cosine < pol.min_cosine:
        problems.append(f"cosine {q.cosine:.4f} < {pol.min_cosine:g}")
    if pol.max_rel_err is not None and q.rel_err > pol.max_rel_err:
        problems.append(f"rel err {q.rel_err:.4g} > {pol.max_rel_err:g}")
    measured = f"cosine {q.cosine:.4f}, rel err {q.rel_err:.4g}"
    if q.accuracy is not None and q.dense_accuracy is not None:
        drop = q.dense_accuracy - q.accuracy
        measured += f", accuracy {q.accuracy:.4f} vs dense {q.dense_accuracy:.4f}"
        if pol.max_accuracy_drop is not None and drop > pol.max_accuracy_drop:
            problems.append(f"accuracy drop {drop:.4f} > {pol.max_accuracy_drop:g}")
    eq = cand.outcome.equal_latency
    notes = []
    if eq is not None:
        notes.append(equal_latency_sentence(eq, run=f"run {cand.name}"))
        if pol.require_equal_latency_win and not eq.sparsity_wins:
            problems.append("a dense model narrowed to the same latency has better quality")
    elif pol.require_equal_latency_win:
        notes.append("no equal-latency comparison recorded")
    if base.outcome.quality is not None:
        notes.append(f"baseline cosine {base.outcome.quality.cosine:.4f}")
    detail = "; ".join(problems + notes) or "within guardrails"
    return GateCheck(
        id="quality_delta", name=name, status="fail" if problems else "pass",
        measured=measured, threshold=threshold, detail=detail,
    )


def check_fallback(base: RunRecord, cand: RunRecord, policy: GatePolicy) -> GateCheck:
    """Share of the candidate's meant-sparse layers that run dense."""
    assert policy.fallback_rate is not None
    pol = policy.fallback_rate
    name = "dense fallback rate (meant-sparse layers running dense)"
    threshold = f"<= {pol.max_rate:.0%}"
    if not cand.lower.layers:
        return _missing("fallback_rate", name, threshold, "the candidate has no lowering decisions", policy)
    fb = fallback_summary(cand)
    if fb.rate is None:
        return GateCheck(
            id="fallback_rate", name=name, status="pass", measured="n/a", threshold=threshold,
            detail="no layer of the candidate is meant to be sparse",
        )
    failed = fb.rate > pol.max_rate
    reasons = ", ".join(f"{k} x{v}" for k, v in sorted(fb.reasons.items()))
    detail = f"{fb.fell_back} of {fb.meant_sparse} meant-sparse layers run dense"
    if fb.fallback_layers:
        shown = ", ".join(fb.fallback_layers[:5]) + (" ..." if len(fb.fallback_layers) > 5 else "")
        detail += f": {shown} ({reasons})"
    if fb.fallback_time_share is not None:
        detail += f"; {fb.fallback_time_share:.1%} of kernel time in these fallbacks"
    base_fb = fallback_summary(base) if base.lower.layers else None
    if base_fb is not None and base_fb.rate is not None:
        detail += f"; baseline rate {base_fb.rate:.0%}"
    return GateCheck(
        id="fallback_rate", name=name, status="fail" if failed else "pass",
        measured=f"{fb.rate:.1%} ({fb.fell_back}/{fb.meant_sparse})", threshold=threshold, detail=detail,
    )


def check_precision(base: RunRecord, cand: RunRecord, policy: GatePolicy) -> GateCheck:
    """Per-layer kernel error within its precision's tolerance; no unplanned precision change."""
    assert policy.precision_drift is not None
    pol = policy.precision_drift
    tol = ", ".join(f"{k} {v:g}" for k, v in pol.max_rel_err.items())
    threshold = f"kernel rel err <= {tol}" + ("" if pol.allow_precision_change else "; no precision change")
    name = "precision drift (kernel error vs fp64; precision changes)"
    rows = layer_rows(cand)
    measured_rows = [r for r in rows if r.rel_err is not None]
    # the one list of precision changes classify's precision.dtype_change reads too (labels, or a move onto fp32)
    changes = [f"{c.layer} {c.how}" for c in precision_changes(base, cand)]
    if not measured_rows and not changes:
        return _missing(
            "precision_drift", name, threshold, "no per-layer kernel error vs an fp64 reference in the candidate", policy
        )
    problems = []
    worst_name, worst_err, worst_ratio = "-", 0.0, 0.0
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
            problems.append(f"{r.name} rel err {err:.3g} > {limit:g} ({key})")
    if changes and not pol.allow_precision_change:
        problems.append("precision changed: " + ", ".join(changes[:5]))
    notes = []
    if unknown_modes:
        notes.append(f"no tolerance for {', '.join(sorted(unknown_modes))} in the policy")
    parts = [f"worst {worst_name} rel err {worst_err:.3g} ({worst_ratio:.0%} of its tolerance)"] if measured_rows else []
    if changes:
        parts.append(f"precision changed on {len(changes)} layer(s): {', '.join(changes[:2])}" + (" ..." if len(changes) > 2 else ""))
    measured = "; ".join(parts) or "-"
    detail = "; ".join(problems + notes) or f"{len(measured_rows)} layer(s) within tolerance"
    if problems and len(problems) > 5:
        detail = "; ".join(problems[:5]) + f"; and {len(problems) - 5} more"
    return GateCheck(
        id="precision_drift", name=name, status="fail" if problems else "pass",
        measured=measured, threshold=threshold, detail=detail,
    )


def _drift_note(machine: MachineDrift) -> str:
    """The drift clause a timing check's detail ends with (locate.reference records it as a coded fact, issue 39)."""
    facts = machine.facts
    if facts is None:
        return ""
    if facts.code == "locate.drift.session":
        return ("; baseline and candidate were timed in one interleaved session and compared round by round: "
                "the machine's drift during the session cancels in each round's ratio (no drift band)")
    parts = []
    if machine.forward_factor is not None:
        parts.append(f"the shared dense forward ran x{machine.forward_factor:.3f} as long in the candidate's replay")
    if machine.kernel_band is not None:
        parts.append(f"{facts.values.get('layers')} shared layer references moved x{machine.kernel_band[0]:.3f} to x{machine.kernel_band[1]:.3f}")
    return "; this machine's own drift between the replays: " + "; ".join(parts) + "; changes within it are not findings"


def evaluate(base: RunRecord, cand: RunRecord, policy: GatePolicy | None = None) -> GateResult:
    """Run every enabled check on ``base`` versus ``cand``."""
    pol = policy or GatePolicy()
    checks: list[GateCheck] = []
    machine = machine_drift(base, cand)
    band = machine.forward_band
    drift = band[1] if band is not None else 1.0  # slowness the machine alone put on the candidate's run
    note = _drift_note(machine)
    if pol.effective_speedup is not None:
        check = check_speedup(base, cand, pol, drift)
        checks.append(check.model_copy(update={"detail": check.detail + note}))
    if pol.p99_latency is not None:
        check = check_p99(base, cand, pol, drift)
        checks.append(check.model_copy(update={"detail": check.detail + note}))
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
