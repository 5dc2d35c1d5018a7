"""Template section 3 (proposed action) and 4 (signoff) of the memo, one phrasing function per fact kind.

Every number is printed by ``num`` from a figure of the claim, as in ``render.memo.phrases``.
"""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.guard import guarded
from sparsedebug.render.memo.phrases import Style, layer_names, listed_lines, num
from sparsedebug.render.words.mechanisms_records import advice_words

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
    if layers is not None and t.get("target_layers") and not wide:
        text += f" on {num(layers)} layers"
    return text.rstrip(".") + ("; applied in the re-run." if t.get("applied") == "yes" else ".")


def change_details(st: Style, c: Claim) -> list[str]:
    """The change's layers, written once (the same set the first stage names), and its owner."""
    t = c.terms
    out = []
    names = [n for n in t.get("target_set", "").split("|") if n]
    if names:
        out += listed_lines("Layers", [layer_names(st, [n]) for n in names])
    removes, layers = c.figure("removes_ms"), c.figure("target_layers")
    if removes is not None:
        across = f" across all {num(layers)} layers" if layers is not None and layers.value > 1 else ""
        out.append(f"Removes: {num(removes)} per iteration{across}")
    if t.get("action_code") == "cuda_graph":  # the projection keeps the baseline eager
        out.append("Like for like: the eager baseline would gain from a CUDA graph too; graph both before comparing")
    if t.get("owner"):
        out.append(f"Owner: the {t['owner']}")
    return out


METRIC_WORDS = {
    "latency_p50_ms": "latency p50", "busy_p50_ms": "busy GPU time per forward (p50)",
    "span_busy_ratio": "time the GPU sits idle within a forward (span over busy time)",
    "fallback_flop_share": "share of sparse work running dense", "max_rel_err": "worst kernel error",
    "latency_drift_ratio": "latency drift across iterations", "smi_min_clock_ratio": "clock drop under load",
    "latency_tail_ratio": "p99 over p50",
}
"""A fix's target metric (``Fix.metric``) in words."""


PROJECTION_WORDS: dict[str, str] = {
    "schedule_overhead": "less its GPU idle beyond the baseline's (median span minus busy)",
    "conversion": "removing the weight conversions' timed cost per forward",
    "layer_to_sparse": "the dense layers run at the sparse kernel's measured speedup",
    "exclude_layer": "the layer runs at its dense time",
    "already_dense": "the layer already runs dense: nothing moves",
}
"""What a projection of the latency stands on, by its basis (``signoff.movement.expected_latency``'s note code)."""

REMOVES_WORDS: dict[str, str] = {
    "math_path_time": "removing the math attention path's kernel time",
    "changed_path_time": "removing the changed layers' kernel-time change",
    "host_gap_growth": "removing the growth in host gaps over the baseline",
    "conversion_time": "removing the per-call conversion time",
    "fallback_time": "removing the dense fallbacks' extra time",
}
"""What a fix that states its own saving removes, by ``records.classification.MovementBasis``."""


@guarded
def expected(st: Style, c: Claim) -> str:
    """What the change should move, by how much, and on what basis."""
    if c.code == "projected":
        before, after, ch = c.figure("latency_p50_ms", "candidate"), c.figure("latency_p50_ms", "expected"), c.figure("change")
        speedup = c.figure("speedup_p50", "expected")
        reach = f"; the speedup over the baseline would then be {num(speedup)}" if speedup is not None else ""
        removes = PROJECTION_WORDS.get(c.terms.get("basis", ""), "the time the change removes")
        removes = REMOVES_WORDS.get(c.terms.get("removes_basis", ""), removes) if c.terms.get("basis") == "fix_removes" else removes
        return f"latency p50 {num(before)} -> {num(after)} ({num(ch)}), {removes}{reach}."
    metric, direction = c.terms.get("metric"), c.terms.get("direction")
    saving, p50 = c.figure("saving_ms"), c.figure("latency_p50_ms", "candidate")
    if metric and c.terms.get("why") == "saving_past_forward" and saving is not None and p50 is not None:
        return (f"{METRIC_WORDS.get(metric, metric.replace('_', ' '))} {direction}; not projected: the saving, timed apart from "
                f"the forward, sums to {num(saving)}, past the whole {num(p50)} forward (other load).")
    if metric:
        return f"{METRIC_WORDS.get(metric, metric.replace('_', ' '))} {direction}; by how much is not projected."
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


AGAINST_WORDS: dict[str, str] = {
    "locate": "Judged against the candidate's timings from the locate step, not re-timed beside it: the dense reference ran "
              "as fast in both sessions",
    "fresh": "Judged against the candidate replayed again beside the fixed run, round by round (the machine drifted, or could "
             "not be shown not to)",
}
"""Which candidate the fix's verdict compares the fixed run with (``FixOutcome.pairing``)."""


def measured_caveats(c: Claim | None) -> list[str]:
    """What the measured movement rests on that a reader must weigh: which candidate it was judged against, and the fixed
    run's timings disturbed by other load."""
    if c is None:
        return []
    out = [AGAINST_WORDS[c.terms["against"]]] if c.terms.get("against") in AGAINST_WORDS else []
    if c.terms.get("timings") == "unstable":
        out.append("Other load disturbed the fixed run's timings: re-run on a quiet machine to confirm by how much it moved")
    return out


THERMAL_WORDS = {"supported": "clocks fell during the run", "not_supported": "no sign of throttling",
                 "unknown": "not evaluable (no clock log)"}


@guarded
def risk(st: Style, c: Claim) -> str:
    """One regression risk."""
    t = c.terms
    if c.code == "correctness":
        status = t.get("status", "off")
        words = {"pass": "passes", "fail": "FAILS", "skipped": "could not run (no kernel error evidence)", "off": "was not run",
                 "inconclusive": "is inconclusive"}
        text = f"correctness: the precision check {words.get(status, status)} on the {t.get('role', '')} run"
        if t.get("candidate_status") == status and status == "fail":
            text += ", as on the candidate: the fix did not cause it"
        return text
    if c.code == "quality":
        if not c.figures:
            return f"quality: not measured on the {t.get('role', '')} run"
        before, after = c.figure("cosine", "candidate"), c.figure("cosine", t.get("role"))
        if before is not None and after is not None and before is not after:
            return f"quality: cosine {num(before)} (candidate) -> {num(after)} (fixed)"
        return f"quality: cosine {num(after)}"
    if c.code == "thermal":
        return f"thermal: {THERMAL_WORDS.get(t.get('status', 'unknown'), 'not evaluable')}"
    if c.code == "compatibility":
        if not c.items:
            return f"compatibility: no knob, launch mode or device changed on backend {st.code(t.get('backend', ''))}"
        return f"compatibility: the fixed run changes {', '.join(st.code(i) for i in c.items)} on backend {st.code(t.get('backend', ''))}"
    return c.code or ""


@guarded
def artifact(st: Style, c: Claim) -> str:
    """The required artifact and its headline figures."""
    t = c.terms
    link = f"[{t['file']}]({t['file']})" if st.markdown else t["file"]
    rows = "rows (kernel names: a CUDA-graph trace)" if t.get("rows") == "kernel_names" else "layers"
    text = f"sparsity deployment report {link}: {num(c.figure('layers'))} {rows} in the supported-layer matrix"
    n, m = c.figure("fell_back"), c.figure("meant_sparse")
    if n is not None and m is not None:
        text += f", {num(n)} of {num(m)} meant-sparse layers run dense"
    return text + "."


@guarded
def owners(st: Style, c: Claim) -> str:
    """Who signs; when some of them hold nothing open here (no blocking check, not the proposed change), where the
    open items are."""
    return ", ".join(c.items) + ("; all sign, and the blocking list above gives the open items" if c.terms.get("idle") else "") + "."
