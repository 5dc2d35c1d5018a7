"""Records hold facts: every ``str`` field left in ``sparsedebug/records`` is listed with what it holds, and none of
them holds a sentence: read from the records of a built bundle, no field listed as a name or an id, and no note value
its code declares as a str, holds a sentence or a figure (``prose``).

A new ``str`` field fails this test until it is added to ``str_fields.txt`` with its kind: a name, id or path is
a fact; a sentence belongs in ``sparsedebug/render/words`` and the record should hold the code and figures.
"""

from __future__ import annotations

import pkgutil
import re
import typing
from importlib import import_module
from pathlib import Path

import pytest
from pydantic import BaseModel

import sparsedebug.records
from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.note_codes import declared
from sparsedebug.records.notes import Note
from sparsedebug.sources.bundle import load_bundle
from sparsedebug.sources.playbook import load_playbook
from tests.conftest import FIXTURES, invoke

LISTED = Path(__file__).with_name("str_fields.txt")
KINDS = {"name", "id", "path", "input", "debt"}

def _holds_str(annotation: object) -> bool:
    return annotation is str or any(_holds_str(arg) for arg in typing.get_args(annotation))


def str_fields() -> set[str]:
    """``module.Class.field`` of every record field whose type admits a ``str`` (``module`` relative to
    ``sparsedebug.records``: ``note_codes.gate`` for a module of a package)."""
    found = set()
    for info in pkgutil.walk_packages(sparsedebug.records.__path__, prefix="sparsedebug.records."):
        module = import_module(info.name)
        short = info.name.removeprefix("sparsedebug.records.")
        for name, obj in vars(module).items():
            if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                found |= {f"{short}.{name}.{field}" for field, spec in obj.model_fields.items() if _holds_str(spec.annotation)}
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


# --- the values of records in built bundles --------------------------------------------------------------------------

# A sentence: four or more space-separated tokens of which three or more are words ("no layer runs sparse here"); a
# name of a few words ("sentence-embedding cosine", "second half", "attention -> fp32_gemm") is not one.
_WORD = re.compile(r"^[A-Za-z][A-Za-z'-]*[,:;.]?$")
# A figure: a number with its unit ("3.2 ms", "1.234x", "12.5%", "12 layers"); a number inside a name ("fc1", "2:4",
# "T2048", "bert_128s", "sm_90", "layers.0.fc1") is not one.
_FIGURE = re.compile(
    r"(?<![\w.:/-])\d+(\.\d+)?(e[-+]?\d+)?\s?(ms|us|µs|ns|s|%|x|GB/s|GiB|GB|MiB|MB|KiB|KB|W|J|MHz|GHz|TFLOP/s|h)(?![\w/])"
    r"|(?<![\w.:/-])\d+(\.\d+)?\s(layers?|calls?|samples?|tokens?|kernels?|rounds?|iterations?|runs?)\b"
)


# A C++ symbol (a kernel's name: "void at::native::reduce_kernel<512, 1, ...>(...)") is a name, however many words.
_SYMBOL = re.compile(r"::|<[^<>]*>")


def prose(text: str) -> str | None:
    """Why ``text`` is a sentence or a figure rather than a name, id or code; None when it is neither."""
    if _SYMBOL.search(text):
        return None
    tokens = text.split()
    if len(tokens) >= 4 and sum(bool(_WORD.match(t)) for t in tokens) >= 3:
        return "a sentence"
    figure = _FIGURE.search(text)
    return f"a figure ({figure.group(0)!r})" if figure else None


def test_the_prose_predicate_tells_sentences_and_figures_from_names() -> None:
    for sentence in ("no layer runs sparse here", "the candidate carries no quality measurement", "took 3.2 ms",
                     "speedup 1.234x", "12 layers", "12.5% of kernel time", "widths / 2 change how the backend treats a shape"):
        assert prose(sentence), sentence
    for name in ("fc1", "layers.0.mlp.fc1", "2:4", "trace_dense_T2048.json.gz", "sentence-embedding cosine", "second half",
                 "attention -> fp32_gemm", "dense_tc_gemm", "sm_90", "bert_128s", "2026-12-07T23:30:20Z", "fallback:dtype_unsupported",
                 "NVIDIA H200", "torch 2.4.1", "cuda_graph", "eager", "baseline:dense", "pattern_not_compliant", "0x1f"):
        assert prose(name) is None, name


def _kind_of(kinds: dict[str, str], model: BaseModel, field: str) -> str | None:
    """The listed kind of ``model``'s ``field`` (its class's module and name in ``str_fields.txt``)."""
    module = type(model).__module__.removeprefix("sparsedebug.records.")
    return kinds.get(f"{module}.{type(model).__name__}.{field}")


def _strs(value: object) -> list[str]:
    """Every str in a field's value: itself, a list's items, a dict's keys and values."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strs(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strs(k), *_strs(v))]
    return []


# A problem: where, the str, why it is prose.
Problem = tuple[str, str, str]


def _note_problems(n: Note, kinds: dict[str, str], where: str) -> list[Problem]:
    """The str values of a note (and of the notes it carries flat) that are sentences or figures."""
    model = declared().get(n.code)
    if model is None:
        return [(where, n.code, "an undeclared note code")]
    values = dict(n.values)
    out = []
    for embed in model.EMBEDS:
        code = values.pop(embed.code_key, None)
        inner = {k.removeprefix(embed.prefix): values.pop(k) for k in [k for k in values if k.startswith(embed.prefix)]}
        if isinstance(code, str):
            out += _note_problems(Note(code=code, values=inner), kinds, f"{where}.{embed.prefix}")
    for key, value in values.items():
        kind = kinds.get(f"{model.__module__.removeprefix('sparsedebug.records.')}.{model.__name__}.{key}", "name")
        if kind in ("name", "id"):
            out += [(f"{where} {n.code}.{key}", s, why) for s in _strs(value) if (why := prose(s))]
    return out


def value_problems(record: object, kinds: dict[str, str], where: str) -> list[Problem]:
    """Every str a record holds, field by field (note values by their code's declaration), that is a sentence or a
    figure where its listed kind says a name or an id; fields listed as path, input or debt are not read."""
    if isinstance(record, Note):
        return _note_problems(record, kinds, where)
    if isinstance(record, (list, tuple)):
        return [p for i, r in enumerate(record) for p in value_problems(r, kinds, f"{where}[{i}]")]
    if isinstance(record, dict):
        return [p for k, r in record.items() for p in value_problems(r, kinds, f"{where}[{k!r}]")]
    if not isinstance(record, BaseModel):
        return []
    out = []
    for field in type(record).model_fields:
        value = getattr(record, field)
        kind = _kind_of(kinds, record, field)
        if kind in ("name", "id"):
            out += [(f"{where}.{field}", s, why) for s in _strs(value) if (why := prose(s))]
        out += value_problems(value, kinds, f"{where}.{field}")
    return out


@pytest.fixture(scope="module")
def trace_pair_bundle(tmp_path_factory: pytest.TempPathFactory) -> LoadedBundle:
    """The bundle of one H200 trace pair (a 2:4 MLP against its dense model), walked without the reducer."""
    out = tmp_path_factory.mktemp("bundle") / "b"
    result = invoke(["playbook", "run", "--baseline", str(FIXTURES / "h200" / "trace_dense_T2048.json.gz"), "--candidate",
                     str(FIXTURES / "h200" / "trace_sparse_mlp_T2048.json.gz"), "--no-reduce", "-o", str(out)])
    assert result.exit_code == 0, result.stdout + result.stderr
    return load_bundle(out)


def _playbook_words() -> set[str]:
    """Every str of the playbook the bundle was walked with: its owners, titles and steps are input, people's words."""
    texts: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, BaseModel):
            for field in type(value).model_fields:
                walk(getattr(value, field))
        elif isinstance(value, (list, tuple, dict)):
            texts.update(_strs(value))
            for item in value.values() if isinstance(value, dict) else value:
                walk(item)
        elif isinstance(value, str):
            texts.add(value)

    walk(load_playbook())
    return texts


def test_no_record_of_a_built_bundle_holds_a_sentence_or_a_figure_as_text(trace_pair_bundle: LoadedBundle) -> None:
    kinds, quoted = listed(), _playbook_words()
    problems = [f"{where} = {text!r}: {why}" for field in type(trace_pair_bundle).model_fields if field != "root"
                for where, text, why in value_problems(getattr(trace_pair_bundle, field), kinds, field) if text not in quoted]
    assert problems == [], "\n".join(problems)


def test_the_walk_finds_a_sentence_in_a_note_and_in_a_field() -> None:
    kinds = listed()
    assert value_problems(Note(code="locate.finding.layout", values={"change": "the layout was changed here"}), kinds, "n")
    assert value_problems(Note(code="gate.layer_error", values={"layer": "fc1", "precision": "3.2 ms"}), kinds, "n")
    assert not value_problems(Note(code="gate.layer_error", values={"layer": "layers.0.fc1", "precision": "fp16"}), kinds, "n")
