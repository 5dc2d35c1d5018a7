"""Words for notes: one phrase per note code, and ``say`` that words a note.

Each area keeps its phrases in its own module of this package (``PHRASES``: code to a
``str.format`` template over the note's values, or a function of the values). ``say``
looks the code up; a code without a phrase is a bug in sparsedebug, not bad input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cache
from importlib import import_module
from typing import Union

from sparsedebug.core.errors import InternalError
from sparsedebug.records.notes import Note, NoteValue

Phrase = Union[str, Callable[[Mapping[str, NoteValue]], str]]

# The modules of this package that hold a PHRASES table, one per area.
AREAS = ("classify", "mechanisms", "locate", "gate", "signoff", "sources", "targets", "core")


@cache
def phrases() -> dict[str, Phrase]:
    """Every phrase by note code, over all areas; a code defined twice is a bug."""
    table: dict[str, Phrase] = {}
    for area in AREAS:
        module = import_module(f"sparsedebug.render.words.{area}")
        for code, phrase in module.PHRASES.items():
            if code in table:
                raise InternalError(f"note code {code!r} has two phrases (render.words.{area} and another area)")
            table[code] = phrase
    return table


def _shown(value: NoteValue) -> NoteValue:
    """A value as a template reads it: a list of names joined with commas, None as 'not recorded'."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if value is None:
        return "not recorded"
    return value


def as_float(value: NoteValue, missing: float = math.nan) -> float:
    """A note's figure as a float; ``missing`` when it is not recorded (None, a name, a list)."""
    return float(value) if isinstance(value, (int, float)) else missing


def figure(values: Mapping[str, NoteValue], key: str, missing: float = 0.0) -> float:
    """The note's figure ``key`` as a float; ``missing`` when it is not recorded."""
    return as_float(values.get(key), missing)


def as_names(value: NoteValue) -> list[str]:
    """A note's list value as names (empty when it holds no list)."""
    return [str(x) for x in value] if isinstance(value, list) else []


def as_floats(value: NoteValue) -> list[float]:
    """A note's list value as figures (empty when it holds no list)."""
    return [float(x) for x in value] if isinstance(value, list) else []


def say(n: Note) -> str:
    """The note in words, from its code's phrase."""
    phrase = phrases().get(n.code)
    if phrase is None:
        raise InternalError(f"note code {n.code!r} has no phrase in sparsedebug.render.words")
    if callable(phrase):
        return phrase(n.values)
    try:
        return phrase.format(**{k: _shown(v) for k, v in n.values.items()})
    except (KeyError, IndexError, ValueError) as exc:
        raise InternalError(f"note {n.code!r}: its phrase does not fit its values {sorted(n.values)} ({exc})") from exc


def embedded(values: Mapping[str, NoteValue], prefix: str) -> Note | None:
    """The note carried flat in ``values`` under ``prefix`` (``records.notes.embed``); None when none is."""
    code = values.get(f"{prefix}_code")
    if not code:
        return None
    return Note(code=str(code), values={k.removeprefix(f"{prefix}."): v for k, v in values.items() if k.startswith(f"{prefix}.")})


def say_all(notes: list[Note], sep: str = "; ") -> str:
    """Several notes as one clause list."""
    return sep.join(say(n) for n in notes)

