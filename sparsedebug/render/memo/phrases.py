"""One phrasing function per fact kind of the memo model, for Markdown and for plain text.

Every number is printed by :func:`num` from a figure of the claim (never computed here), so the claims check
(``sparsedebug.render.memo.claims``) can trace each printed number back to its figure. Names and codes go in code
spans (Markdown) so they are never read as figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.records.memo import Claim, ClockLegend
from sparsedebug.render.memo.guard import guarded
from sparsedebug.render.memo.guard import withheld as withheld
from sparsedebug.render.memo.tags import build_tags as build_tags
from sparsedebug.render.words.dispatch import listed
from sparsedebug.render.words.figures import HEADLINE_WORDS as HEADLINE_WORDS
from sparsedebug.render.words.figures import SIGNED as SIGNED
from sparsedebug.render.words.figures import headline as headline
from sparsedebug.render.words.figures import num as num
from sparsedebug.render.words.mechanisms_records import advice_words


@dataclass(frozen=True)
class Style:
    """How names and emphasis are marked: Markdown (code spans, bold) or plain text."""

    markdown: bool

    def code(self, text: str) -> str:
        """A name or code."""
        return f"`{text}`" if self.markdown else text

    def bold(self, text: str) -> str:
        """Emphasis."""
        return f"**{text}**" if self.markdown else text


# How a figure's basis reads beside it (``records.memo.Basis``).
BASIS_WORDS = {"per_forward": "per forward", "per_iteration": "per iteration", "summed": "summed over the iterations",
               "per_layer": "per layer", "per_call": "per call"}

MD = Style(markdown=True)
PLAIN = Style(markdown=False)



def _names(st: Style, claim: Claim) -> str:
    """The listed names, and how many the claim names in all when it lists fewer."""
    shown = ", ".join(st.code(i) for i in claim.items)
    more = f" and {claim.more} more" if claim.more else ""
    total = claim.figure("layers_named")
    return shown + more + (f" ({num(total)} layers in all)" if total is not None and (claim.more or total.value > len(claim.items)) else "")


def clock_legend(clocks: list[ClockLegend]) -> str:
    """Provenance said once per clock: where the latencies were timed, and what a [projected] mark means."""
    own = [c for c in clocks if c.clock != "projected"]
    projected = [c for c in clocks if c.clock == "projected"]
    words = {"measured": "measured on {d}", "untraced": "timed on {d} with the profiler off", "traced": "traced on {d} with the profiler on",
             "profiled": "profiled on {d}"}
    parts = ["Clocks: latencies " + " and ".join(words[c.clock].format(d=c.device) for c in own)] if own else []
    parts += [f"figures marked [projected] are projected on the {c.device}" for c in projected]
    return "; ".join(parts) + "." if parts else ""


DECISION_WORDS = {
    "ship": "ship", "bounded_rollout": "bounded rollout", "rollback": "rollback", "escalate": "escalate",
    "pass": "passed", "fail": "FAILED", "inconclusive": "INCONCLUSIVE (no check failed)",
}


def decision_head(st: Style, c: Claim) -> str:
    """``Decision: rollback``."""
    label = c.terms.get("label") or DECISION_WORDS.get(c.code or "", c.code or "")
    return f"Decision: {st.bold(label)}"


def decision_basis(st: Style, c: Claim) -> str:
    """Which run the decision was judged on, who owns the next change, and whether it was decided again."""
    text = f"judged on the {c.terms.get('judged_on', 'candidate')} run"
    owner = c.terms.get("owner")
    text += f"; the next change is owned by the {owner}" if owner else ""
    changed = [n for n in c.terms.get("recomputed", "").split(",") if n]
    if changed:
        text += f" (decided again at rendering: {', '.join(st.code(n) for n in changed)} changed since the walk)"
    return text + "."


def decision(st: Style, c: Claim) -> str:
    """The decision line."""
    return f"{decision_head(st, c)}, {decision_basis(st, c)}"


REASON_WORDS = {
    "passes": "The {judged_on} run passes every gate check, with fallback and quality evidence in the bundle.",
    "fix_moved_holds": "The bounded fix moved its target metric and no gate check fails on the {judged_on} run.",
    "win_missing_evidence": "The {judged_on} run is a measured win with no failing gate check.",
    "no_mechanism": "No mechanism carries the change, so the evidence does not single out a cause.",
    "worse_than_baseline": "The {judged_on} run is worse than the baseline allows.",
    "no_fix_needed": "No fix was needed and no gate check fails on the {judged_on} run.",
    "fix_moved_checks_fail": "The bounded fix moved its target metric, but gate checks still fail.",
    "fix_did_not_move": "The applied fix did not move its target metric.",
    "fix_not_applied": "The proposed fix could not be applied, so nothing shows that it removes the cause.",
    "too_few_samples": (
        "The {judged_on} run's latency samples are too few to judge it against the baseline: capture or run more, "
        "then decide."
    ),
    "unchanged": (
        "The {judged_on} run does not differ from the baseline beyond noise in any stage that could be compared, "
        "and no gate check fails."
    ),
}


@guarded
def reason(st: Style, c: Claim) -> str:
    """One reason of the decision, in plain words with its figures."""
    code = c.code or ""
    role = c.terms.get("role", "candidate")
    status = c.terms.get("status", "")
    if code == "missing_evidence":
        return f"There is no {c.terms.get('evidence', '')} evidence in the judged run, so ship is refused until it is captured."
    if code == "across_launch":
        return (f"The speedup is across launch modes ({st.code(c.terms.get('base', ''))} baseline, "
                f"{st.code(c.terms.get('run', ''))} run), so it is not like for like.")
    if code in REASON_WORDS:
        return REASON_WORDS[code].format(judged_on=c.terms.get("judged_on", "candidate"))
    if status == "inconclusive":
        return f"The {st.code(code)} check cannot decide on these samples (inconclusive; its policy: {c.terms.get('on_inconclusive') or 'pass'})."
    verb = "fails" if status == "fail" else "passes"
    if code == "effective_speedup":
        sp, floor = c.figure("speedup_p50"), c.figure("speedup_min")
        if status == "fail":
            return f"The {role} run is slower than the baseline allows: speedup {num(sp)} against the {num(floor)} floor."
        return f"The {role} run meets the speed floor: speedup {num(sp)} against {num(floor)}."
    if code == "quality_delta":
        q = c.figure("cosine") or c.figure("perplexity")
        floor = c.figure("cosine_min")
        against = f" against the {num(floor)} floor" if floor is not None else ""
        name = "cosine" if c.figure("cosine") is not None else "perplexity"
        what = "Quality is below the guardrail" if status == "fail" else "Quality holds"
        return f"{what}: {name} vs the dense model {num(q)}{against}."
    if code == "fallback_rate":
        n, m = c.figure("fell_back"), c.figure("meant_sparse")
        if n is None or m is None:
            return f"The fallback check {verb}."
        return f"{num(n)} of {num(m)} layers meant to be sparse run dense (fallback check {verb})."
    if code == "precision_drift":
        return f"The precision check {verb}: a layer's precision or kernel error moved against the baseline." if status == "fail" \
            else "The precision check passes."
    if code == "p99_latency":
        r, cap = c.figure("p99_ratio"), c.figure("p99_max_ratio")
        return f"The p99 latency check {verb}: p99 ratio {num(r)} against at most {num(cap)}."
    return f"The {st.code(code)} check {verb}."


@guarded
def speedup(st: Style, c: Claim) -> str:
    """The failing metric's speed figures."""
    sp = c.figure("speedup_p50")
    b, k = c.figure("latency_p50_ms", "baseline"), c.figure("latency_p50_ms", "candidate")
    if sp is None:
        return "speedup over the baseline not measured (no latency samples on a side)"
    text = f"speedup {num(sp)} over the baseline (p50 {num(b)} baseline, {num(k)} candidate)"
    share = c.figure("traced_host_wait_share")
    if c.code == "rests_on_traced" and share is not None:
        text += (f", which rests on traced latency that shows the profiler's own cost (idle on the host {num(share)} of the "
                 "span; pass untraced timings with `--latency` to settle it)")
    return text


@guarded
def target_speedup(st: Style, c: Claim) -> str:
    """The projected speedup on the target."""
    return f"{num(c.figure('target_speedup'))} vs dense on the target ({st.code(c.terms.get('launch', ''))})"


@guarded
def sparse_kernels(st: Style, c: Claim) -> str:
    """Were the sparse kernels used: yes or no, on how many of the layers with 2:4 weights, which were not picked."""
    run = st.code(c.terms.get("run", ""))
    if c.code == "build_disabled":
        return f"no: {run} was built with sparsity disabled; rebuild with {c.terms.get('flags') or 'sparsity enabled'}"
    if c.code == "no_sparse_weights":
        return f"no: none of {run}'s {num(c.figure('weighted_layers'))} layers with weights carries 2:4 weights"
    answer = "yes" if c.code == "used" else "no"
    text = f"{answer}: {run} ran a sparse tactic on {num(c.figure('sparse_tactic_layers'))} of " \
           f"{num(c.figure('sparse_weight_layers'))} layers with 2:4 weights"
    if c.items:
        total = c.figure("not_picked_layers")
        more = f" ({num(total)} in all)" if c.more and total is not None else ""
        text += f"; eligible but not picked: {', '.join(st.code(i) for i in c.items)}{more}"
    layer = c.terms.get("changed_layer")
    if layer:
        text += (f"; largest per-layer change {st.code(layer)} {num(c.figure('layer_ms', 'baseline'))} -> "
                 f"{num(c.figure('layer_ms', 'candidate'))} ({num(c.figure('change'))}, profile median)")
    return text


@guarded
def quality(st: Style, c: Claim) -> str:
    """The candidate's quality against the dense model."""
    if c.code == "not_measured":
        return "quality vs dense not measured"
    cos, ppl = c.figure("cosine"), c.figure("perplexity", "candidate")
    if ppl is not None:
        dense = c.figure("perplexity", "dense")
        return f"perplexity {num(ppl)}" + (f" vs dense {num(dense)}" if dense is not None else "")
    return f"quality cosine {num(cos)} vs the dense model"


def failing_metric(st: Style, claims: list[Claim]) -> str:
    """The symptom's failing metric in one line."""
    parts = []
    for c in claims:
        if c.kind == "speedup":
            parts.append(speedup(st, c))
        elif c.kind == "target_speedup":
            parts.append(target_speedup(st, c))
        elif c.kind == "quality":
            parts.append(quality(st, c))
    return "; ".join(parts) + "."


@guarded
def slice_(st: Style, c: Claim) -> str:
    """The workload or traffic slice."""
    t = c.terms
    parts = [st.code(t.get("run", ""))]
    if "model" in t:
        parts.append(f"model {st.code(t['model'])}")
    tokens = c.figure("tokens")
    if tokens is not None:
        parts.append(f"{num(tokens)} tokens per forward")
    parts.append(f"{num(c.figure('layers'))} layers")
    parts.append(f"backend {st.code(t.get('backend', ''))}")
    if "seed" in t:
        parts.append(f"seed {st.code(t['seed'])}")
    return ", ".join(parts) + f" ({t.get('source', '')})."


FINDING_WORDS = {
    "fallback": "dense fallback", "per_call_conversion": "weights converted on every call", "path_changed": "kernel path changed",
    "slower": "slower kernels", "faster": "faster kernels", "idle_grew": "GPU idle time grew", "idle_shrank": "GPU idle time shrank",
    "added": "layer added", "removed": "layer removed", "changed": "layer changed", "precision": "precision changed",
    "new_kernel_class": "new kernel class",
}


# What a stage metric's effect size compares (``locate``'s MetricFinding.metric), per iteration.
EFFECT_METRIC_WORDS = {"overhead_ms": "overhead (span - busy) on top of the baseline's busy time", "busy_ms": "kernel busy time"}


@guarded
def first_stage(st: Style, c: Claim) -> str:
    """The first persistent divergent stage, its layers and what it explains."""
    if c.code == "not_located":
        return "not located (no bisect result in the bundle)."
    if c.code != "divergence":
        return f"no persistent divergence ({st.code(c.code or '')})."
    kinds = []
    for kind in (k for k in c.terms.get("kinds", "").split(",") if k):
        reasons = [r for r in c.terms.get(f"reasons.{kind}", "").split(",") if r]
        kinds.append(FINDING_WORDS.get(kind, kind) + (f" ({', '.join(st.code(r) for r in reasons)})" if reasons else ""))
    text = f"stage {st.code(c.terms.get('stage', ''))}"
    if kinds:
        text += ": " + ", ".join(kinds)
    if c.items:
        text += f" on {_names(st, c)}"
    p = c.figure("effect_p")
    tested = f" ({num(p)})" if p is not None else ""
    layer_effect, latency, metric = c.figure("layer_effect_ratio"), c.figure("latency_ratio"), c.figure("metric_ratio")
    if layer_effect is not None:  # an effect size of one layer group, per call: not the forward's latency
        text += f"; largest layer effect: per-call time ratio {num(layer_effect)} on {st.code(c.terms.get('effect_layer', ''))}{tested}"
    elif metric is not None:
        name = c.terms.get("effect_metric", "")
        text += f"; effect: {EFFECT_METRIC_WORDS.get(name, st.code(name))}, ratio {num(metric)} per iteration{tested}"
    elif latency is not None:
        text += f"; latency ratio {num(latency)} per forward{tested}"
    share = c.figure("accounted_share")
    if share is not None and share.value > 0:
        text += f"; its layers carry {num(share)} of the latency change"
    if c.terms.get("explains"):
        text += f", which explains the downstream {', '.join(c.terms['explains'].split(','))} change"
    return text + "."


def over_explains(c: Claim) -> str | None:
    """``, more than the whole change (194%): unattributed pulls the other way`` for a share past 100% (None otherwise)."""
    share = c.figure("carried_share")
    if share is None or round(100 * share.value) <= 100:
        return None
    against = [("some of its own parts" if w == "own parts" else w) for w in c.terms.get("against", "").split(",") if w]
    pulls = f": {listed(against)} {'pulls' if len(against) == 1 else 'pull'} the other way" if against else ""
    return f", more than the whole change ({num(share)}){pulls}"


def _carries(c: Claim, of: str = "") -> str:
    ms, share = c.figure("carried_ms"), c.figure("carried_share")
    if ms is None:
        return f"carries none of the change{of}"
    over = over_explains(c)
    if over is not None and round(ms.value, 3) > 0:
        return f"carries {num(ms)}{of}{over}"
    if round(ms.value, 3) > 0 and share is not None and round(share.value, 2) > 0:
        return f"carries {num(ms)} ({num(share)}){of}"
    return f"moves the other way, {num(ms)}{of}"


@guarded
def primary_mechanism(st: Style, c: Claim) -> str:
    """The primary mechanism, or why none is established."""
    if c.code == "not_classified":
        return "not classified (no classification in the bundle)."
    change, untraced = c.figure("change_ms"), c.figure("untraced_change_ms")
    of = f" of the {num(change)} change" if change is not None else ""
    if untraced is not None:
        of += f" on the trace's clock (untraced, with the profiler off: {num(untraced)})"
    if c.code == "none":
        return ("not established: no rule singles out a mechanism" + (f" for the {num(change)} change" if change else "")
                + (f"; {SETTLE_WORDS[c.terms['settle']]} would settle it" if c.terms.get("settle") in SETTLE_WORDS else "") + ".")
    mech = st.code(c.terms.get("mechanism", ""))
    if c.terms.get("ranked_by") == "score":
        return f"{mech}, by its rule score {num(c.figure('score'))} (no measured change to attribute)."
    settle = SETTLE_WORDS.get(c.terms.get("settle", ""), "")
    settle_text = f"; {settle} would settle it" if settle else ""
    if c.code == "not_established":
        return f"not established: the leading candidate {mech} {_carries(c, of)}, short of the headline rule{settle_text}."
    return f"{st.bold(c.terms.get('mechanism', ''))}, which {_carries(c, of)}."


SETTLE_WORDS = {
    "aligned_clock_log": "an nvidia-smi clock log aligned to the runs' windows",
    "ncu_report": "an Nsight Compute report of the changed kernels on both sides",
    "cuda_graph_retrace": "both sides re-traced under a CUDA graph",
    "annotated_trace": "traces with per-layer annotations",
    "more_repeats": "more measured iterations on both sides",
}
"""The one capture that would settle a mechanism that is not established."""


def competing(st: Style, claims: list[Claim]) -> str:
    """The other mechanisms, in the ranking's own yardstick."""
    if not claims:
        return "none."
    parts = []
    for c in claims:
        mech = st.code(c.terms.get("mechanism", ""))
        if c.withheld:
            parts.append(f"{mech} {withheld(st, c).rstrip('.')}")
        elif c.terms.get("ranked_by") == "score":
            parts.append(f"{mech} score {num(c.figure('score'))} ({c.code})")
        elif c.figure("carried_ms") is not None:
            parts.append(f"{mech} {_carries(c)}")
        else:
            status = {"supported": "a rule fired", "not_supported": "no rule fired", "unknown": "not evaluable"}
            parts.append(f"{mech} carries none ({status.get(c.code or '', c.code or '')})")
    return "; ".join(parts) + "."


def missing(st: Style, claims: list[Claim], anchor: str) -> str:
    """Which mechanisms lack the evidence that would settle them (the captures are in the report)."""
    if not claims:
        return "none for the ranking above."
    names = ", ".join(st.code(c.code or "") for c in claims if not c.withheld)
    link = f"[report]({anchor})" if st.markdown else anchor
    held = [c for c in claims if c.withheld]
    more = "".join(f" ({len(held)} more {withheld(st, held[0]).rstrip('.')})" for _ in held[:1])
    return f"{names}: what to capture is in the {link}{more}."


KNOB_WORDS = {
    "conversion": "convert the weights once at load instead of on every call",
    "threads": "run with {value} threads",
    "precision": "run in {value}",
}
ACTION_WORDS = {
    "exclude": "exclude {layer} from sparsity (run it dense)",
    "pad": "pad {layer} to a shape the sparse kernel accepts",
    "cast": "cast {layer} to {value} so the sparse kernel accepts it",
}


@guarded
def change(st: Style, c: Claim) -> str:
    """The smallest reversible change, with its owner."""
    if c.code == "none":
        return "none proposed (no classified mechanism)."
    t = c.terms
    layer = st.code(t["layer"]) if "layer" in t else "every layer"
    layers = c.figure("target_layers")
    wide = layers is not None and layers.value > 1 and bool(t.get("target_layers"))
    if wide:  # the fix covers every layer sharing its cause: it names the set, never the one layer it was found on
        layer = f"all {num(layers)} layers"
    if c.code == "knob" and t.get("knob") in KNOB_WORDS:
        text = KNOB_WORDS[t["knob"]].format(value=t.get("value", ""))
    elif c.code == "layer" and t.get("action") in ACTION_WORDS:
        text = ACTION_WORDS[t["action"]].format(layer=layer, value=t.get("value", ""))
    elif c.code == "block":
        text = f"raise the sparsity block size of {layer} to {st.code(t.get('value', ''))}"
    else:
        text = advice_words(t, layer if "layer" in t else None).rstrip(".")
    if c.items:
        text += f" for {', '.join(st.code(i) for i in c.items)}"
    if layers is not None and t.get("target_layers"):
        named = t["target_layers"].split(",")
        more = " ..." if layers.value > len(named) else ""
        on = "" if layer in text else f" on {layer}"  # a workload knob's words name no layer: say the set it covers
        text += f"{on}: {', '.join(st.code(x) for x in named)}{more}" if wide else f" on {num(layers)} layers ({', '.join(st.code(x) for x in named)}{more})"
    removes = c.figure("removes_ms")
    if removes is not None:
        across = f" across all {num(layers)}" if wide and layers is not None else ""
        text += f", removing {num(removes)} per iteration{across} ({st.code(t.get('basis', ''))})"
    wait = c.figure("host_wait_ms")
    if "host" in text and wait is not None:
        text += f" (the device waits on the host {num(wait)} {BASIS_WORDS.get(wait.basis or '', 'in all')})"
    text += f" (rule {st.code(t.get('rule', ''))})"
    if t.get("applied") == "yes":
        text += ", applied in the re-run"
    owner = t.get("owner")
    return text + (f". Owner: the {owner}." if owner else ".")


@guarded
def expected(st: Style, c: Claim) -> str:
    """What the change should move, by how much, and on what basis."""
    if c.code == "projected":
        before, after, ch = c.figure("latency_p50_ms", "candidate"), c.figure("latency_p50_ms", "expected"), c.figure("change")
        return f"latency p50 {num(before)} -> {num(after)} ({num(ch)}), the time the change removes."
    metric, direction = c.terms.get("metric"), c.terms.get("direction")
    if metric:
        return f"{st.code(metric)} {direction}; not projected."
    return "not projected."


@guarded
def measured(st: Style, c: Claim | None) -> str:
    """What the re-run measured, with its direction, judged against the expected direction."""
    if c is None:
        return "no re-run in the bundle."
    before, after, ch = c.figure("latency_p50_ms", "candidate"), c.figure("latency_p50_ms", "fixed"), c.figure("change")
    direction = c.terms.get("direction", "same")
    text = f"latency p50 {num(before)} -> {num(after)} ({num(ch)}, {direction})"
    agrees = c.terms.get("agrees")
    if agrees == "yes":
        text += ", the expected direction"
    elif agrees == "no":
        text += ", AGAINST the expected direction"
    verdict = {"moved": "the fix moved its target metric", "not_moved": "the fix did not move its target metric",
               "unjudged": "the movement could not be judged"}[c.code or "unjudged"]
    return f"{text}: {verdict}."


@guarded
def risk(st: Style, c: Claim) -> str:
    """One regression risk."""
    t = c.terms
    if c.code == "correctness":
        status = t.get("status", "off")
        words = {"pass": "passes", "fail": "FAILS", "skipped": "not measured", "off": "not checked", "inconclusive": "inconclusive"}
        return f"correctness: the precision check {words.get(status, status)} on the {t.get('role', '')} run"
    if c.code == "quality":
        if not c.figures:
            return f"quality: not measured on the {t.get('role', '')} run"
        before, after = c.figure("cosine", "candidate"), c.figure("cosine", t.get("role"))
        if before is not None and after is not None and before is not after:
            return f"quality: cosine {num(before)} (candidate) -> {num(after)} (fixed)"
        return f"quality: cosine {num(after)}"
    if c.code == "thermal":
        return f"thermal: {t.get('status', 'unknown').replace('_', ' ')}"
    if c.code == "compatibility":
        changed = ", ".join(st.code(i) for i in c.items) or "no knob changed"
        return f"compatibility: {changed} on backend {st.code(t.get('backend', ''))}"
    return c.code or ""


@guarded
def artifact(st: Style, c: Claim) -> str:
    """The required artifact and its headline figures."""
    t = c.terms
    link = f"[{t['file']}]({t['file']})" if st.markdown else t["file"]
    text = f"sparsity deployment report {link}: {num(c.figure('layers'))} layers in the supported-layer matrix"
    n, m = c.figure("fell_back"), c.figure("meant_sparse")
    if n is not None and m is not None:
        text += f", {num(n)} of {num(m)} meant-sparse layers run dense"
    return text + "."


@guarded
def owners(st: Style, c: Claim) -> str:
    """Who signs."""
    return ", ".join(c.items) + "."
