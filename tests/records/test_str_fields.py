"""Records hold facts: every ``str`` field left in ``sparsedebug/records`` is listed with what it holds, and none of
them holds a sentence.

A new ``str`` field fails this test until it is added to ``str_fields.txt`` with its kind: a name, id or path is
a fact; a sentence belongs in ``sparsedebug/render/words`` and the record should hold the code and figures.
"""

from __future__ import annotations

import pkgutil
import typing
from importlib import import_module
from pathlib import Path

from pydantic import BaseModel

import sparsedebug.records

LISTED = Path(__file__).with_name("str_fields.txt")
KINDS = {"name", "id", "path", "input", "debt"}

def _holds_str(annotation: object) -> bool:
    return annotation is str or any(_holds_str(arg) for arg in typing.get_args(annotation))


def str_fields() -> set[str]:
    """``module.Class.field`` of every record field whose type admits a ``str``."""
    found = set()
    for info in pkgutil.iter_modules(sparsedebug.records.__path__):
        module = import_module(f"sparsedebug.records.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                found |= {f"{info.name}.{name}.{field}" for field, spec in obj.model_fields.items() if _holds_str(spec.annotation)}
    return found


def listed() -> dict[str, str]:
    """The committed list: field to kind."""
    rows = [line.split() for line in LISTED.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return {field: kind for field, kind in rows}


def test_every_str_field_is_listed_with_its_kind() -> None:
    table = listed()
    assert set(table.values()) <= KINDS
    actual = str_fields()
    assert sorted(actual - set(table)) == [], "new str fields: list them in str_fields.txt (or give the record facts)"
    assert sorted(set(table) - actual) == [], "fields gone: remove them from str_fields.txt"


def test_the_field_walk_finds_str_in_unions_and_containers() -> None:
    assert _holds_str(str | None) and _holds_str(list[str]) and _holds_str(dict[str, float]) and not _holds_str(float | None)
