"""Step 3 of the playbook: classify the dominant mechanism of a run's symptom.

``classify_run`` computes the metrics the rule table (``sparsedebug.classify.rules``)
names, from the run record, its baseline and any attached evidence (Nsight
Compute report, nvidia-smi log, calibrated fingerprint), scores all five
mechanisms, ranks them, and names the winner, the artifact that proves it and the
smallest reversible change that would test it (the winning rule's fix recipe: a ``Fix``
that maps onto workload knobs where it can). A metric that cannot be computed is never
scored as absent: it becomes a ``MissingEvidence`` entry naming the artifact that would
settle it.
"""

from __future__ import annotations

import math
from typing import Literal

from sparsedebug.classify.attribution import attribute, attributed_winner, largest_part, measured_growth, settle_capture
from sparsedebug.classify.context import Context, Fact, Facts, Missing, Result, make_context
from sparsedebug.classify.evidence import ncu_kernels, smi_evidence, windowed_smi_evidence
from sparsedebug.classify.precision import rel_errs
from sparsedebug.classify.rule import Rule
from sparsedebug.classify.rules import METRICS, RULES, RULES_BY_ID, STATE_METRICS
from sparsedebug.core.dispatch import FIX_ACTION, dispatch_causes
from sparsedebug.core.errors import InternalError
from sparsedebug.core.stats import median
from sparsedebug.records.classification import (
    AttributedPart,
    Attribution,
    Classification,
    Evidence,
    Fix,
    FixTarget,
    Mechanism,
    MechanismScore,
    MissingEvidence,
    NcuEvidence,
    Proof,
    SettleCapture,
    SmiEvidence,
)
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.note_codes.facts import CauseCode
from sparsedebug.records.notes import note
from sparsedebug.records.run import RunRecord
from sparsedebug.sources.evidence import NO_EVIDENCE, AttachedEvidence
from sparsedebug.sources.latency import on_trace_clock
from sparsedebug.sources.registry import replayed

# A rule that fires on the baseline as well does not score unless the candidate is this much worse.
SHARED_TOLERANCE = 1.10

# Run metrics a ``Fix`` may name besides the single-run rule metrics (``STATE_METRICS``).
EXTRA_METRICS: tuple[str, ...] = ("latency_p50_ms", "busy_p50_ms", "max_rel_err")


# --------------------------------------------------------------------------- evidence per rule


def _gate_shared_with_baseline(rule: Rule, result: Fact, base: Fact) -> None:
    """Gate ``result`` when the baseline shows the same condition about as strongly: it is not what changed. Where the
    metric is a ratio over an amount (``Fact.amount``: ms of non-kernel time, host wait, copies), the amount must grow
    too: a ratio that grew only because its denominator shrank is still the baseline's condition."""
    if result.gate is not None or result.value is None or base.value is None or base.gate is not None:
        return
    if not (rule.fires(result.value) and rule.fires(base.value)):
        return
    if rule.op == ">":
        worse = result.value > base.value * SHARED_TOLERANCE
    else:
        worse = result.value * SHARED_TOLERANCE < base.value
    if result.amount is not None and base.amount is not None and result.amount <= base.amount * SHARED_TOLERANCE:
        worse = False
    if not worse:
        result.gate = note("mechanisms.gate_baseline_shares", base_value=base.value)


def _evaluate(rule: Rule, result: Fact, base: Result | None = None) -> Evidence:
    """One rule on its metric's fact: fired or not, what it adds to its mechanism's score, and (one-run rules beside a
    baseline) whether it fires on the baseline's own fact."""
    if result.value is not None and not math.isfinite(result.value):
        result = Fact(None, result.source, result.detail, gate=note("classify.not_finite", value=str(result.value)))
    fired = result.value is not None and result.gate is None and rule.fires(result.value)
    contribution = rule.contribution(result.value) if fired and result.value is not None else 0.0
    return Evidence(
        rule=rule.id,
        mechanism=rule.mechanism,
        metric=rule.metric,
        value=result.value,
        op=rule.op,
        threshold=rule.threshold,
        unit=rule.unit,
        fired=fired,
        contribution=round(contribution, 6),
        source=result.source,
        detail=result.detail,
        gate=result.gate,
        baseline_fired=rule.fires(base.value) if isinstance(base, Fact) and base.value is not None and base.gate is None else None,
    )


def _merge_missing(items: list[tuple[Rule, Missing]]) -> list[MissingEvidence]:
    """One entry per mechanism and artifact, listing every rule that artifact would settle."""
    merged: dict[tuple[Mechanism, str, str], MissingEvidence] = {}
    for rule, miss in items:
        key = (rule.mechanism, miss.reason.model_dump_json(), miss.capture.model_dump_json())
        if key in merged:
            merged[key].rules.append(rule.id)
        else:
            merged[key] = MissingEvidence(mechanism=rule.mechanism, rules=[rule.id], reason=miss.reason, capture=miss.capture)
    return list(merged.values())


def _baseline_facts(baseline: RunRecord, fingerprint: Fingerprint | None, gpu: str | None) -> dict[str, Result]:
    """The single-run metrics computed on the baseline alone."""
    ctx = make_context(baseline, artifact=run_artifact_label(baseline), fingerprint=fingerprint, gpu=gpu)
    return {metric: METRICS[metric](ctx) for metric in STATE_METRICS}


def _rule_evidence(facts: Facts, base_facts: dict[str, Result]) -> tuple[list[Evidence], list[tuple[Rule, Missing]]]:
    """Every rule evaluated on its metric (gated where the baseline shares the condition), and the rules left missing."""
    evidence: list[Evidence] = []
    missing: list[tuple[Rule, Missing]] = []
    for rule in RULES:
        result = facts.results[rule.metric]
        if isinstance(result, Missing):
            missing.append((rule, result))
            continue
        base_result = base_facts.get(rule.metric)
        if isinstance(base_result, Fact):
            _gate_shared_with_baseline(rule, result, base_result)
        evidence.append(_evaluate(rule, result, base_result))
    return evidence, missing


# --------------------------------------------------------------------------- ranking and verdict


def _rank(evidence: list[Evidence], missing: list[tuple[Rule, Missing]]) -> list[MechanismScore]:
    """All five mechanisms by total score (ties: evaluated before unknown, then the playbook's order)."""
    totals: dict[Mechanism, float] = {m: 0.0 for m in Mechanism}
    fired: dict[Mechanism, int] = {m: 0 for m in Mechanism}
    evaluated: dict[Mechanism, int] = {m: 0 for m in Mechanism}
    missed: dict[Mechanism, int] = {m: 0 for m in Mechanism}
    for line in evidence:
        totals[line.mechanism] += line.contribution
        fired[line.mechanism] += int(line.fired)
        evaluated[line.mechanism] += int(line.value is not None)
    for rule, _ in missing:
        missed[rule.mechanism] += 1
    order = list(Mechanism)
    ranked = sorted(order, key=lambda m: (-totals[m], evaluated[m] == 0, order.index(m)))
    return [
        MechanismScore(
            mechanism=m,
            rank=i + 1,
            score=round(totals[m], 6),
            status="supported" if fired[m] else ("not_supported" if evaluated[m] else "unknown"),
            rules_fired=fired[m],
            rules_evaluated=evaluated[m],
            rules_missing=missed[m],
        )
        for i, m in enumerate(ranked)
    ]


def _rank_by_attribution(scores: list[MechanismScore], attribution: Attribution | None) -> list[MechanismScore]:
    """The ranking with each mechanism's attributed share; the measured shares lead when latency grew and one carries it."""
    if attribution is None:
        return scores
    shares = {s.mechanism: s for s in attribution.mechanisms}
    with_share = [
        score.model_copy(update={
            "attributed_ms": shares[score.mechanism].ms if score.mechanism in shares else 0.0,
            "attributed_share": shares[score.mechanism].share if score.mechanism in shares else None,
        })
        for score in scores
    ]
    if attributed_winner(attribution) is None:
        return with_share
    order = [s.mechanism for s in attribution.mechanisms if s.ms > 0]
    ranked = sorted(with_share, key=lambda s: (order.index(s.mechanism) if s.mechanism in order else len(order), s.rank))
    return [s.model_copy(update={"rank": i + 1}) for i, s in enumerate(ranked)]


def _cause_targets(attribution: Attribution, ctx: Context, codes: list[CauseCode]) -> list[FixTarget]:
    """Every layer whose path change shows one of ``codes`` as its cause, grouped by cause, with the tensors it names
    and the kernel-time change those layers carry."""
    b_lower, c_lower = ctx.lower(ctx.baseline), ctx.lower()
    layers: dict[CauseCode, list[str]] = {c: [] for c in codes}
    tensors: dict[CauseCode, list[str]] = {c: [] for c in codes}
    removes: dict[CauseCode, float] = {c: 0.0 for c in codes}
    restore: dict[CauseCode, str | None] = {c: None for c in codes}
    for part in attribution.parts:
        before, after = b_lower.get(part.part), c_lower.get(part.part)
        if part.kind != "kernel" or not part.cause or before is None or after is None:
            continue
        for cause in dispatch_causes(before.dispatch, after.dispatch):
            if cause.code not in layers:
                continue
            if part.part not in layers[cause.code]:
                layers[cause.code].append(part.part)
                removes[cause.code] += part.ms
            if cause.tensor is not None and cause.tensor not in tensors[cause.code]:
                tensors[cause.code].append(cause.tensor)
            restore[cause.code] = restore[cause.code] or cause.was
    return [FixTarget(cause=c, layers=layers[c], tensors=tensors[c], removes_ms=round(removes[c], 6), restore=restore[c])
            for c in codes if layers[c]]


def _attributed_fix(part: AttributedPart, attribution: Attribution, facts: Facts) -> Fix | None:
    """The fix at the cause of the winner's largest part, as wide as that cause (every layer and tensor sharing it),
    expecting the time those layers' path change costs; else its rule's recipe."""
    ctx = facts.ctx
    before, after = ctx.lower(ctx.baseline).get(part.part), ctx.lower().get(part.part)
    causes = dispatch_causes(before.dispatch, after.dispatch) if before is not None and after is not None and part.cause else []
    if causes:
        codes = list(dict.fromkeys(c.code for c in causes))
        targets = _cause_targets(attribution, ctx, codes)
        cited = targets[0]  # the part's own first cause: codes[0]
        math = all((lo.dispatch.backend if lo.dispatch else None) == "math" for lo in (ctx.lower().get(n) for n in cited.layers) if lo)
        return Fix(kind="advice", layer=part.part, rule=part.rule or "", metric="latency_p50_ms", direction="down",
                   code=FIX_ACTION[codes[0]], targets=targets, removes_ms=cited.removes_ms,
                   basis="math_path_time" if math else "changed_path_time")
    rule = RULES_BY_ID[part.rule] if part.rule is not None else None
    if rule is None:
        raise InternalError(f"attributed part {part.part} has a mechanism but no rule")
    return rule.suggest(rule, facts)


def _attributed_verdict(
    attribution: Attribution, evidence: list[Evidence], facts: Facts
) -> tuple[Mechanism | None, float | None, Proof | None, Fix | None]:
    """The mechanism carrying the largest share, its share over the runner-up's, the part that proves it and the fix at its cause."""
    top = attributed_winner(attribution)
    assert top is not None
    positive = [s for s in attribution.mechanisms if s.ms > 0]
    margin = top.ms / positive[1].ms if len(positive) > 1 else None
    part = largest_part(attribution, top.mechanism)
    assert part is not None
    fired = [e for e in evidence if e.rule == part.rule and e.fired]
    proving = Proof(artifact=facts.ctx.run_artifact, rule=fired[0].rule if fired else None, part=part.part, part_kind=part.kind)
    return top.mechanism, margin, proving, _attributed_fix(part, attribution, facts)


def measures_a_difference(line: Evidence) -> bool:
    """Whether a fired rule measured a difference between the candidate and its baseline: a rule that compares the two
    runs (not ``Rule.one_run``), or a one-run rule that does not fire on the baseline's own value (a condition the
    baseline lacks), unless its metric is a shape of one run's samples (``Rule.sample_shape``) that no test compares."""
    rule = RULES_BY_ID[line.rule]
    if not rule.one_run:
        return True
    return line.baseline_fired is False and not rule.sample_shape


def _one_run_only(mechanism: Mechanism, evidence: list[Evidence]) -> bool:
    """Whether no rule that fired for ``mechanism`` measured a difference between the runs (``measures_a_difference``):
    its score comes from the candidate alone."""
    fired = [e for e in evidence if e.mechanism == mechanism and e.fired]
    return bool(fired) and not any(measures_a_difference(e) for e in fired)


def _artifact(ctx: Context, rule: Rule) -> str:
    """The input that proves ``rule``: its attached artifact when it reads one, else the run."""
    if rule.artifact == "smi" and ctx.smi is not None:
        return ctx.smi.source
    if rule.artifact == "ncu" and ctx.ncu_source is not None:
        return ctx.ncu_source
    return ctx.run_artifact


def _verdict(
    scores: list[MechanismScore], evidence: list[Evidence], facts: Facts
) -> tuple[Mechanism | None, float | None, Proof | None, Fix | None]:
    """The winner, its score over the runner-up's, the artifact that proves it and the fix its strongest rule suggests."""
    totals = {m: sum(e.contribution for e in evidence if e.mechanism == m) for m in Mechanism}
    first, second = scores[0].mechanism, scores[1].mechanism
    if totals[first] <= 0:
        return None, None, None, None
    runner_up = totals[second]
    margin = totals[first] / runner_up if runner_up > 0 else None
    top = max((e for e in evidence if e.mechanism == first and e.fired), key=lambda e: e.contribution)
    rule = RULES_BY_ID[top.rule]
    proving = Proof(artifact=_artifact(facts.ctx, rule), rule=top.rule)
    return first, margin, proving, rule.suggest(rule, facts)


def run_artifact_label(run: RunRecord, path: str | None = None) -> str:
    """How a run is cited: ``path`` when the caller names it, else the imported artifact file, else its name."""
    if path is not None:
        return path
    if not replayed(run) and run.source.files:
        return run.source.files[0].path
    if run.source.files:
        return f"replay of {run.source.files[0].path}"
    return f"run record '{run.name}'"


# --------------------------------------------------------------------------- entry points


def measure_metric(run: RunRecord, metric: str, fingerprint: Fingerprint | None = None) -> float | None:
    """The value of ``metric`` (as a ``Fix`` names it) on one run; None when the run cannot give it.

    Lets the playbook check that a fix moved its metric the expected way:
    ``measure_metric(fixed, fix.metric)`` versus ``measure_metric(candidate, fix.metric)``.
    Metrics that need an attached artifact (nvidia-smi, ncu) return None.
    """
    if metric == "latency_p50_ms":
        samples = run.outcome.latency_samples_ms
        return median(samples) if samples else None
    if metric == "busy_p50_ms":
        samples = run.schedule.busy_samples_ms
        return median(samples) if samples else None
    if metric == "max_rel_err":
        errs = rel_errs(run)
        return max(errs.values()) if errs else None
    if metric not in STATE_METRICS:
        return None
    result = METRICS[metric](make_context(run, artifact=run_artifact_label(run), fingerprint=fingerprint))
    return result.value if isinstance(result, Fact) else None


def classify_run(
    run: RunRecord,
    *,
    baseline: RunRecord | None = None,
    evidence: AttachedEvidence = NO_EVIDENCE,
    fingerprint: Fingerprint | None = None,
    gpu: str | None = None,
    run_path: str | None = None,
) -> Classification:
    """Score all five mechanisms for ``run`` (against ``baseline`` when given), rank them, name the winner.

    ``evidence`` holds the imported artifacts attached to the run (``sources.evidence``); ``fingerprint``
    supplies the calibrated roofline for replays and the core count; ``gpu`` names
    the GPU for the peak-table roofline of imported runs when no fingerprint says
    it; ``run_path`` is how to cite the run when it has no source file.
    """
    untraced = _untraced_delta(run, baseline)
    run, baseline = on_trace_clock(run), on_trace_clock(baseline) if baseline is not None else None
    found = classify_evidence(
        run,
        baseline=baseline,
        ncu=ncu_kernels(evidence.ncu) if evidence.ncu is not None else None,
        ncu_source=evidence.ncu.file if evidence.ncu is not None else None,
        smi=_windowed(evidence, run, fingerprint, baseline),
        base_smi=_windowed(evidence, baseline, fingerprint, run) if baseline is not None else None,
        fingerprint=fingerprint,
        gpu=gpu,
        run_path=run_path,
    )
    if untraced is None or found.attribution is None:
        return found
    return found.model_copy(update={"attribution": found.attribution.model_copy(
        update={"on_trace_clock": True, "untraced_delta_ms": untraced})})


def _untraced_delta(run: RunRecord, baseline: RunRecord | None) -> float | None:
    """Candidate p50 - baseline p50 of untraced latencies (``--latency``) when either run's were untraced, else None."""
    if baseline is None or "untraced" not in (run.outcome.latency_timing, baseline.outcome.latency_timing):
        return None
    if not run.outcome.latency_samples_ms or not baseline.outcome.latency_samples_ms:
        return None
    return median(run.outcome.latency_samples_ms) - median(baseline.outcome.latency_samples_ms)


def _windowed(
    evidence: AttachedEvidence, run: RunRecord, fingerprint: Fingerprint | None, other: RunRecord | None = None
) -> SmiEvidence | None:
    """The attached clock log over ``run``'s own window (replays: the whole log, which their rules do not score);
    ``other``: the run it is compared with, whose window the log's clock is placed against too."""
    if evidence.smi is None:
        return None
    if replayed(run):
        return smi_evidence(evidence.smi, fingerprint or run.fingerprint)
    compared = [other] if other is not None else []
    return windowed_smi_evidence(evidence.smi, run, evidence.smi_utc_offset_h, fingerprint or run.fingerprint, compared)


def classify_evidence(
    run: RunRecord,
    *,
    baseline: RunRecord | None = None,
    ncu: list[NcuEvidence] | None = None,
    ncu_source: str | None = None,
    smi: SmiEvidence | None = None,
    base_smi: SmiEvidence | None = None,
    fingerprint: Fingerprint | None = None,
    gpu: str | None = None,
    run_path: str | None = None,
) -> Classification:
    """``classify_run`` over evidence already reduced to what classification needs (``base_smi``: the clock log
    over the baseline's own window, so thermal scores only a difference between the two windows)."""
    ctx = make_context(
        run,
        artifact=run_artifact_label(run, run_path),
        baseline=baseline,
        ncu=ncu,
        ncu_source=ncu_source or ("Nsight Compute report" if ncu is not None else None),
        smi=smi,
        base_smi=base_smi,
        fingerprint=fingerprint,
        gpu=gpu,
    )
    facts = Facts(ctx, {metric: compute(ctx) for metric, compute in METRICS.items()})
    base_facts = _baseline_facts(baseline, fingerprint, gpu) if baseline is not None else {}
    evidence, missing = _rule_evidence(facts, base_facts)
    attribution = attribute(ctx, evidence)
    scores = _rank_by_attribution(_rank(evidence, missing), attribution)
    ranked_by: Literal["attribution", "score"] = "score"
    established: bool | None = None
    leading: Mechanism | None = None
    settle: SettleCapture | None = None
    if attribution is not None and attributed_winner(attribution) is not None:
        ranked_by = "attribution"
        established = True
        winner, margin, proving, fix = _attributed_verdict(attribution, evidence, facts)
    elif attribution is not None and measured_growth(attribution):
        # A growth was measured and no mechanism carries it clearly: no headline, no fix; what each carries is in
        # the attribution, and the one capture that would settle it is named.
        ranked_by = "attribution"
        established = False
        winner, margin, proving, fix = None, None, None, None
        leading = next((m.mechanism for m in attribution.mechanisms if m.ms > 0), None)
        settle = settle_capture(attribution, clock_log_unaligned=smi is not None and not smi.aligned)
    else:
        winner, margin, proving, fix = _verdict(_rank(evidence, missing), evidence, facts)
        if winner is not None and baseline is not None and _one_run_only(winner, evidence):
            # Every fired rule of the winner read the candidate alone and no change between the runs was measured to
            # carry it: a score from one run is no headline, and no fix is proposed on it.
            established = False
            winner, margin, proving, fix = None, None, None, None
            settle = "aligned_clock_log" if smi is not None and not smi.aligned else None
    inputs = [ctx.run_artifact]
    if baseline is not None:
        inputs.append(run_artifact_label(baseline))
    if ctx.ncu_source is not None:
        inputs.append(ctx.ncu_source)
    if smi is not None:
        inputs.append(smi.source)
    return Classification(
        run=run.name,
        baseline=baseline.name if baseline is not None else None,
        inputs=inputs,
        scores=scores,
        evidence=evidence,
        missing_evidence=_merge_missing(missing),
        winner=winner,
        margin=margin,
        proof=proving,
        fix=fix,
        ranked_by=ranked_by,
        attribution=attribution,
        established=established,
        leading=leading,
        settle=settle,
        roofline=ctx.roofline,
        layers=ctx.intensities,
    )
