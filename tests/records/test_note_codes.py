"""Every note code is declared once with typed values (``records.note_codes``): ``note`` refuses values that do not fit,
every code the package writes is declared, every declared code has a phrase that reads only its declared values, and
the ``Note`` JSON Schema carries each code's values schema."""

from __future__ import annotations

import ast
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path

import jsonschema
import pytest

from sparsedebug.core.errors import InternalError
from sparsedebug.records.note_codes import check_values, declared
from sparsedebug.records.note_codes.facts import Comparison, NoteFacts, embedded
from sparsedebug.records.notes import Note, NoteValue, embed, note
from sparsedebug.render.words.notes import phrases, say

PACKAGE = Path(__file__).resolve().parents[2] / "sparsedebug"

# A sample of each value type: a phrase must word any value of its declared type.
SAMPLE: dict[object, NoteValue] = {float: 1.5, int: 2, bool: True, str: "x", list[str]: ["a"], list[float]: [1.5]}


def _kinds(annotation: object) -> list[object]:
    """The non-None types a field annotation admits (``float | None`` -> ``[float]``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _sample(annotation: object) -> NoteValue:
    """A value of the annotation's first type: a ``Literal``'s first member, else ``SAMPLE``'s value."""
    kind = _kinds(annotation)[0]
    if typing.get_origin(kind) is typing.Literal:
        first: NoteValue = typing.get_args(kind)[0]
        return first
    if typing.get_origin(kind) is list and typing.get_origin(typing.get_args(kind)[0]) is typing.Literal:
        return [typing.get_args(typing.get_args(kind)[0])[0]]
    return SAMPLE[kind]


def samples(model: type[NoteFacts]) -> Iterator[dict[str, NoteValue]]:
    """Values for a note of ``model``: every field given; then every optional field left out and every field that may
    be None set to None."""
    yield {name: _sample(f.annotation) for name, f in model.model_fields.items()}
    yield {
        name: None if type(None) in typing.get_args(f.annotation) else _sample(f.annotation)
        for name, f in model.model_fields.items() if f.is_required()
    }


class Strict(Mapping[str, NoteValue]):
    """A note's values that fail the test when a phrase reads a value its code does not declare."""

    def __init__(self, code: str, values: dict[str, NoteValue]) -> None:
        self.code, self._values = code, values
        model = declared()[code]
        self.names = set(model.model_fields) | {e.code_key for e in model.EMBEDS}
        self.prefixes = tuple(e.prefix for e in model.EMBEDS)

    def _declared(self, key: object) -> bool:
        return isinstance(key, str) and (key in self.names or key.startswith(self.prefixes))

    def __getitem__(self, key: str) -> NoteValue:
        assert self._declared(key), f"the phrase of {self.code} reads {key!r}, which the code does not declare"
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        assert self._declared(key), f"the phrase of {self.code} asks for {key!r}, which the code does not declare"
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def test_every_phrase_code_is_declared_and_every_declared_code_has_a_phrase() -> None:
    assert sorted(set(phrases()) - set(declared())) == [], "phrased but not declared in records.note_codes"
    assert sorted(set(declared()) - set(phrases())) == [], "declared but without a phrase in render.words"


@pytest.mark.parametrize("code", sorted(declared()))
def test_each_phrase_words_typed_values_and_reads_only_declared_ones(code: str) -> None:
    model, phrase = declared()[code], phrases()[code]
    for i, values in enumerate(samples(model)):
        text = say(note(code, **values))
        assert (text or i > 0) and "{" not in text, (code, values, text)  # with nothing recorded a phrase may say nothing
        if callable(phrase):
            assert phrase(Strict(code, values)) == text


def test_note_refuses_values_that_do_not_fit_the_declaration() -> None:
    good: dict[str, NoteValue] = {"ratio": 1.2, "ci_low": None, "ci_high": 1.4, "base_p50": 1.0, "cand_p50": 1.2, "n_base": 5,
                                  "n_cand": 5, "enough": True}
    assert note("locate.kernel.busy", **good).values == good
    assert note("locate.kernel.busy", **{**good, "ratio": 2}).values["ratio"] == 2  # an int is a float
    for bad in ({**good, "ratio": "1.2"}, {**good, "n_base": 5.0}, {**good, "n_base": True}, {**good, "enough": 1},
                {**good, "shown": "fc1"}, {k: v for k, v in good.items() if k != "cand_p50"}):
        with pytest.raises(InternalError, match="locate.kernel.busy"):
            note("locate.kernel.busy", **bad)
    with pytest.raises(InternalError, match="not declared"):
        note("locate.no_such_fact")
    with pytest.raises(InternalError, match="locate.finding.layout"):
        note("locate.finding.layout", change=["a"])


def test_an_embedded_note_is_checked_against_its_own_code() -> None:
    inner = note("sources.smi_window.no_run_window", file="smi.csv")
    assert note("mechanisms.smi_unaligned", **embed("window", inner)).values == {"window_code": inner.code, "window.file": "smi.csv"}
    with pytest.raises(InternalError, match="sources.smi_window.no_run_window"):
        check_values("mechanisms.smi_unaligned", {"window_code": inner.code, "window.file": 3})
    with pytest.raises(InternalError, match="no code"):
        check_values("mechanisms.smi_unaligned", {"window.file": "smi.csv"})
    assert embedded("window").prefix == "window."


def test_a_note_read_back_from_a_file_is_not_checked() -> None:
    """An older bundle may carry values since renamed: reading it keeps them."""
    stored = Note.model_validate_json('{"code": "locate.kernel.busy", "values": {"old_name": "fc1"}}')
    assert stored.values == {"old_name": "fc1"}


def test_a_shared_group_of_values_is_declared_once() -> None:
    users = sorted(code for code, model in declared().items() if issubclass(model, Comparison))
    assert "locate.finding.slower" in users and "locate.outcome.latency" in users


# A note code: '<area>.<what>' in lower case (a file name, 'x.py', is not one).
CODE = re.compile(r"^[a-z]+(\.[a-z0-9_]+)+$")


def _literal_codes(node: ast.expr) -> Iterator[str]:
    """The str literals an expression can evaluate to: a constant, or either branch of ``a if c else b``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _literal_codes(node.body)
        yield from _literal_codes(node.orelse)


def package_note_calls() -> Iterator[tuple[str, str, set[str] | None]]:
    """Every ``note("code", ...)`` call outside render/ (also ``say("code", ...)`` in reduce, and ``note(name, ...)``
    where ``name = "..."`` or ``"a" if ... else "b"`` is assigned in the module): where, the code, and the value names
    passed (None with a ``**`` spread)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "render":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        # codes assigned to a name for a later note(name, ...): code = "a" if ... else "b", _COVERED = "..."
        assigned: dict[str, list[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and (codes := [c for c in _literal_codes(node.value) if CODE.match(c)]):
                        assigned.setdefault(target.id, []).extend(codes)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name not in ("note", "say", "_model_facts"):
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            names = None if any(k.arg is None for k in node.keywords) or name == "_model_facts" else {
                k.arg for k in node.keywords if k.arg is not None}
            first = node.args[0]
            codes = assigned.get(first.id, []) if isinstance(first, ast.Name) else list(_literal_codes(first))
            for code in codes:
                yield where, code, names


def test_every_note_code_the_package_writes_is_declared_with_the_values_it_passes() -> None:
    table = declared()
    calls = [(where, code, names) for where, code, names in package_note_calls() if CODE.match(code) and not code.endswith(".py")]
    assert len({code for _, code, _ in calls}) > 350, "the scan no longer finds the package's note calls"
    undeclared = sorted(f"{where} {code}" for where, code, _ in calls if code not in table)
    assert undeclared == [], "note codes written but not declared in records.note_codes"
    misfits = []
    for where, code, names in calls:
        if names is None or code not in table:
            continue
        model = table[code]
        embeds = tuple(e.prefix for e in model.EMBEDS) + tuple(e.code_key for e in model.EMBEDS)
        unknown = {n for n in names if n not in model.model_fields and not n.startswith(embeds)}
        missing = {n for n, f in model.model_fields.items() if f.is_required()} - names
        if unknown or missing:
            misfits.append(f"{where} {code}: passes undeclared {sorted(unknown)}, leaves out required {sorted(missing)}")
    assert misfits == [], "\n".join(misfits)


def test_the_note_schema_carries_each_codes_values_schema() -> None:
    schema = Note.model_json_schema()
    rules = schema["allOf"]
    covered = [code for rule in rules for code in rule["if"]["properties"]["code"]["enum"]]
    assert sorted(covered) == sorted(declared()), "each declared code in exactly one rule"
    busy = next(r["then"]["properties"]["values"] for r in rules if "locate.kernel.busy" in r["if"]["properties"]["code"]["enum"])
    assert busy["properties"]["ratio"] == {"type": "number"} and "ratio" in busy["required"]
    assert busy["additionalProperties"] is False
    fitting = json.loads(note("gate.p99_few_samples", n=5).model_dump_json())
    jsonschema.validate(fitting, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"code": "gate.p99_few_samples", "values": {"n": "five"}}, schema)
    smi = json.loads(note("mechanisms.smi_unaligned", **embed("window", note("sources.smi_window.no_run_window", file="a.csv"))).model_dump_json())
    jsonschema.validate(smi, schema)
