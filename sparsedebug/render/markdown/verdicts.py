"""The memo's verdict sentences from the attribution record: what the winning mechanism carries, and its parts."""

from __future__ import annotations

from sparsedebug.records.bundle import FixOutcome
from sparsedebug.records.classification import Classification
from sparsedebug.render.words.dispatch import cause_words
from sparsedebug.render.words.mechanisms_records import margin_words, part_words


def attribution_sentence(cls: Classification) -> str | None:
    """``mechanism M carries X ms of the +Y ms change (Z%)`` for the winner, when it was ranked by attribution."""
    if cls.ranked_by != "attribution" or cls.attribution is None or cls.winner is None:
        return None
    share = cls.attribution.share_of(cls.winner)
    if share is None:
        return None
    att = cls.attribution
    pct = f" ({share.share:.0%})" if share.share is not None else ""
    text = f"mechanism {cls.winner.value} carries {share.ms:.3f} ms of the {att.delta_ms:+.3f} ms change{pct}"
    if att.on_trace_clock and att.untraced_delta_ms is not None:
        text += f" on the trace's clock (untraced, with the profiler off: {att.untraced_delta_ms:+.3f} ms)"
    if share.share is not None and round(share.share * 100) > 100:
        # more than the whole change: name what offsets it (MechanismShare.against), so the share reads as a share of the net change
        own = share.negative_ms if att.delta_ms >= 0 else share.positive_ms
        pulled = {m.mechanism.value: m.ms for m in att.mechanisms} | {"unattributed": att.unattributed_ms, "own parts": own}
        offsets = [f"{name} {pulled[name]:+.3f} ms" for name in share.against if name in pulled]
        named = f" ({', '.join(offsets)})" if offsets else ""
        text += f", more than the whole change: the other parts offset {att.delta_ms - share.ms:+.3f} ms{named}"
    return text


def attributed_lines(cls: Classification, score: float) -> list[str]:
    """The primary-mechanism bullet with the winner's three largest parts and the unattributed rest (empty: not ranked by attribution)."""
    carried = attribution_sentence(cls)
    att = cls.attribution
    if carried is None or att is None or cls.winner is None:
        return []
    out = [f"- **Primary mechanism**: **{cls.winner.value}**: {carried}, {margin_words(cls)}; rule score {score:.2f}."]
    for part in [p for p in att.parts if p.mechanism == cls.winner][:3]:
        cause = f"; cause seen in the trace: {'; '.join(cause_words(c) for c in part.cause)}" if part.cause else ""
        out.append(f"  - `{part.part}` ({part.kind}) {part.ms:+.3f} ms: {part_words(part, cls)}{cause}.")
    if abs(att.unattributed_ms) > 0.0005:
        residual = att.busy_residual_ms
        why = (
            f" ({residual:+.3f} ms of it busy time the layers' kernel timings do not carry: ops outside the layers, "
            "or kernels timed apart from the forward)"
            if residual is not None and abs(residual) > 0.0005 else ""
        )
        out.append(f"  - Not attributed to any mechanism: {att.unattributed_ms:+.3f} ms of the change{why}.")
    return out


_SHIFT = {"faster": "made latency p50 faster", "slower": "made latency p50 slower", "same": "left latency p50 where it was, within noise"}


def fix_verdict(fo: FixOutcome) -> str:
    """What the fix did to its target: for latency, the measured direction and ratio judged against the projected
    direction (``made latency p50 slower (x1.508), against the projection (faster)``); else whether the target moved."""
    target = fo.target or "its target metric"
    lat = next((m for m in fo.movements if m.metric == "latency p50"), None)
    if fo.target == "latency p50" and lat is not None and lat.direction is not None:
        moved = f"{_SHIFT[lat.direction]} (x{lat.change:.3f})"
        if lat.expected_direction is None:
            return f"{moved}; no projected direction to judge it against"
        return f"{moved}, {'as projected' if lat.as_expected else 'against the projection'} ({lat.expected_direction})"
    return f"moved {target} the expected way" if fo.moved else (f"did NOT move {target}" if fo.moved is False else "could not be judged")


SETTLE_TEXT: dict[str, str] = {
    "aligned_clock_log": "an nvidia-smi clock log placed on the runs' time axis (pass --smi-utc-offset, or log with UTC timestamps) "
    "so the clocks inside each run's window can be compared",
    "ncu_report": "an Nsight Compute report of the changed kernels on both sides (ncu --csv), to tell work from bytes from precision",
    "cuda_graph_retrace": "both sides re-traced with the forward captured in a CUDA graph, so host overhead drops out of the comparison",
    "annotated_trace": "traces with per-layer record_function annotations and record_shapes=True",
    "more_repeats": "more measured iterations on both sides",
}
"""The one capture that would settle a mechanism that is not established, by ``Classification.settle`` code."""


def _share_text(ms: float, share: float | None, positive: float, negative: float, against: list[str] | None = None) -> str:
    pct = f" ({share:.0%})" if share is not None else ""
    if share is not None and round(share * 100) > 100:
        pct = f" (more than the whole change: {share:.0%}" + (f"; {', '.join(against)} pull the other way" if against else "") + ")"
    split = f" = {positive:+.3f} ms grown {negative:+.3f} ms shrunk" if negative < 0 and positive > 0 else ""
    return f"{ms:+.3f} ms{pct}{split}"


def _one_run_text(cls: Classification) -> str:
    """Why rule scores make no headline: the rules that fired read the candidate alone, and no change was measured."""
    fired = ", ".join(f"`{e.rule}`" for e in cls.evidence if e.fired) or "no rule"
    change = f" (latency {cls.attribution.delta_ms:+.3f} ms)" if cls.attribution is not None else ""
    return (f"the rules that fired ({fired}) read the candidate alone, and no change between the two runs{change} was "
            "measured for them to carry")


def not_established_sentence(cls: Classification) -> str | None:
    """``not established: compute +0.5 ms (45%), scheduling +0.4 ms (40%); settle with ...`` (None unless established is False)."""
    att = cls.attribution
    if cls.established is False and cls.ranked_by == "score":
        return f"not established: {_one_run_text(cls)}"
    if cls.established is not False or att is None:
        return None
    carried = ", ".join(f"{m.mechanism.value} {_share_text(m.ms, m.share, m.positive_ms, m.negative_ms, m.against)}" for m in att.mechanisms)
    settle = f"; would settle it: {SETTLE_TEXT[cls.settle]}" if cls.settle is not None else ""
    return (f"not established: no mechanism carries at least 40% of the {att.delta_ms:+.3f} ms change and twice the runner-up's "
            f"share ({carried or 'no part carries mechanism evidence'}; unattributed {att.unattributed_ms:+.3f} ms){settle}")


def not_established_lines(cls: Classification) -> list[str]:
    """The primary-mechanism bullet when the evidence does not carry a headline: what each candidate carries
    (grown and shrunk parts), the rest, and the one capture that would settle it (empty otherwise)."""
    att = cls.attribution
    if cls.established is False and cls.ranked_by == "score":
        settle = [f"  - Would settle it: {SETTLE_TEXT[cls.settle]}."] if cls.settle is not None else []
        return [f"- **Primary mechanism**: not established: {_one_run_text(cls)}; no fix is proposed on it.", *settle]
    if cls.established is not False or att is None:
        return []
    out = [f"- **Primary mechanism**: not established: no mechanism carries at least 40% of the {att.delta_ms:+.3f} ms change "
           "and twice the runner-up's share; no fix is proposed on it."]
    for m in att.mechanisms:
        out.append(f"  - {m.mechanism.value} carries {_share_text(m.ms, m.share, m.positive_ms, m.negative_ms, m.against)} "
                   f"over {m.parts} part(s), most in `{m.largest}`.")
    share = att.unattributed_ms / att.delta_ms if att.delta_ms else None
    out.append(f"  - Not attributed to any mechanism: {_share_text(att.unattributed_ms, share, 0.0, 0.0)}.")
    if cls.settle is not None:
        out.append(f"  - Would settle it: {SETTLE_TEXT[cls.settle]}.")
    return out
