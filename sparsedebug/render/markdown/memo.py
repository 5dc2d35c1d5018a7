"""The ACCELERATOR REVIEW MEMO, rendered from a bundle: a pure function, bundle in, Markdown out.

Sections follow the playbook's template: 1 Symptom, 2 Mechanism hypothesis,
3 Proposed action, 4 Signoff. Every number is read from the bundle's records
(run records, bisect, classification, fix outcome, fingerprint); where the bundle
lacks a figure the memo says what is missing instead of filling it in. Latency is
always quoted as p50/p95/p99, and every latency names its clock: this machine
(a replay's timings), the traced device (an imported trace), or the target
(projected onto the backend's GPU). A run with a target clock has every latency the
memo uses on both: baseline, candidate and fixed on this machine, measured, and
their whole forward on the target, projected with its basis; the narrowed dense
model of the equal-latency comparison on the target with this machine's search as
the cross-check.

The final decision (``decide``) refuses ``ship`` unless the run it would ship
carries both fallback evidence (a lowering decision with reason for every layer)
and quality evidence (a quality measurement against the dense model), and the
default gate passes on it.
"""

from __future__ import annotations

from sparsedebug.records.bundle import Movement
from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.equal_latency import quality_metric
from sparsedebug.records.findings import group_label
from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.playbook import Playbook
from sparsedebug.records.reduce import ReduceResult
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import SampleComparison
from sparsedebug.render.clocks import (
    break_even_sentence,
    bundle_clock,
    label_latencies,
    measured_clock,
    sample_count,
    target_forward,
    target_label,
    target_sentence,
)
from sparsedebug.render.document import decision as stored_decision
from sparsedebug.render.document import figures, report, sections
from sparsedebug.render.markdown.energy import expected_lines as expected_energy_lines
from sparsedebug.render.markdown.energy import measured_lines as measured_energy_lines
from sparsedebug.render.markdown.engine import sparse_kernels_line
from sparsedebug.render.markdown.ranks import rank_lines
from sparsedebug.render.markdown.tags import build_tags
from sparsedebug.render.markdown.verdicts import attributed_lines, fix_verdict, not_established_lines
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.core import change_words, reduce_verdict, replay_reason_words, timing_words
from sparsedebug.render.words.gate import decision_reasons, detail_words, measured_words, refusal_words, significance_words
from sparsedebug.render.words.locate_text import allowed_text, finding_text, stage_text, verdict_text
from sparsedebug.render.words.mechanisms_records import fix_words, margin_words, proof_words
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.run_figures import equal_latency_sentence, quality_value, real_quality_text
from sparsedebug.render.words.targets import fix_how_words


def _lat(b: LoadedBundle, run: RunRecord) -> str:
    fig = figures(b, run)
    p = fig.latency
    if p is None:
        return "no latency samples"
    text = f"p50/p95/p99 {p.p50:.3f}/{p.p95:.3f}/{p.p99:.3f} ms ({sample_count(run)}) on {measured_clock(fig)}"
    projected = target_forward(run)
    return text + (f"; {projected}" if projected is not None else "")


def _fmt(value: float | None, spec: str = ".3f", suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


def _symptom(b: LoadedBundle, book: Playbook) -> list[str]:
    base, cand = b.baseline, b.candidate
    out = ["## Memo detail: symptom", ""]
    cand_fig = figures(b, "candidate")
    speed = cand_fig.speedup
    gate = sections(b, "candidate").gate
    failing = [c.id for c in gate.checks if c.status == "fail"] if gate is not None else []
    metric = [f"- **Failing metric**: {book.primary_metric.name}."]
    clock = measured_clock(cand_fig)
    metric.append(
        f"  - Candidate speedup over the baseline (baseline p50 / candidate p50, {clock}): **{_fmt(speed, '.3f', 'x')}**."
    )
    metric.append(f"  - Latency, baseline `{base.name}`: {_lat(b, base)}; candidate `{cand.name}`: {_lat(b, cand)}.")
    if cand.outcome.budget_ms is not None and cand_fig.latency is not None:
        p99 = cand_fig.latency.p99
        within = "within" if p99 <= cand.outcome.budget_ms else "over"
        line = f"  - Latency budget {cand.outcome.budget_ms:g} ms: candidate p99 {p99:.3f} ms ({clock}) is {within} it"
        fwd = cand.target.forward.candidate if cand.target is not None else None
        if cand.target is not None and fwd is not None:
            there = "within" if fwd.total_ms <= cand.outcome.budget_ms else "over"
            line += f"; its forward on the {target_label(cand.target)}, {fwd.total_ms:.3f} ms, is {there} it"
        metric.append(line + ".")
    if cand.outcome.effective_speedup is not None:
        metric.append(
            f"  - Candidate's own effective speedup vs the dense model timed beside it in the candidate's replay (same process, "
            f"not the baseline run; {clock}): {cand.outcome.effective_speedup:.3f}x."
        )
    elif cand.outcome.timing is not None and not cand.outcome.timing.stable:
        metric.append(f"  - Candidate's own effective speedup ({clock}): not reported, timings {timing_words(cand.outcome.timing)}.")
    projected = target_sentence(cand)
    if projected is not None:
        metric.append(f"  - {projected}.")
    even = break_even_sentence(cand)
    if even is not None:
        metric.append(f"  - {even}.")
    q = cand.outcome.quality
    if q is not None and q.evidence is not None:
        metric.append(f"  - Quality vs the dense model: {real_quality_text(q)}.")
    elif q is not None:
        line = f"  - Quality vs the dense model: output cosine {q.cosine:.4f}, relative error {q.rel_err:.4g}"
        if q.accuracy is not None and q.dense_accuracy is not None:
            line += f", accuracy {q.accuracy:.4f} vs dense {q.dense_accuracy:.4f}"
        metric.append(line + ".")
    else:
        metric.append("  - Quality vs the dense model: not measured in the candidate record.")
    eq = cand.outcome.equal_latency
    if eq is not None:
        sentence = equal_latency_sentence(eq)
        metric.append(f"  - {sentence[0].upper()}{sentence[1:]}.")
    metric.append(
        "  - Default gate on candidate vs baseline: "
        + (f"fails {', '.join(failing)}." if failing else "passes.")
    )
    out += metric

    ref = cand.workload
    slice_parts = [f"`{ref.name}`" if ref else f"`{cand.name}`"]
    q = cand.outcome.quality
    if q is not None and q.evidence is not None:
        slice_parts.append(f"real model `{q.evidence.model}` ({q.evidence.model_source})")
    if cand.graph.tokens is not None:
        slice_parts.append(f"{cand.graph.tokens} tokens per forward")
    slice_parts.append(f"{len(cand.graph.layers)} layers")
    slice_parts.append(f"backend `{cand.lower.backend}`")
    if ref is not None and ref.seed is not None:
        slice_parts.append(f"seed {ref.seed}")
    src = b.input("candidate")
    origin = f"{cand.source.kind} of {src.label}" if src is not None else cand.source.kind
    out.append(f"- **Workload or traffic slice**: {', '.join(slice_parts)}; {origin}.")
    if ref is not None and ref.knobs:
        out.append("  - Knobs: " + ", ".join(f"{k}={v}" for k, v in sorted(ref.knobs.items())) + ".")

    out.append(f"- **First failing layer or stage**: {_first_stage(b)}")
    sparse_line = sparse_kernels_line(base, cand, figures(b, "baseline").sparse_use, cand_fig.sparse_use)
    if sparse_line is not None:
        out.append(sparse_line)
    out += build_tags(b)
    out.append("")
    return out


def _cmp_text(cmp: SampleComparison) -> str:
    parts = [f"ratio {cmp.ratio:.3f}"]
    if cmp.ci_low is not None and cmp.ci_high is not None:
        parts.append(f"{100 * (1 - cmp.alpha):.4g}% CI [{cmp.ci_low:.3f}, {cmp.ci_high:.3f}]")
    if cmp.p_value is not None:
        parts.append(f"p={cmp.p_value:.3g}")
    parts.append(f"n={cmp.n_base}/{cmp.n_cand}")
    return ", ".join(parts)


def _first_stage(b: LoadedBundle) -> str:
    bis = b.bisect
    if bis is None:
        return "not located (no bisect result in the bundle)."
    if bis.first_stage is None:
        return f"no persistent divergence ({bis.state}): {verdict_text(bis)}"
    stage = bis.stage(bis.first_stage)
    text = f"stage **`{bis.first_stage}`**: {stage_text(stage)}"
    regress = [f for f in stage.layers if f.regression]
    if regress:
        named = "; ".join(f"`{f.label}` ({f.kind}: {finding_text(f)})" for f in regress[:4])
        text += f" Layers: {named}."
    if bis.effect is not None:
        per_call = " (per call)" if bis.effect_metric is not None and ":" in bis.effect_metric else ""
        text += f" Effect on {bis.effect_label or 'the metric'}{per_call}: {_cmp_text(bis.effect)}."
    if bis.explains:
        text += f" Explains downstream: {', '.join(bis.explains)}."
    if bis.unexplained and bis.first_change_ms is not None:
        text += (f" Does not explain {', '.join(bis.unexplained)}: it changed {bis.first_change_ms:+.3f} ms, less than half of "
                 f"{'their' if len(bis.unexplained) > 1 else 'its'} change.")
    text += f" (Latencies here: {measured_clock(figures(b, 'candidate'))}.)"
    top = [r for r in bis.layers if r.contribution_ms > 0][:3]
    if top:
        text += f" Largest contributions to the latency change ({measured_clock(figures(b, 'candidate'))}): " + ", ".join(
            f"`{r.layer}` {r.contribution_ms:+.3f} ms" + (f" ({r.share:.0%})" if r.share is not None else "") for r in top
        ) + "."
    return text


def _mechanism(b: LoadedBundle, book: Playbook) -> list[str]:
    out = ["## Memo detail: mechanism", ""]
    cls = b.classification
    if cls is None:
        out += ["- **Primary mechanism**: not classified (no classification in the bundle).", ""]
        return out
    scores = {s.mechanism.value if hasattr(s.mechanism, "value") else str(s.mechanism): s for s in cls.scores}
    if cls.winner is None:
        out += not_established_lines(cls) or ["- **Primary mechanism**: none: no rule fired strongly enough to name one."]
    else:
        w = cls.winner.value
        ws = scores[w]
        margin = margin_words(cls)
        out += attributed_lines(cls, ws.score) or [f"- **Primary mechanism**: **{w}** (score {ws.score:.2f}, {margin})."]
        for e in cls.evidence_for(cls.winner):
            if not e.fired:
                continue
            value = "n/a" if e.value is None else f"{e.value:.4g}"
            out.append(f"  - `{e.rule}`: {e.metric} = {value} {e.op} {e.threshold:g} {e.unit}; {evidence_words(e)} [{e.source}]")
        proof = proof_words(cls)
        if proof:
            out.append(f"  - Artifact that proves it: {proof}.")
    out.append("- **Competing hypotheses**:")
    winner_score = scores[cls.winner.value].score if cls.winner is not None else None
    for s in sorted(cls.scores, key=lambda s: s.rank):
        name = s.mechanism.value
        if cls.winner is not None and name == cls.winner.value:
            continue
        fired = [e for e in cls.evidence_for(s.mechanism) if e.fired]
        if s.status == "unknown":
            why = "cannot be ruled in or out: the artifact that would settle it is missing (below)"
        elif fired:
            why = "fired " + ", ".join(f"`{e.rule}`" for e in fired[:3])
            if winner_score is not None:
                why += f", but scores {s.score:.2f} against the winner's {winner_score:.2f}"
        else:
            why = f"none of its {s.rules_evaluated} evaluated rule(s) fired"
        carries = f", carries {s.attributed_ms:+.3f} ms" if s.attributed_ms else ""
        out.append(f"  - {name} (rank {s.rank}, score {s.score:.2f}{carries}, {s.status}): {why}.")
    out.append("- **Missing evidence**:" + ("" if cls.missing_evidence else " none for the ranking above."))
    for m in cls.missing_evidence:
        out.append(f"  - {m.mechanism.value}: {say(m.reason)}; capture: {say(m.capture)}.")
    out.append("")
    return out


AGAINST_WORDS = {"as_projected": "about as projected", "opposite": "the opposite way to the projection",
                 "more": "more than projected", "less": "less than projected"}
"""How a measured movement compares with its projection (``Movement.against_projection``)."""


def _movement_line(m: Movement) -> str:
    unit = f" {m.unit}" if m.unit and m.unit != "x" else ("x" if m.unit == "x" else "")
    spec = ".4g" if not m.unit else ".3f"
    line = f"{m.metric}: {m.before:{spec}}{unit} -> {m.after:{spec}}{unit}"
    if m.relative_change is not None:
        line += f" ({m.relative_change:+.1%})"
    return line


def _action(b: LoadedBundle, book: Playbook) -> list[str]:
    out = ["## Memo detail: action", ""]
    cls = b.classification
    fix = cls.fix if cls is not None else None
    if fix is None:
        out.append("- **Smallest reversible change**: none proposed (no classified mechanism).")
    else:
        out.append(f"- **Smallest reversible change**: {fix_words(fix)} (rule `{fix.rule}`; should move {fix.metric} {fix.direction}).")
    red = b.reduce
    if red is not None:
        out.append(f"  - Focused reproducer (reproducer.yaml): {_reduce_text(red)}")
    tr = b.trace_repro
    if tr is not None:
        names = ", ".join(f"`{name}`" for name in tr.files.values())
        ratio = f", {tr.delta_ms:+.3f} ms per iteration in the trace" if tr.delta_ms is not None else ""
        if tr.targets:
            removes = f": the fix removes {tr.targets_ms:.3f} ms per iteration across them" if tr.targets_ms is not None else ""
            ratio += f"; it stands for all {len(tr.targets)} layers the fix covers ({', '.join(f'`{n}`' for n in tr.targets)}){removes}"
        out.append(
            f"  - Focused reproducer from the traces ({names}): `{tr.layer}` (`{b.bisect.group_label(tr.group) if b.bisect is not None else group_label(tr.group, [])}`: {tr.finding} at "
            f"{tr.first_stage}{ratio}), "
            f"{tr.op_kind} with the traced shapes, dtypes and strides, backend {tr.candidate.backend or '?'} against the dense twin's "
            f"{tr.baseline.backend if tr.baseline and tr.baseline.backend else '?'}. `python repro.py` on a GPU times both; "
            f"`sparsedebug replay reproducer.yaml`: " + ("shows it. " if tr.replay_shows else "cannot show it: ") + replay_reason_words(tr)
        )
    fo = b.fix
    if fo is not None:
        out.append(f"  - Applied: {fix_how_words(fo)}" if fo.applied else f"  - Not applied: {fix_how_words(fo)}")
    lat = next((m for m in (fo.movements if fo else []) if m.metric == "latency p50"), None)
    if lat is not None and lat.expected_after is not None:
        out.append(
            f"- **Expected movement**: latency p50 {lat.before:.3f} ms -> {lat.expected_after:.3f} ms "
            f"({lat.expected_relative_change or 0.0:+.1%}; {measured_clock(figures(b, 'candidate'))}); basis: {say(lat.expected_basis) if lat.expected_basis else 'not recorded'}."
        )
        sp = next((m for m in fo.movements if m.metric.startswith("speedup")), None) if fo else None
        if sp is not None and sp.expected_after is not None:
            out.append(f"  - Expected speedup over the baseline: {sp.before:.3f}x -> {sp.expected_after:.3f}x.")
    elif lat is not None:
        out.append(f"- **Expected movement**: {fix.metric + ' ' + fix.direction if fix else 'n/a'}; no latency projection: {say(lat.expected_basis) if lat.expected_basis else 'not recorded'}.")
    else:
        out.append(
            "- **Expected movement**: "
            + (f"{fix.metric} {fix.direction}; " if fix else "")
            + "not projected: the bundle has no re-run to measure against."
        )
    out += expected_energy_lines(b, fo)
    if fo is not None and fo.movements:
        verdict = fix_verdict(fo)
        out.append(
            f"- **Measured movement** (candidate -> fixed re-run): the fix {verdict}; latency samples: {significance_words(fo.significance, fo.pairing) if fo.significance is not None else None}."
        )
        for m in fo.movements:
            line = _movement_line(m)
            if m.unit == "ms":
                line += f" ({measured_clock(figures(b, 'fixed' if b.fixed is not None else 'candidate'))})"
            out.append(f"  - {line}")
        moved_there = _target_movement(b.candidate, b.fixed)
        if moved_there is not None:
            out.append(f"  - {moved_there}")
        got, exp_change, against = (lat.relative_change, lat.expected_relative_change, lat.against_projection) if lat else (None,) * 3
        if got is not None and exp_change is not None and against is not None:
            out.append(f"  - Measured against expected: p50 {got:+.1%} measured vs {exp_change:+.1%} expected: {AGAINST_WORDS[against]}.")
        out += measured_energy_lines(b)
    out += _next_step(b)
    out.append("- **Regression risk**:")
    out += _risks(b)
    out.append("")
    return out


def _target_movement(candidate: RunRecord, fixed: RunRecord | None) -> str | None:
    """The whole forward of candidate and fixed on the target clock (None unless both runs have a figure there)."""
    if fixed is None or candidate.target is None or fixed.target is None:
        return None
    before, after = candidate.target.forward.candidate, fixed.target.forward.candidate
    if before is None or after is None:
        return None
    change = f" ({after.total_ms / before.total_ms - 1:+.1%})" if before.total_ms > 0 else ""
    return (
        f"whole forward on the {target_label(fixed.target)}: {before.total_ms:.3f} ms -> {after.total_ms:.3f} ms{change} "
        f"(basis {candidate.target.forward.basis} -> {fixed.target.forward.basis})"
    )


def _next_step(b: LoadedBundle) -> list[str]:
    """The second bounded change, when checks still fail on the fixed run: what classifying it again calls for."""
    fo = b.fix
    if fo is None or b.fixed is None:
        return []
    gate = stored_decision(b).gate
    failing = [c.id for c in gate.checks if c.status == "fail"] if gate is not None else []
    if not failing:
        return []
    still = f"the fixed run still fails {', '.join(failing)}"
    nxt = fo.next_fix
    if nxt is None:
        return [f"- **Next bounded change**: none found: {still}, and classifying it again against the baseline proposes "
                "nothing beyond the change already applied."]
    return [
        f"- **Next bounded change**: {still}; {say(fo.next_basis) if fo.next_basis else 'basis not recorded'}: {fix_words(nxt)} (rule `{nxt.rule}`; should move "
        f"{nxt.metric} {nxt.direction}). "
        + ("Apply it to fixed.workload.yaml and walk again with it as the candidate." if fo.fixed_source == "applied_to_workload"
           else "Apply it to the fixed candidate and walk again with it as the candidate.")
    ]


def _reduce_text(red: ReduceResult) -> str:
    kept = ", ".join(f"{c.key} ({change_words(c)})" for c in red.kept) or "none"
    shape = f"{red.layers_before} -> {red.layers_after} layers" if red.layers_after is not None else f"{red.layers_before} layers"
    tokens = f", {red.tokens_before} -> {red.tokens_after} tokens" if red.tokens_after is not None else ""
    text = (
        f"{reduce_verdict(red)}; kept {len(red.kept)} of {len(red.changes)} differences: {kept}; {shape}{tokens}; "
        f"{red.replays} timed replay(s), {red.static_probes} static graph+lowering run(s), {red.flaky_probes} flaky"
    )
    if red.command:
        text += f"; reproduce with `{red.command}` from the bundle directory"
    return text + "."


def _risks(b: LoadedBundle) -> list[str]:
    final = b.fixed or b.candidate
    label = "fixed" if b.fixed is not None else "candidate"
    gate = stored_decision(b).gate
    assert gate is not None
    checks = {c.id: c for c in gate.checks}
    lines = []
    prec = checks.get("precision_drift")
    if prec is None:
        lines.append("  - correctness: not checked (precision check off in the policy).")
    elif prec.status == "skipped":
        lines.append(f"  - correctness: not measured in the {label} run (no per-layer kernel error vs an fp64 reference): unassessed.")
    else:
        lines.append(f"  - correctness: {label} run {prec.status}s the precision check: {measured_words(prec)}; {detail_words(prec)}.")
    q_before, q_after = b.candidate.outcome.quality, final.outcome.quality
    if q_after is None:
        lines.append(f"  - quality: no quality measurement in the {label} run: quality risk is unassessed.")
    elif b.fixed is not None and q_before is not None:
        metric_name = "output cosine" if q_after.evidence is None else quality_metric(q_after)
        lines.append(f"  - quality: {metric_name} vs dense {quality_value(q_before)} (candidate) -> {quality_value(q_after)} (fixed).")
    else:
        lines.append(f"  - quality: {'output cosine' if q_after.evidence is None else quality_metric(q_after)} vs dense {quality_value(q_after)}.")
    cls = b.classification
    thermal = None
    if cls is not None:
        thermal = next((s for s in cls.scores if s.mechanism.value == "thermal"), None)
    if cls is None or thermal is None:
        lines.append("  - thermal: not assessed (no classification).")
    else:
        miss = [m for m in cls.missing_evidence if m.mechanism.value == "thermal"]
        extra = f"; to settle it: {say(miss[0].capture)}" if miss else ""
        lines.append(f"  - thermal: scored {thermal.score:.2f} ({thermal.status}, {thermal.rules_fired} of {thermal.rules_evaluated} rules fired){extra}.")
    compat = []
    if b.fixed is not None:
        before = {lo.name: lo.path.value for lo in b.candidate.lower.layers}
        changed = [f"{lo.name} {before[lo.name]}->{lo.path.value}" for lo in b.fixed.lower.layers if lo.name in before and before[lo.name] != lo.path.value]
        if changed:
            compat.append("lowering changed for " + ", ".join(changed[:5]))
        kb = b.candidate.workload.knobs if b.candidate.workload else {}
        kf = b.fixed.workload.knobs if b.fixed.workload else {}
        knob_changes = [f"{k} {kb.get(k)}->{kf.get(k)}" for k in sorted(set(kb) | set(kf)) if kb.get(k) != kf.get(k)]
        if knob_changes:
            compat.append("knobs changed: " + ", ".join(knob_changes))
        if b.fixed.source.kind != b.candidate.source.kind:
            compat.append(f"runtime path changed ({b.candidate.source.kind} -> {b.fixed.source.kind})")
    compat.append(f"backend `{final.lower.backend}`")
    lines.append("  - software compatibility: " + "; ".join(compat) + ".")
    return lines


def _signoff(b: LoadedBundle, book: Playbook, decision: DecisionOutcome) -> list[str]:
    out = ["## Memo detail: signoff", ""]
    final = b.fixed or b.candidate
    fb = sections(b, "fixed" if b.fixed is not None else "candidate").fallback
    report_file = b.manifest.files.get("report", "report.md")
    impact = f"{fb.fell_back} of {fb.meant_sparse} meant-sparse layers run dense"
    if fb.dense_time_share is not None:
        impact += f", {fb.dense_time_share:.1%} of kernel time on dense paths (every dense layer)"
        if fb.fallback_time_share is not None:
            impact += f", {fb.fallback_time_share:.1%} of kernel time in the fallbacks"
    if fb.speedup_left_on_table is not None and fb.speedup_left_on_table > 1.0:
        impact += f", {fb.speedup_left_on_table:.3f}x left on the table by fallbacks"
    elif fb.sparse_kernel_speedup is not None and fb.sparse_kernel_speedup <= 1.0 and fb.fell_back:
        impact += (
            f", running the fallbacks sparse would gain nothing: the sparse kernels measured {fb.sparse_kernel_speedup:.3f}x "
            "vs dense (the report's model ceiling assumes the nominal M/N instead)"
        )
    elif fb.sparse_kernel_speedup is not None:
        impact += f", sparse kernel speedup {fb.sparse_kernel_speedup:.3f}x ({say(fb.sparse_kernel_speedup_source) if fb.sparse_kernel_speedup_source else '-'})"
    elif fb.sparse_kernel_speedup_source is not None:
        impact += f", sparse kernel speedup {say(fb.sparse_kernel_speedup_source)}"
    out.append(f"- **Required artifact**: {book.memo.required_artifact} See `{report_file}` ({len(final.graph.layers)} layers in the matrix; {impact}).")
    owners = [book.owner(o).title for o in book.memo.required_owners]
    lead = book.owner(decision.owner).title if decision.owner is not None else None
    out.append("- **Required owners**: " + ", ".join(owners) + (f"; the proposed change is owned by the {lead}." if lead else "."))
    label = book.decision(decision.decision).label
    out.append(f"- **Final decision**: **{label}**, judged on the {decision.judged_on}: " + "; ".join(decision_reasons(decision, b.fix)) + ".")
    if decision.recomputed:
        out.append("  - Decided again when this memo was rendered: " + ", ".join(f"`{n}`" for n in decision.recomputed) + " changed since the walk.")
    if decision.decision != "ship" and decision.ship_refused:
        out.append("  - Ship refused because:")
        for r in decision.ship_refused:
            out.append(f"    - {refusal_words(r, decision)}")
    out.append("")
    return out


def _comparability(b: LoadedBundle) -> list[str]:
    """What the baseline and candidate were allowed to differ in, and what differs as a finding (the comparability check)."""
    check = b.bisect.comparability if b.bisect is not None else None
    if check is None:
        return []
    out = []
    sentence = allowed_text(check)
    if sentence:
        out.append(f"**Comparability**: {sentence[0].upper()}{sentence[1:]}.")
    else:
        out.append(f"**Comparability**: same model ({check.layers.matched} of {max(check.layers.base_layers, check.layers.cand_layers)} layers matched by op and shape), "
                   f"device {check.base_device.label()}, phase {check.base_phase}.")
    out += [f"- {say(note)}" for note in check.notes]
    return [*out, ""]


def render_memo_detail(bundle: LoadedBundle, book: Playbook) -> str:
    """The memo's full detail as Markdown (every rule, sample count, capture, estimate and the other runs' figures):
    the part of ``report.md`` that memo.md links section by section (``signoff.memo.DETAIL_ANCHORS``)."""
    decision = stored_decision(bundle)
    lines = ["## Memo detail", ""]
    inputs = ", ".join(f"{i.role} {i.label} ({i.kind})" for i in bundle.manifest.inputs)
    lines.append(f"Bundle `{bundle.root.name}`, created {bundle.manifest.created_at}, playbook `{bundle.manifest.playbook}`; inputs: {inputs}.")
    lines.append("")
    lines += _comparability(bundle)
    lines += _symptom(bundle, book)
    lines += rank_lines(bundle)
    lines += _mechanism(bundle, book)
    lines += _action(bundle, book)
    lines += _signoff(bundle, book, decision)
    return "\n".join(label_latencies(lines, bundle_clock(report(bundle).latency)))


def render_full_report(bundle: LoadedBundle, book: Playbook) -> str:
    """``report.md``: the sparsity deployment report, then the memo's detail under the anchors memo.md links."""
    from sparsedebug.render.markdown.deployment import render_report

    return render_report(bundle).rstrip("\n") + "\n\n" + render_memo_detail(bundle, book) + "\n"
