"""Words for target-projection facts (break-even searches)."""

from __future__ import annotations

from sparsedebug.records.target import BreakEven, ForwardProjection, TokenRange
from sparsedebug.render.words.notes import say_all

_VERDICT_WORDS = {"sparse wins": "2:4 wins", "sparse loses": "2:4 loses", "uncertain here": "uncertain here"}


def token_range_words(r: TokenRange) -> str:
    """One token range and its verdict: ``2:4 wins 64-4096`` or ``uncertain here at 32``."""
    verdict = _VERDICT_WORDS[r.verdict]
    return f"{verdict} {r.first}-{r.last}" if r.first != r.last else f"{verdict} at {r.first}"


def break_even_note(row: BreakEven) -> str:
    """The break-even search as a clause: every token range by verdict, the launch mode, the central crossing.

    A row without ranges (no sparse figure on the target) keeps the projection's own note.
    """
    if not row.ranges:
        return say_all(row.notes) if row.notes else "no sparse figure on this target"
    mode = row.launch.replace("_", " ")
    parts = ", ".join(token_range_words(r) for r in row.ranges)
    note = f"tokens: {parts} ({mode}; a win or loss only where the speedup's 90% interval excludes 1.0)"
    if row.tokens_from is None and row.central_crossing is not None:
        note += f"; central estimate crosses 1.0 at {row.central_crossing} tokens (not a claim)"
    return note


def missing_forward_words(forward: ForwardProjection) -> str:
    """Why a projection has no whole-forward figure: how many layers have none, the first three named."""
    missing = forward.missing_layers
    if not missing:
        return "a layer has no figure"
    more = ", ..." if len(missing) > 3 else ""
    return f"{len(missing)} layer(s) have no figure ({', '.join(missing[:3])}{more})"
