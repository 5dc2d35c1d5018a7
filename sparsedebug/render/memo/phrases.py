"""One phrasing function per fact kind of the memo model, for Markdown and for plain text.

Every number is printed by :func:`num` from a figure of the claim (never computed here), so the claims check
(``sparsedebug.render.memo.claims``) can trace each printed number back to its figure. Names and codes go in code
spans (Markdown) so they are never read as figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.core.kernel_names import short_kernel_name
from sparsedebug.records.memo import Claim, ClockLegend
from sparsedebug.render.memo.guard import guarded
from sparsedebug.render.memo.guard import withheld as withheld
from sparsedebug.render.memo.tags import build_tags as build_tags
from sparsedebug.render.words.dispatch import listed
from sparsedebug.render.words.figures import HEADLINE_WORDS as HEADLINE_WORDS
from sparsedebug.render.words.figures import SIGNED as SIGNED
from sparsedebug.render.words.figures import headline as headline
from sparsedebug.render.words.figures import num as num
from sparsedebug.render.words.figures import speedup_basis_words

NAME_MAX = 100
"""The longest name the memo prints whole; a longer one (a kernel's C++ signature) is shortened."""


@dataclass(frozen=True)
class Style:
    """How names and emphasis are marked: Markdown (code spans, bold) or plain text."""

    markdown: bool

    def code(self, text: str) -> str:
        """A name or code; a kernel's full C++ signature (a layer of a trace without annotations) in its short form,
        so one name never runs past the memo's line limit (``core.kernel_names.short_kernel_name``)."""
        if len(text) > NAME_MAX:
            text = short_kernel_name(text, NAME_MAX)
        return f"`{text}`" if self.markdown else text

    def bold(self, text: str) -> str:
        """Emphasis."""
        return f"**{text}**" if self.markdown else text


# How a figure's basis reads beside it (``records.memo.Basis``).
BASIS_WORDS = {"per_forward": "per forward", "per_iteration": "per iteration", "summed": "summed over the iterations",
               "per_layer": "per layer", "per_call": "per call"}

MD = Style(markdown=True)
PLAIN = Style(markdown=False)



def claim_names(st: Style, claim: Claim) -> str:
    """The listed names, and how many the claim names in all when it lists fewer."""
    shown = ", ".join(st.code(i) for i in claim.items)
    more = f" and {claim.more} more" if claim.more else ""
    total = claim.figure("layers_named")
    return shown + more + (f" ({num(total)} layers in all)" if total is not None and (claim.more or total.value > len(claim.items)) else "")


def clock_legend(clocks: list[ClockLegend]) -> str:
    """Provenance said once per clock: where the latencies were timed, and what a [projected] mark means and how it is
    projected (a sentence a line)."""
    own = [c for c in clocks if c.clock != "projected"]
    projected = [c for c in clocks if c.clock == "projected"]
    words = {"measured": "measured on {d}", "untraced": "timed on {d} with the profiler off", "traced": "traced on {d} with the profiler on",
             "profiled": "profiled on {d}"}
    parts = ["Clocks: latencies " + " and ".join(words[c.clock].format(d=c.device) for c in own)] if own else []
    parts += [f"Figures marked [projected] are projected on the {c.device} from GEMM timings measured on that GPU for each "
              "layer's shape and path, plus a host cost per launch (`sparsedebug predict`)" for c in projected]
    return "\n".join(f"{part}." for part in parts)


DECISION_WORDS = {
    "ship": "ship", "bounded_rollout": "bounded rollout", "rollback": "rollback", "escalate": "escalate",
    "pass": "passed", "fail": "FAILED", "inconclusive": "INCONCLUSIVE (no check failed)",
}


DECISION_MEANING: dict[str, str] = {
    "ship": "deploy the judged build", "bounded_rollout": "deploy to a bounded slice and watch the open checks",
    "rollback": "do not deploy the candidate: keep the dense baseline",
    "escalate": "hold the rollout: these inputs cannot decide; the owners below act next",
    "no_change": "nothing to ship or roll back",
}
"""What each decision asks of a lead, in a few words (the playbook's ``decisions[].when`` says when it is taken)."""


def decision_head(st: Style, c: Claim) -> str:
    """``Decision: rollback (do not deploy: keep the dense baseline)``."""
    label = c.terms.get("label") or DECISION_WORDS.get(c.code or "", c.code or "")
    meaning = DECISION_MEANING.get(c.code or "")
    return f"Decision: {st.bold(label)}" + (f" ({meaning})" if meaning else "")


CHECK_WORDS: dict[str, str] = {
    "effective_speedup": "speed", "p99_latency": "tail latency", "quality_delta": "quality", "fallback_rate": "dense fallback",
    "precision_drift": "precision",
}
"""Each default gate check as the memo names it (never the gate's code)."""


UNDECIDED_WORDS: dict[str, str] = {
    "too_few": "too few samples",
    "unstable": "other load disturbed its timings",
}
"""Why an inconclusive check could not decide (``signoff.memo_results.undecided_why``)."""

UNDECIDED_NEXT: dict[str, str] = {
    "too_few": "Capture more",
    "unstable": "Re-run it on a quiet machine",
}
"""What decides an inconclusive check, by why it could not decide."""


def blocker_owners(c: Claim) -> list[tuple[str, str]]:
    """(the checks, their owner) for each owner of a check that keeps the decision from ship, most decisive first."""
    by_owner: dict[str, list[str]] = {}
    for check in c.items:
        by_owner.setdefault(c.terms.get(f"owner.{check}", ""), []).append(check)
    one_cause = set(c.terms.get("one_cause", "").split(","))
    return [(listed([CHECK_WORDS.get(k, k) for k in checks]) + (", from one cause" if one_cause <= set(checks) else ""), owner)
            for owner, checks in by_owner.items()]


def blockers(c: Claim) -> str:
    """``Blocking: quality (owner: the model optimization lead); ...`` for each check that keeps the decision from ship."""
    parts = [checks + (f" (owner: the {owner})" if owner else "") for checks, owner in blocker_owners(c)]
    return ("Blocking: " + "; ".join(parts) + ".") if parts else ""


def decision_judged(st: Style, c: Claim) -> str:
    """Which run the decision was judged on, who owns the next change when nothing blocks, and whether it was decided again."""
    judged = c.terms.get("judged_on", "candidate")
    text = f"judged on the {judged} run" + (" (no re-run with a fix applied)" if judged == "candidate" else "")
    owner = c.terms.get("owner")
    text += f"; the next change is owned by the {owner}" if owner and not c.items else ""
    changed = [n for n in c.terms.get("recomputed", "").split(",") if n]
    if changed:
        text += f" (decided again at rendering: {', '.join(st.code(n) for n in changed)} changed since the walk)"
    return text + "."


def decision_basis(st: Style, c: Claim) -> str:
    """The judged run, and each blocker with its owner."""
    block = blockers(c)
    return decision_judged(st, c) + (f" {block}" if block else "")


def decision_lines(st: Style, c: Claim, gate_link: str | None = None) -> list[str]:
    """The decision line, and each blocker with its owner on a line of its own."""
    owned = blocker_owners(c)
    lines = [f"{decision_head(st, c)}, {decision_judged(st, c)}"]
    if c.terms.get("none_meant_sparse") == "yes":
        lines.append("No layer of either run is meant to be sparse: a dense-vs-dense comparison, so the sparsity checks do not apply.")
    if owned:
        every = f" ([every gate check]({gate_link}) in the report)" if gate_link else ""
        lines += [f"Blocking, with the owner of each{every}:",  # the decision's paragraph goes on: the list follows it
                  *(f"- {st.bold(checks)}" + (f": the {owner}" if owner else "") for checks, owner in owned)]
    return lines


def decision(st: Style, c: Claim) -> str:
    """The decision line."""
    return f"{decision_head(st, c)}, {decision_basis(st, c)}"


# What a significance test made of a figure past its limit when the check still passes.
NOISE_WORDS = {"no_change": "no change beyond noise by the rank test", "not_significant": "the exceedance test is not significant"}


def _past_limit(c: Claim, quantity: str) -> bool:
    """Whether the check claim says its figure ``quantity`` is past its limit (``beyond_limit``)."""
    return quantity in c.terms.get("beyond_limit", "").split(",")


def _noise(c: Claim) -> str:
    """What the check's significance test made of a figure past its limit on a pass."""
    return NOISE_WORDS.get(c.terms.get("judgement", ""), "not significant")


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


WHY_WORDS = {"too_few": "too few samples", "unstable": "timings disturbed by other load"}
"""Why an inconclusive check could not decide (``signoff.memo_results.undecided_why``)."""


def precision_changes_of(c: Claim) -> list[list[str]]:
    """``[layer, was, now]`` for each precision change a claim carries (its ``changed`` term, ``layer:was:now|...``)."""
    return [x.split(":") for x in c.terms.get("changed", "").split("|") if x]


LAUNCH_WORDS = {"eager": "eager", "cuda_graph": "CUDA graph", "compiled": "torch.compile"}
LAUNCHED_WORDS = {"eager": "eagerly, one launch per kernel", "cuda_graph": "as a CUDA graph", "compiled": "by torch.compile"}
"""How a run launched its kernels, after "launched"."""
"""How a traced forward was launched (``records.comparability.LaunchMode``), in words."""


@guarded
def reason(st: Style, c: Claim) -> str:
    """One reason of the decision, in plain words with its figures, and the owner accountable for it."""
    owner = c.terms.get("owner")
    text = _reason(st, c)
    return text + (f" Owner: the {owner}." if owner else "")


def reason_items(st: Style, c: Claim) -> list[str]:
    """The layers a reason names one a line, when too long to name inline (``listed_lines``); else none."""
    if not c.items:
        return []
    lines = listed_lines("layers", [st.code(i) for i in c.items])
    return [line.strip().removeprefix("- ") for line in lines[1:]]


def _reason(st: Style, c: Claim) -> str:
    code = c.code or ""
    role = c.terms.get("role", "candidate")
    status = c.terms.get("status", "")
    if code == "missing_evidence":
        return f"There is no {c.terms.get('evidence', '')} evidence in the judged run: no rollout can pass until it is captured."
    if code == "across_launch":
        base, run = (LAUNCH_WORDS.get(c.terms.get(k, ""), c.terms.get(k, "")) for k in ("base", "run"))
        return f"The speedup is across launch modes ({base} baseline, {run} run), so it is not like for like."
    if code == "allowed_difference":
        return (f"The pair differs in {listed(list(c.items))}, compared anyway as asked (--allow-different), "
                "so the speedup is not like for like.")
    n, judged_n = c.figure("speedup_p50_count"), c.figure("speedup_p50_of")  # the baseline's samples, the judged run's
    if code == "too_few_samples" and n is not None and c.figure("samples_needed") is not None:
        judged = c.terms.get("judged_on", "candidate")
        have = (f"both runs have {num(n)} timed iterations" if judged_n is None or judged_n.value == n.value
                else f"the baseline has {num(n)} timed iterations, the {judged} run {num(judged_n)}")
        return (f"Too few iterations to judge: {have}, "
                f"the rule needs {num(c.figure('samples_needed'))} a side. Time {num(c.figure('samples_needed'))} or more "
                "forwards a side (untraced if you can), then re-run.")
    if code in REASON_WORDS:
        return REASON_WORDS[code].format(judged_on=c.terms.get("judged_on", "candidate"))
    name = CHECK_WORDS.get(code, code)
    if code == "undecided" or status == "inconclusive":
        checks = [CHECK_WORDS.get(k, k) for k in c.terms.get("checks", code).split(",") if k]
        needed = c.figure("samples_needed")
        cause = UNDECIDED_WORDS.get(c.terms.get("why", ""), "on these samples")
        more = f" ({num(needed)} a side needed)" if needed is not None else ""
        word = "check cannot" if len(checks) == 1 else "checks cannot"
        then = UNDECIDED_NEXT.get(c.terms.get("why", ""), "Measure again")
        return f"The {listed(checks)} {word} decide on the {role} run: {cause}{more}. {then}; the policy blocks until then."
    verb = "fails" if status == "fail" else "passes"
    if code == "effective_speedup":
        sp, floor = c.figure("speedup_p50"), c.figure("speedup_min")
        if status == "fail":
            return f"The {role} run is slower than the baseline allows: speedup {num(sp)} against the {num(floor)} floor."
        if _past_limit(c, "speedup_p50"):  # a shortfall the rank test puts within noise
            return (f"The {role} run's speedup {num(sp)} is below the {num(floor)} floor by no more than noise "
                    f"({_noise(c)}), so the speed check passes.")
        return f"The {role} run meets the speed floor: speedup {num(sp)} against {num(floor)}."
    if code == "quality_delta":
        q = c.figure("cosine") or c.figure("perplexity")
        floor = c.figure("cosine_min")
        against = f" against the {num(floor)} floor" if floor is not None else ""
        name = "cosine" if c.figure("cosine") is not None else "perplexity"
        what = "Quality is below the guardrail" if status == "fail" else "Quality holds"
        model = c.terms.get("model")
        if status == "fail" and model:  # a registered model: the study that finds a pruning that holds quality
            return (f"Quality fails: {name} vs dense {num(q)}, floor {num(floor)}. Compare pruning methods and layers "
                    f"with `sparsedebug quality {model}`.")
        return f"{what}: {name} vs the dense model {num(q)}{against}."
    if code == "fallback_rate":
        n, m = c.figure("fell_back"), c.figure("meant_sparse")
        if n is None or m is None:
            return f"The dense fallback check {verb}."
        why = [LOWER_REASON_WORDS.get(r, r) for r in c.terms.get("why", "").split(",") if r]
        named = f": {layer_names(st, list(c.items))}" if c.items and not reason_items(st, c) else ""
        because = f" ({', '.join(why)})" if why else ""
        return f"{num(n)} of {num(m)} layers meant to be sparse run dense{named}{because}; the fallback check {verb}."
    if code == "precision_drift":
        if status != "fail":
            return "The precision check passes."
        changes = precision_changes_of(c)
        if len(changes) == 1 and c.terms.get("causes") == "fallback_rate":  # one cause fails both checks: said once
            layer, was, now = changes[0]
            return (f"Precision and fallback fail from one cause: {st.code(layer)} runs in {st.code(now)} "
                    f"(was {st.code(was)}), which the sparse kernel rejects; restore {st.code(was)}.")
        if len(changes) == 1 and c.terms.get("limit.precision_changes"):  # one layer named; the policy holds changes to none
            moved = " and ".join(f"{st.code(layer)} computes in {st.code(now)} (was {st.code(was)})" for layer, was, now in changes)
            return f"The precision check {verb}: {moved}, and the policy allows no change of precision."
        return f"The precision check {verb}: a layer's dtype or kernel error moved against the baseline."
    if code == "p99_latency":
        return _tail_reason(c, verb)
    return f"The {name} check {verb}."


def _tail_reason(c: Claim, verb: str) -> str:
    """The p99 check as a reason: its p99 ratio, or (too few samples for a p99) the slowest-sample count it made."""
    r, cap = c.figure("p99_ratio"), c.figure("p99_max_ratio")
    if c.terms.get("tail") == "few":  # too few samples for a p99: the check counts samples past the baseline's slowest
        return f"The tail latency check {verb}: counted against {num(cap)}x the baseline's slowest sample (too few samples for a p99)."
    if verb == "passes" and _past_limit(c, "p99_ratio"):
        return (f"The p99 latency check passes: p99 is {num(r)}x the baseline's, over the {num(cap)}x limit by no more "
                f"than noise ({_noise(c)}).")
    return f"The p99 latency check {verb}: p99 is {num(r)}x the baseline's, against at most {num(cap)}x."


@guarded
def speedup(st: Style, c: Claim) -> str:
    """The failing metric's speed figures."""
    return "; ".join(speedup_parts(st, c))


def speedup_parts(st: Style, c: Claim) -> list[str]:
    """The failing metric's speed figures, and what they rest on when that is traced latency."""
    sp = c.figure("speedup_p50")
    b, k = c.figure("latency_p50_ms", "baseline"), c.figure("latency_p50_ms", "candidate")
    if sp is None:
        return ["speedup over the baseline not measured (no latency samples on a side)"]
    paired = f"{speedup_basis_words(sp)}; " if sp.basis == "paired_rounds" else ""
    status = c.terms.get("status", "")
    verdict = {"fail": ", **FAILS**", "pass": ", passes", "inconclusive": ", not judged"}.get(status, "")
    why = WHY_WORDS.get(c.terms.get("why", ""))
    verdict = (verdict if st.markdown else verdict.replace("**", "")) + (f" ({why})" if why and status == "inconclusive" else "")
    out = [f"speedup {num(sp)} over the baseline ({paired}p50 {num(b)} baseline, {num(k)} candidate){verdict}"]
    share = c.figure("traced_host_wait_share")
    if c.code == "rests_on_traced" and share is not None:
        out.append(f"it rests on traced latency, which holds the profiler's own cost (the candidate's GPU waits on the host for {num(share)} "
                   "of its span); untraced timings settle it (CUDA events, `--latency BASE.csv CAND.csv`)")
    return out


@guarded
def target_speedup(st: Style, c: Claim) -> str:
    """The projected speedup on the target."""
    launch = c.terms.get("launch", "")
    return (f"{num(c.figure('target_speedup'))} vs dense on the target (launched {LAUNCHED_WORDS.get(launch, launch)}); "
            "a projection, not what the decision uses")


@guarded
def sparse_kernels(st: Style, c: Claim) -> str:
    """Were the sparse kernels used: yes or no, on how many of the layers with 2:4 weights, which were not picked."""
    head, *rest = sparse_kernels_parts(st, c)
    return "; ".join([head, *(r.strip().removeprefix("- ") for r in rest)]).replace(":;", ":")


def sparse_kernels_parts(st: Style, c: Claim) -> list[str]:
    """:func:`sparse_kernels` as lines: the answer, the layers not picked (one a line when long), the largest change."""
    run = st.code(c.terms.get("run", ""))
    if c.code == "build_disabled":
        return [f"no: {run} was built with sparsity disabled; rebuild with {c.terms.get('flags') or 'sparsity enabled'}"]
    if c.code == "no_sparse_weights":
        return [f"no: none of {run}'s {num(c.figure('weighted_layers'))} layers with weights carries 2:4 weights"]
    answer = "yes" if c.code == "used" else "no"
    out = [f"{answer}: {run} ran a sparse tactic on {num(c.figure('sparse_tactic_layers'))} of "
           f"{num(c.figure('sparse_weight_layers'))} layers with 2:4 weights"]
    if c.items:
        total = c.figure("not_picked_layers")
        more = f" ({num(total)} in all)" if c.more and total is not None else ""
        out += listed_lines(f"eligible but not picked{more}", [st.code(i) for i in c.items])
    layer = c.terms.get("changed_layer")
    if layer:
        out.append(f"largest per-layer change {st.code(layer)} {num(c.figure('layer_ms', 'baseline'))} -> "
                   f"{num(c.figure('layer_ms', 'candidate'))} ({num(c.figure('change'))}, profile median)")
    return out


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
    return "; ".join(failing_metric_parts(st, claims)) + "."


def failing_metric_parts(st: Style, claims: list[Claim]) -> list[str]:
    """The symptom's failing metric, one part per figure it rests on."""
    parts = []
    for c in claims:
        if c.kind == "speedup":
            parts += speedup_parts(st, c)
        elif c.kind == "target_speedup":
            parts.append(target_speedup(st, c))
        elif c.kind == "quality":
            parts.append(quality(st, c))
    return parts


SOURCE_WORDS = {"replay": "replayed on this CPU"}
"""A run's source kind in words, where the input registry does not name it."""


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
    parts.append(f"{num(c.figure('layers'))} layers in its graph")
    parts.append(f"backend {st.code(t.get('backend', ''))}")
    if "seed" in t:
        parts.append(f"seed {st.code(t['seed'])}")
    source = SOURCE_WORDS.get(t.get("source", "")) or t.get("source_what") or t.get("source", "")
    return ", ".join(parts) + f" ({source})."


FINDING_WORDS = {
    "fallback": "dense fallback", "per_call_conversion": "weights converted on every call", "path_changed": "kernel path changed",
    "slower": "slower kernels", "faster": "faster kernels", "idle_grew": "GPU idle time grew", "idle_shrank": "GPU idle time shrank",
    "added": "layer added", "removed": "layer removed", "changed": "layer changed", "precision": "precision changed",
    "new_kernel_class": "new kernel class",
}


LOWER_REASON_WORDS = {
    "pattern_not_compliant": "weights not in the 2:4 pattern", "shape_not_aligned": "shape the sparse kernel rejects",
    "dtype_unsupported": "dtype the sparse kernel rejects", "op_unsupported": "op with no sparse kernel",
    "slower_than_dense": "sparse slower than dense", "observed_dense": "ran a dense kernel", "intended_dense": "meant dense",
}
"""Why a layer runs dense (``records.run.FallbackReason``), in words."""


LIST_INLINE_MAX = 190
"""A list longer than this many characters goes one item a line (nested bullets), so no line runs past the memo's limit."""


def listed_lines(head: str, items: list[str]) -> list[str]:
    """``head: a, b, c`` as one line, or, when long, ``head:`` and one nested ``- item`` line each (lines without the
    outer bullet: the caller indents them)."""
    inline = f"{head}: {', '.join(items)}"
    if len(inline) <= LIST_INLINE_MAX:
        return [inline]
    return [f"{head}:", *(f"  - {item}" for item in items)]


def layer_names(st: Style, names: list[str]) -> str:
    """A layer set as written once (``signoff.memo_results.layer_set``): its patterns as names, and how to read one."""
    return ", ".join(st.code(n) for n in names)
