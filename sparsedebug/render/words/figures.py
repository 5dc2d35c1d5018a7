"""A figure of the review document as printed: its unit decides the precision (``num``), and a headline figure's
words (``headline``); the memo formats, the report, the page, the terminal and the gate outputs share them."""

from __future__ import annotations

from sparsedebug.records.memo import Figure

SIGNED = frozenset({"change_ms", "change"})
"""Quantities printed with their sign: changes."""


def num(f: Figure | None) -> str:
    """A figure as printed: its unit decides the precision; changes carry their sign; projected figures are marked."""
    if f is None:
        return "n/a"
    v = f.value
    signed = f.quantity in SIGNED
    if f.unit == "ms":
        text = f"{v:+.3f} ms" if signed else f"{v:.3f} ms"
    elif f.unit == "x":
        text = f"{v:.3f}x"
    elif f.unit == "share":
        text = f"{100 * v:+.1f}%" if signed else f"{100 * v:.0f}%"
    elif f.unit == "count":
        text = f"{int(round(v))}"
    elif f.unit == "cosine":
        text = f"{v:.4f}"
    elif f.unit == "p":
        text = f"p={v:.2g}"
    elif f.unit == "perplexity":
        text = f"{v:.3f}"
    elif f.unit == "joules":
        text = f"{v:.4g} J"
    elif f.unit == "watts":
        text = f"{v:.0f} W"
    else:
        text = f"{v:.3f}"
    return text + (" [projected]" if f.clock == "projected" else "")


HEADLINE_WORDS: dict[str, str] = {"speedup_p50": "speedup over the baseline (p50)"}
"""What each headline figure of the review document measures, in words."""

PAIRED_HEADLINE_WORDS: dict[str, str] = {"speedup_p50": "speedup over the baseline (median over paired rounds)"}
"""The same, for a figure estimated round against round (basis ``paired_rounds``): not one p50 over another."""

SPEEDUP_BASIS_WORDS: dict[str, str] = {"paired_rounds": "median over paired rounds", "per_forward": "p50 over p50"}
"""What a speedup is taken over, in words (``signoff.metrics.speedup_basis``)."""


def speedup_basis_words(f: Figure) -> str:
    """``median over paired rounds`` or ``p50 over p50``: how the speedup figure ``f`` was estimated."""
    return SPEEDUP_BASIS_WORDS.get(f.basis or "per_forward", SPEEDUP_BASIS_WORDS["per_forward"])


def headline(f: Figure) -> str:
    """One headline figure: what it measures, whose it is, its value and its clock."""
    whose = f", {f.role} run" if f.role else ""
    clock = f" ({f.clock} clock)" if f.clock else ""
    words = PAIRED_HEADLINE_WORDS.get(f.quantity) if f.basis == "paired_rounds" else None
    return f"{words or HEADLINE_WORDS[f.quantity]}{whose}: {num(f)}{clock}"
