"""The importer registry: one table of input kinds; no comparison on a kind's value anywhere else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sparsedebug.core.errors import InternalError, UserError
from sparsedebug.sources import registry
from sparsedebug.sources.detect import describe_input, detect_kind
from tests.conftest import FIXTURES, REPO_ROOT
from tests.support.engines import GRAPH

PACKAGE = REPO_ROOT / "sparsedebug"
ALLOWED = {PACKAGE / "sources" / "registry.py"}


def _kind_names() -> set[str]:
    names = set(registry.kind_names())
    names |= {k.source for k in registry.input_kinds() if k.source is not None}
    return names


def _compares_a_kind(node: ast.Compare, names: set[str]) -> bool:
    """``x.kind == "trace"``, ``kinds[role] != "workload"``, ``kind in ("run", "trace")``: a kind's value compared."""
    operands = [node.left, *node.comparators]
    literals: list[str] = []
    others: list[ast.expr] = []
    for operand in operands:
        if isinstance(operand, ast.Constant) and isinstance(operand.value, str):
            literals.append(operand.value)
        elif isinstance(operand, ast.Tuple | ast.List | ast.Set) and all(isinstance(e, ast.Constant) for e in operand.elts):
            literals += [e.value for e in operand.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        else:
            others.append(operand)
    return any(value in names for value in literals) and any("kind" in ast.unparse(o).lower() for o in others)


def test_no_comparison_on_a_kinds_value_outside_the_registry() -> None:
    names = _kind_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare) and _compares_a_kind(node, names):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "ask sources.registry (capabilities, input_kind) instead:\n" + "\n".join(found)


def test_the_ast_check_catches_what_it_is_for() -> None:
    names = _kind_names()
    for text in ('run.source.kind == "torch_trace"', 'kinds[role] != "workload"', 'kind in ("run", "trace")'):
        node = ast.parse(text, mode="eval").body
        assert isinstance(node, ast.Compare) and _compares_a_kind(node, names), text
    node = ast.parse('layer.op == "linear"', mode="eval").body
    assert isinstance(node, ast.Compare) and not _compares_a_kind(node, names)


def test_every_importer_has_a_sniff_a_loader_and_capabilities() -> None:
    for kind in registry.importers():
        assert kind.sniff is not None and kind.load is not None and kind.capabilities is not None and kind.source is not None
        assert registry.importer(kind.command or "") is kind
    assert {k.name for k in registry.importers()} >= {"trace", "trt_engine"}


def test_detection_by_content() -> None:
    assert detect_kind(GRAPH) == "trt_engine"
    assert detect_kind(FIXTURES / "h200" / "trace_dense_T2048.json.gz") == "trace"
    assert describe_input(GRAPH) == f"import {GRAPH.name}"


def test_capabilities_of_each_source() -> None:
    assert registry.source_capabilities("replay").replayed
    engine = registry.source_capabilities("trt_engine")
    assert engine.accelerator and engine.layers and not engine.timeline and not engine.absolute_time
    trace = registry.source_capabilities("torch_trace")
    assert trace.timeline and trace.absolute_time and trace.reproducer
    with pytest.raises(UserError, match="source.kind 'nope'"):
        registry.source_capabilities("nope")


def test_a_kind_registered_twice_is_our_bug() -> None:
    with pytest.raises(InternalError):
        registry.register(registry.input_kind("trace"))


def test_a_folder_of_engine_exports_is_one_run_not_a_run_set(tmp_path: Path) -> None:
    from sparsedebug.sources.runset.discover import is_run_set

    (tmp_path / "e.graph.json").write_text(GRAPH.read_text())
    assert detect_kind(tmp_path) == "trt_engine" and not is_run_set(str(tmp_path))
    other = tmp_path / "traces"
    other.mkdir()
    assert is_run_set(str(other))
