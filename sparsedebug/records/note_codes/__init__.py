"""Every note code, declared once with the typed values its note carries.

A note (``records.notes.Note``) is a code and a dict of values. This package says, for every code, which values
its note carries and of what type: a ``NoteFacts`` model per set of values, whose ``CODES`` names the codes that
carry exactly those values (a code is declared by one model only), in one module per area (``AREAS``). Where
several codes share a group of values (a sample comparison, dispatch causes, a version range ...), the group is a
base model of its own (``facts``).

What the declarations are used for:

* ``records.notes.note`` checks every note it builds against its code's model (``check_values``): an undeclared
  code, an unknown or missing value, or a value of the wrong type is a bug in sparsedebug (``InternalError``).
  Notes read back from a file are not checked (an older bundle may carry values since renamed).
* The ``Note`` JSON Schema (``sparsedebug schema ...``) lists each code's values schema (``values_schemas``).
* Each phrase in ``render.words`` reads only the values its code declares (tests/records/test_note_codes.py).

A value is a number, a flag, a name, code or path (``str``, or a ``Literal`` where the values are a closed set),
a list of names or of numbers, or None where the figure is not recorded: never a sentence. ``| None = None``
marks a value that some notes of the code leave out.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from sparsedebug.core.errors import InternalError
from sparsedebug.records.note_codes.facts import NoteFacts

# The modules that declare codes, one per area (``facts``: the groups of values several areas share). They define
# some 300 models, about a tenth of a second of start-up: imported on first use (``areas``), not with this package.
AREAS: tuple[str, ...] = ("facts", "classify", "core", "gate", "locate", "locate_findings", "mechanisms", "playbook", "signoff",
                          "sources", "stack", "targets")


@cache
def areas() -> tuple[ModuleType, ...]:
    """The area modules, imported."""
    return tuple(importlib.import_module(f"{__name__}.{name}") for name in AREAS)


def models() -> list[type[NoteFacts]]:
    """Every model the areas define, in the order they define them (shared groups included)."""
    return [obj for module in areas() for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, NoteFacts) and obj.__module__ == module.__name__]


@cache
def declared() -> dict[str, type[NoteFacts]]:
    """Every declared note code and its model; a code declared by two models is a bug."""
    table: dict[str, type[NoteFacts]] = {}
    for model in models():
        for code in model.__dict__.get("CODES", ()):
            if code in table:
                raise InternalError(f"note code {code!r} is declared twice ({table[code].__name__} and {model.__name__})")
            table[code] = model
    return table


def check_values(code: str, values: Mapping[str, object]) -> None:
    """Raise ``InternalError`` unless ``values`` are what ``code`` declares: every key declared, every required
    key given, every value of its declared type (notes carried flat inside, ``EMBEDS``, checked against their own code)."""
    model = declared().get(code)
    if model is None:
        raise InternalError(f"note code {code!r} is not declared in sparsedebug.records.note_codes")
    own = dict(values)
    for embed in model.EMBEDS:
        inner_code = own.pop(embed.code_key, None)
        inner = {key.removeprefix(embed.prefix): own.pop(key) for key in [k for k in own if k.startswith(embed.prefix)]}
        if inner_code is None and not inner:
            continue
        if not isinstance(inner_code, str):
            raise InternalError(
                f"note {code!r}: the note carried under {embed.prefix!r} has no code ({embed.code_key}={inner_code!r})"
            )
        check_values(inner_code, inner)
    try:
        model.model_validate(own)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise InternalError(f"note {code!r}: its values do not fit {model.__name__} ({problems})") from exc


def _untitled(schema: Any) -> Any:
    """A JSON Schema without pydantic's generated ``title`` keys (field names say as much)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def values_schema(model: type[NoteFacts]) -> dict[str, Any]:
    """The JSON Schema of a note's ``values`` under ``model``: its fields, and the embedded notes' keys."""
    schema: dict[str, Any] = _untitled(model.model_json_schema())
    if model.EMBEDS:
        schema.setdefault("properties", {}).update({e.code_key: {"type": ["string", "null"]} for e in model.EMBEDS})
        schema["patternProperties"] = {f"^{e.prefix.replace('.', '[.]')}": {} for e in model.EMBEDS}
    return schema


@cache
def values_schemas() -> list[dict[str, Any]]:
    """One JSON Schema rule per declaration: if a note's ``code`` is one of its codes, its ``values`` fit its schema."""
    return [
        {"if": {"properties": {"code": {"enum": list(model.CODES)}}, "required": ["code"]},
         "then": {"properties": {"values": values_schema(model)}}}
        for model in models() if model.__dict__.get("CODES")
    ]
