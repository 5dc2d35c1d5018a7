"""The memo's verdict sentences from the attribution record: what the winning mechanism carries, and its parts."""

from __future__ import annotations

from sparsedebug.records.bundle import FixOutcome
from sparsedebug.records.classification import Classification


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
    if share.share is not None and round(share.share * 100) > 100:
        # more than the whole change: name what offsets it, so the share reads as a share of the net change
        sign = 1.0 if att.delta_ms >= 0 else -1.0
        offsets = [f"{m.mechanism.value} {m.ms:+.3f} ms" for m in att.mechanisms if m.mechanism != cls.winner and sign * m.ms < 0]
        if sign * att.unattributed_ms < 0:
            offsets.append(f"unattributed {att.unattributed_ms:+.3f} ms")
        named = f" ({', '.join(offsets)})" if offsets else ""
        text += f", more than the whole change: the other parts offset {att.delta_ms - share.ms:+.3f} ms{named}"
    return text


def attributed_lines(cls: Classification, score: float) -> list[str]:
    """The primary-mechanism bullet with the winner's three largest parts and the unattributed rest (empty: not ranked by attribution)."""
    carried = attribution_sentence(cls)
    att = cls.attribution
    if carried is None or att is None or cls.winner is None:
        return []
    out = [f"- **Primary mechanism**: **{cls.winner.value}**: {carried}, {cls.margin_text()}; rule score {score:.2f}."]
    for part in [p for p in att.parts if p.mechanism == cls.winner][:3]:
        cause = f"; cause seen in the trace: {'; '.join(part.cause)}" if part.cause else ""
        out.append(f"  - `{part.part}` ({part.kind}) {part.ms:+.3f} ms: {part.evidence}{cause}.")
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
