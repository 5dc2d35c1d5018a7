"""Template section 2 of the memo, the hypothesis: the primary mechanism, the competing ones, the missing evidence.

Every number is printed by ``num`` from a figure of the claim, as in ``render.memo.phrases``.
"""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.guard import guarded, withheld
from sparsedebug.render.memo.phrases import Style, num
from sparsedebug.render.words.dispatch import listed


def over_explains(c: Claim) -> str | None:
    """``, more than the whole change (194%): time no mechanism carries pulls the other way`` for a share past 100% (None
    otherwise)."""
    share = c.figure("carried_share")
    if share is None or round(100 * share.value) <= 100:
        return None
    own = f"parts of {c.terms.get('mechanism', 'its')} that shrank"
    words = {"own parts": own, "unattributed": "time no mechanism carries"}
    against = [words.get(w, w) for w in c.terms.get("against", "").split(",") if w]
    pulls = f": {listed(against)} {'pulls' if len(against) == 1 else 'pull'} the other way" if against else ""
    return f", more than the whole change ({num(share)}){pulls}"


def _carries(c: Claim, of: str = "", over_here: bool = True) -> str:
    ms, share = c.figure("carried_ms"), c.figure("carried_share")
    if ms is None:
        return f"carries none of the change{of}"
    over = over_explains(c) if over_here else None
    if not over_here and over_explains(c) is not None and round(ms.value, 3) > 0:
        return f"carries {num(ms)}{of}"
    if over is not None and round(ms.value, 3) > 0:
        return f"carries {num(ms)}{of}{over}"
    if round(ms.value, 3) > 0 and share is not None and round(share.value, 2) > 0:
        return f"carries {num(ms)} ({num(share)}){of}"
    return f"moves the other way, {num(ms)}{of}"


def primary_settle(c: Claim) -> list[str]:
    """What the primary mechanism's line leaves to lines of its own (``primary_mechanism(..., settle_here=False)``):
    a share past the whole change and what pulls back, the change with the profiler off, the capture that settles it."""
    out = []
    over = over_explains(c) if c.code == "established" else None
    ms = c.figure("carried_ms")
    if over is not None and ms is not None and round(ms.value, 3) > 0:
        stage, share = c.figure("stage_share"), c.figure("carried_share")
        # the first stage's share counts its layers only, the mechanism's all its time: said together, so they do not
        # clash (a stage share that is negative, or past the mechanism's, explains nothing and is left out)
        shown = stage is not None and share is not None and 0 < stage.value < share.value
        alone = f"; its first stage's layers alone carry {num(stage)}" if shown else ""
        out.append("That is" + over.removeprefix(",") + alone)
    unattributed = c.figure("unattributed_ms")
    if over is None and unattributed is not None:
        out.append(f"The shares add up to more than the whole change: the time no mechanism carries moved the other way ({num(unattributed)})")
    untraced = c.figure("untraced_change_ms")
    if untraced is not None and c.code != "not_classified":
        out.append(f"Shares of the change on the trace's clock (untraced, with the profiler off: {num(untraced)})")
    settle = SETTLE_WORDS.get(c.terms.get("settle", ""))
    return out + ([f"To settle it: {settle}"] if settle and c.code in ("none", "not_established") else [])


@guarded
def primary_mechanism(st: Style, c: Claim, settle_here: bool = True) -> str:
    """The primary mechanism, or why none is established (with what ``primary_settle`` says unless ``settle_here`` is off)."""
    if c.code == "not_classified":
        return "not classified (no classification in the bundle)."
    change, untraced = c.figure("change_ms"), c.figure("untraced_change_ms")
    of = f" of the {num(change)} change" if change is not None else ""
    if untraced is not None and settle_here:
        of += f" on the trace's clock (untraced, with the profiler off: {num(untraced)})"
    if c.code == "none":
        return ("not established: no rule singles out a mechanism" + (f" for the {num(change)} change" if change else "")
                + (f"; {SETTLE_WORDS[c.terms['settle']]} would settle it" if settle_here and c.terms.get("settle") in SETTLE_WORDS else "")
                + ".")
    mech = st.code(c.terms.get("mechanism", ""))
    if c.terms.get("ranked_by") == "score":
        return f"{mech}, by its rule score {num(c.figure('score'))} (no measured change to attribute)."
    settle = SETTLE_WORDS.get(c.terms.get("settle", ""), "")
    settle_text = f"; {settle} would settle it" if settle and settle_here else ""
    if c.code == "not_established":
        return f"not established: {mech} leads without a clear share; it {_carries(c, of)}{settle_text}."
    hypothesis = " (a hypothesis from the timings: no other evidence in these inputs confirms it)" if c.terms.get("confirmed") == "no" else ""
    return f"{st.bold(c.terms.get('mechanism', ''))}, which {_carries(c, of, over_here=settle_here)}{hypothesis}."


SETTLE_WORDS = {
    "aligned_clock_log": "an nvidia-smi clock log aligned to the runs' windows",
    "ncu_report": "an Nsight Compute report of the changed kernels on both sides",
    "cuda_graph_retrace": "both sides re-traced under a CUDA graph",
    "annotated_trace": "traces with per-layer annotations",
    "more_repeats": "more measured iterations on both sides",
}
"""The one capture that would settle a mechanism that is not established."""


COMPETING_STATUS = {"supported": "its signature is present", "not_supported": "no sign of any", "unknown": "not evaluable"}
"""A competing mechanism's rule status, in words."""


def competing(st: Style, claims: list[Claim]) -> str:
    """The other mechanisms, in the ranking's own yardstick."""
    parts = competing_parts(st, claims)
    return "; ".join(parts) + "." if parts else "none."


def competing_parts(st: Style, claims: list[Claim]) -> list[str]:
    """The other mechanisms, one part each; those that carry none for the same reason share one part."""
    parts = []
    none: dict[str, list[str]] = {}  # status -> the mechanisms carrying none for it, in order
    for c in claims:
        mech = st.code(c.terms.get("mechanism", ""))
        status = COMPETING_STATUS.get(c.code or "", c.code or "")
        if c.withheld:
            parts.append(f"{mech} {withheld(st, c).rstrip('.')}")
        elif c.terms.get("ranked_by") == "score":
            parts.append(f"{mech} score {num(c.figure('score'))} ({status})")
        elif c.figure("carried_ms") is not None:
            parts.append(f"{mech} {_carries(c)}")
        elif c.code == "supported":
            parts.append(f"{mech}: its signature is present but carries none of the latency change")
        else:
            none.setdefault(status, []).append(mech)
    unknown = COMPETING_STATUS["unknown"]  # not evaluated is not carrying none: the inputs cannot say
    return parts + [f"{listed(mechs)}: unknown ({status} from these inputs)" if status == unknown else
                    f"{listed(mechs)} {'carries' if len(mechs) == 1 else 'carry'} none ({status})" for status, mechs in none.items()]


def missing(st: Style, claims: list[Claim], anchor: str) -> str:
    """Which mechanisms lack the evidence that would settle them (the captures are in the report)."""
    if not claims:
        return "none for the ranking above."
    names = listed(list(dict.fromkeys(c.code or "" for c in claims if not c.withheld)))
    link = f"[report]({anchor})" if st.markdown else anchor
    held = [c for c in claims if c.withheld]
    more = "".join(f" ({len(held)} more {withheld(st, held[0]).rstrip('.')})" for _ in held[:1])
    return f"nothing in these inputs confirms {names} beyond the timings (captures in the {link}){more}."
