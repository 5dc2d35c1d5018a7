"""The memo's verdict sentences from the attribution record: what the winning mechanism carries, and its parts."""

from __future__ import annotations

from sparsedebug.records.classification import Classification


def attribution_sentence(cls: Classification) -> str | None:
    """``mechanism M carries X ms of the +Y ms change (Z%)`` for the winner, when it was ranked by attribution."""
    if cls.ranked_by != "attribution" or cls.attribution is None or cls.winner is None:
        return None
    share = cls.attribution.share_of(cls.winner)
    if share is None:
        return None
    pct = f" ({share.share:.0%})" if share.share is not None else ""
    return f"mechanism {cls.winner.value} carries {share.ms:.3f} ms of the {cls.attribution.delta_ms:+.3f} ms change{pct}"


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
        out.append(f"  - Not attributed to any mechanism: {att.unattributed_ms:+.3f} ms of the change.")
    return out
