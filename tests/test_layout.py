"""The code's shape: no import cycle between modules (grimp's graph, every import counted; the package order
itself is import-linter's contracts in pyproject.toml, run by .ci/run), modules under 500 lines, functions under 80,
every pydantic model on the one Record base, and `lint-imports` keeping every contract."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sparsedebug"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
NOT_RECORDS = {"LoadedBundle"}
"""In-memory views that are never written to a file (a bundle read back, with a Path root)."""


def _import_graph() -> dict[str, set[str]]:
    """Every module's imports inside the package, as grimp reads them: function-level and TYPE_CHECKING ones included."""
    import grimp

    graph = grimp.build_graph("sparsedebug", include_external_packages=False, exclude_type_checking_imports=False)
    return {module: set(graph.find_modules_directly_imported_by(module)) - {module} for module in graph.modules}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or around a circle, counting every import."""
    assert _cycles(_import_graph()) == []


def test_cycle_finder_finds_a_planted_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_modules_and_functions_stay_small() -> None:
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(PACKAGE)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, too_long


def test_every_pydantic_model_derives_from_record() -> None:
    direct = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "BaseModel" for b in node.bases):
                if not (path.name == "base.py" and node.name == "Record") and node.name not in NOT_RECORDS:
                    direct.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert not direct, direct


def test_import_contracts_are_kept() -> None:
    """`lint-imports` (import-linter, configured in pyproject.toml) keeps every contract."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    command = "import sys; from importlinter.cli import lint_imports_command; sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()"
    done = subprocess.run([sys.executable, "-c", command], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def _marked_slow(node: ast.AST) -> bool:
    return "mark.slow" in ast.unparse(node)


def test_every_test_module_keeps_tests_in_the_default_run() -> None:
    """``slow`` tests leave the default ``pytest -q`` (``.ci/run`` runs them apart); no module leaves it whole."""
    tests = Path(__file__).resolve().parent
    emptied = []
    for path in sorted(tests.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        module_mark = any(
            isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets) and _marked_slow(node.value)
            for node in tree.body
        )
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
        default = [f for f in functions if not any(_marked_slow(d) for d in f.decorator_list)]
        if functions and (module_mark or not default):
            emptied.append(str(path.relative_to(tests)))
    assert not emptied, emptied
