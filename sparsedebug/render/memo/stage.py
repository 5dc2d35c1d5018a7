"""The memo's first divergent stage in a lead's words: the stage, its legend, the effect the bisect measured and
the samples its test rests on, and what each finding kind covers (one line per kind, layer sets written once).

Every number is printed by ``num`` from a figure of the claim; nothing is computed here.
"""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.guard import guarded
from sparsedebug.render.memo.phrases import FINDING_WORDS, LOWER_REASON_WORDS, Style, claim_names, listed_lines, num
from sparsedebug.render.words.dispatch import listed
from sparsedebug.render.words.figures import speedup_basis_words

STAGE_WORDS: dict[str, str] = {
    "graph": "the model graph: its layers and shapes", "lower": "lowering: which kernel path and dtype each layer gets",
    "kernel": "kernel times", "schedule": "scheduling: launches and GPU idle gaps", "outcome": "latency per forward",
}
STAGE_ORDER: tuple[str, ...] = ("graph", "lower", "kernel", "schedule", "outcome")
"""Each playbook stage (``locate``) in the words of the seed's stage list, for a lead who does not know the tool."""

LAYER_EFFECT_WORDS: dict[str, str] = {
    "schedule": "GPU idle before each call plus its kernel time", "kernel": "kernel time per call",
    "lower": "kernel time per call",
}
"""What a layer group's effect size compares, by the stage that found it (``locate.schedule`` adds the idle gap)."""

STAGE_SHORT: dict[str, str] = {"graph": "graph change", "lower": "lowering change", "kernel": "kernel times",
                               "schedule": "scheduling gaps", "outcome": "slower forward"}
"""A stage as the thing it explains downstream."""


# What a stage metric's effect size compares (``locate``'s MetricFinding.metric), per iteration.
EFFECT_METRIC_WORDS = {"overhead_ms": "overhead (span - busy) on top of the baseline's busy time", "busy_ms": "kernel busy time"}


@guarded
def first_stage(st: Style, c: Claim, effect_here: bool = True) -> str:
    """The first persistent divergent stage, its layers and what it explains (with :func:`first_stage_effect` unless
    ``effect_here`` is off: the memo gives the effect a line of its own)."""
    if c.code == "not_located":
        return "not located (no bisect result in the bundle)."
    if c.code != "divergence":
        return f"no persistent divergence ({st.code(c.code or '')})."
    kinds = []
    for kind in (k for k in c.terms.get("kinds", "").split(",") if k):
        reasons = [r for r in c.terms.get(f"reasons.{kind}", "").split(",") if r]
        kinds.append(FINDING_WORDS.get(kind, kind) + (f" ({', '.join(LOWER_REASON_WORDS.get(r, r) for r in reasons)})" if reasons else ""))
    text = f"stage {st.code(c.terms.get('stage', ''))}"
    by_kind = any(k.startswith("layers.") for k in c.terms)
    if kinds and not by_kind:
        text += ": " + ", ".join(kinds)
    if c.items and not by_kind:
        text += f" on {claim_names(st, c)}"
    effect = first_stage_effect(st, c) if effect_here else None
    if effect:
        text += f"; {effect}"
    share = c.figure("accounted_share")
    if share is not None and round(share.value, 2) > 1:  # past the whole change: the rest of the forward moved back
        text += f"; its layers grew {num(share)} of the latency change (the rest got faster)"
    elif share is not None and share.value > 0:
        text += f"; its layers carry {num(share)} of the latency change"
    if c.terms.get("explains"):
        stages = c.terms["explains"].split(",")
        text += f", which explains the {listed([STAGE_SHORT.get(x, x) for x in stages])} downstream"
    return text + "."


SAMPLE_WORDS: dict[str, str] = {"per_call": "calls", "per_forward": "forwards", "paired_rounds": "paired rounds",
                                 "per_iteration": "iterations"}
"""What one sample of an effect's test is, by the effect's basis."""


def _tested_on(c: Claim) -> str:
    """`` over 12 calls a side``: the samples a p-value rests on (empty when the claim does not hold them)."""
    base, cand = c.figure("effect_samples", "baseline"), c.figure("effect_samples", "candidate")
    if base is None or cand is None:
        return ""
    what = SAMPLE_WORDS.get(cand.basis or "", "samples")
    if cand.basis == "paired_rounds":
        return f" over {num(cand)} {what}"
    forwards = c.figure("effect_forwards")
    within = f" within {num(forwards)} forwards, so not independent" if forwards is not None else ""
    if base.value == cand.value:
        return f" over {num(cand)} {what} a side{within}"
    return f" over {num(base)} baseline and {num(cand)} candidate {what}"


def stage_legend(st: Style, c: Claim) -> list[str]:
    """What the first stage is, in a lead's words (a line of its own; none when no stage diverged)."""
    stage = c.terms.get("stage", "")
    if c.code != "divergence" or stage not in STAGE_WORDS:
        return []
    order = ", ".join(STAGE_ORDER)
    before = STAGE_ORDER[:STAGE_ORDER.index(stage)] if stage in STAGE_ORDER else []
    matched = f"; {', '.join(before)} did not diverge" if before else ""
    return [f"Stage {st.code(stage)} is {STAGE_WORDS[stage]} (the stages in order: {order}{matched})"]


def first_stage_effect(st: Style, c: Claim) -> str | None:
    """The bisect's effect size, named by what it compares: one layer group per call, a stage metric per iteration,
    or the forward's latency (None without one)."""
    p = c.figure("effect_p")
    tested = f" ({num(p)}{_tested_on(c)})" if p is not None else ""
    layer_effect, latency, metric = c.figure("layer_effect_ratio"), c.figure("latency_ratio"), c.figure("metric_ratio")
    if layer_effect is not None:  # an effect size of one layer group, per call: not the forward's latency
        what = LAYER_EFFECT_WORDS.get(c.terms.get("effect_stage", ""), "time per call")
        return f"largest layer effect: {what}, ratio {num(layer_effect)} on {st.code(c.terms.get('effect_layer', ''))}{tested}"
    if metric is not None:
        name = c.terms.get("effect_metric", "")
        return f"effect: {EFFECT_METRIC_WORDS.get(name, st.code(name))}, ratio {num(metric)} per iteration{tested}"
    if latency is not None:
        paired = f", {speedup_basis_words(latency)}" if latency.basis == "paired_rounds" else ""
        return f"latency ratio {num(latency)} per forward{paired}{tested}"
    return None


CAUSE_WORDS: dict[str, str] = {"non_contiguous": "{t} not contiguous", "dtype_change": "{t} dtype changed",
                                "attn_mask": "an attn_mask is now passed", "dropout": "dropout is now on", "head_dim": "head dim changed"}
"""What the dispatcher saw differently (``records.run.DispatchCause.code``), without its figures (the report gives them)."""


def _cause(code_tensor: str) -> str:
    code, _, tensor = code_tensor.partition(":")
    return CAUSE_WORDS.get(code, code).format(t=tensor or "an input")


def first_stage_layers(st: Style, c: Claim) -> list[str]:
    """What the first stage found, one line per kind: the finding, why, and its layers written once."""
    out = []
    for kind in (k for k in c.terms.get("kinds", "").split(",") if k):
        reasons = [LOWER_REASON_WORDS.get(r, r) for r in c.terms.get(f"reasons.{kind}", "").split(",") if r]
        reasons += [p.replace("->", " -> ") for p in c.terms.get(f"paths.{kind}", "").split(",") if p]
        reasons += [_cause(cause) for cause in c.terms.get(f"causes.{kind}", "").split(",") if cause]
        names = [n for n in c.terms.get(f"layers.{kind}", "").split("|") if n]
        n = c.figure("kind_layers", kind)
        why = f" ({', '.join(reasons)})" if reasons else ""
        count = f" on {num(n)} layer{'s' if n.value != 1 else ''}" if n is not None else ""
        out += listed_lines(f"{FINDING_WORDS.get(kind, kind)}{why}{count}", [st.code(n) for n in names])
    return out
