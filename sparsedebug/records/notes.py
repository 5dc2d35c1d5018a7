"""A fact that has no record of its own: a code and the figures and names it rests on.

A ``Note`` is what a record holds where it used to hold a sentence: ``code`` says which
fact it is (``"<area>.<what>"``, e.g. ``"gate.fallback_rate"``), ``values`` the numbers,
layer names, units and references the fact is about. Words are made in one place,
``sparsedebug.render.words.notes.say``, from one phrase per code; nothing outside
``render/`` and ``cli/`` turns a note into text.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ConfigDict, Field

from sparsedebug.records.base import Record
from sparsedebug.records.note_codes import check_values, values_schemas

# A value a note may carry: a number, a flag, a name or id (layer, file, unit, enum text), a list of names, or
# None when the figure is not recorded. Never a sentence.
NoteValue = float | int | bool | str | list[str] | list[float] | None


def _values_by_code(schema: dict[str, Any]) -> None:
    """The ``Note`` JSON Schema with each declared code's values schema (``records.note_codes``)."""
    schema["allOf"] = values_schemas()


class Note(Record):
    """One coded fact: which fact (``code``) and the figures and names it rests on (``values``).

    Built by ``note``, which checks the values against the code's declaration in ``records.note_codes``; read back
    from a file, it is taken as stored.
    """

    model_config = ConfigDict(json_schema_extra=_values_by_code)

    code: str = Field(description="Which fact: '<area>.<what>', e.g. 'gate.fallback_rate'; render.words.notes phrases each code.")
    values: dict[str, NoteValue] = Field(default_factory=dict, description="The numbers, names and ids the fact is about, by name.")


CHECK_NOTES_ENV = "SPARSEDEBUG_CHECK_NOTES"
"""Set to 1 (the test suite sets it), ``note`` checks every note's values against its code's declaration. Unset, it
skips the check and the declarations are never imported: about a tenth of a second off every command's start."""


def note(code: str, **values: NoteValue) -> Note:
    """Build a ``Note``: ``note("locate.layers_moved", count=3, layers=["fc1"])``; with ``CHECK_NOTES_ENV`` set, its
    values must fit the code's declaration in ``records.note_codes`` (else ``InternalError``: a bug in sparsedebug)."""
    if os.environ.get(CHECK_NOTES_ENV) == "1":
        check_values(code, values)
    return Note(code=code, values=values)


def embed(prefix: str, inner: Note | None) -> dict[str, NoteValue]:
    """``inner`` carried flat inside another note's values: its code as ``<prefix>_code`` and each value as
    ``<prefix>.<name>`` (empty for None); ``render.words.notes.embedded`` takes it back out."""
    if inner is None:
        return {}
    return {f"{prefix}_code": inner.code, **{f"{prefix}.{name}": value for name, value in inner.values.items()}}
