"""Every note the package writes fits its phrase: read from the source, each ``note("code", name=...)`` call passes
every value its format phrase names, so a phrase that does not fit its values fails here, not in a user's run."""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass
from pathlib import Path

from sparsedebug.render.words.notes import phrases

PACKAGE = Path(__file__).resolve().parents[3] / "sparsedebug"


@dataclass(frozen=True)
class NoteCall:
    """One ``note(...)`` call in the package: where, which code, and the value names it passes."""

    where: str
    code: str
    names: frozenset[str]


def note_calls() -> list[NoteCall]:
    """Every ``note("literal.code", ...)`` call that names all its values (no ``**`` spread)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "note"):
                continue
            if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                continue
            if any(k.arg is None for k in node.keywords):
                continue
            names = frozenset(k.arg for k in node.keywords if k.arg is not None)
            out.append(NoteCall(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", node.args[0].value, names))
    return out


def format_fields(phrase: str) -> set[str]:
    """The value names a format phrase reads (``{share:.0%}`` reads ``share``)."""
    fields = set()
    for _, field, _, _ in string.Formatter().parse(phrase):
        if field:
            fields.add(field.split(".")[0].split("[")[0])
    return fields


def test_the_package_writes_notes_the_scan_can_read() -> None:
    calls = note_calls()
    assert len({c.code for c in calls}) > 200, "the scan no longer finds the package's note calls"


def test_every_note_call_passes_the_values_its_format_phrase_names() -> None:
    table = phrases()
    misfits = []
    for call in note_calls():
        phrase = table.get(call.code)
        if isinstance(phrase, str):
            missing = format_fields(phrase) - call.names
            if missing:
                misfits.append(f"{call.where} {call.code}: phrase reads {sorted(missing)}, call passes {sorted(call.names)}")
    assert misfits == [], "\n".join(misfits)


def test_every_code_a_note_call_writes_has_a_phrase() -> None:
    table = phrases()
    unphrased = sorted({f"{c.code} ({c.where})" for c in note_calls() if c.code not in table})
    assert unphrased == []


def test_a_misfit_is_found() -> None:
    """The check itself: a phrase reading a value the call does not pass is a misfit."""
    assert format_fields("{layer} took {ms:.3f} ms ({share:.0%} of {runs[0]})") == {"layer", "ms", "share", "runs"}
    assert format_fields("{layer} took {ms:.3f} ms") - {"layer"} == {"ms"}
