"""User-derived strings (paths, layer names, log names) are printed as written: never read as rich markup.

A name holding ``[/x]`` once raised rich's MarkupError (a traceback); one holding ``[bold]`` lost its brackets.
The commands below print paths and names from generated traces and logs in every terminal renderer they use.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, invoke
from tests.support.tracegen import TraceSpec, generate, layer_name, write_doc

BRACKETS = ("[/x]", "[bold]", "[red]a[/red]", "[link=x]")
"""Markup-like fragments: a stray closing tag, an opening tag, a balanced pair, a link."""


def _bracketed(doc: dict[str, Any], fragment: str) -> dict[str, Any]:
    """``doc`` with every annotated layer name prefixed by ``fragment``."""
    names = {layer_name(i) for i in range(12)}
    events = [{**e, "name": fragment + e["name"]} if e.get("name") in names else e for e in doc["traceEvents"]]
    return {**doc, "traceEvents": events}


def _clean(result_stdout: str, stderr: str) -> None:
    assert "Traceback" not in result_stdout + stderr and "MarkupError" not in result_stdout + stderr


@pytest.mark.parametrize("fragment", BRACKETS)
def test_bracketed_paths_and_layer_names_print_as_written(tmp_path: Path, fragment: str) -> None:
    folder = tmp_path / f"{fragment.replace('/', '')}[" / "y]"  # a file name cannot hold "/": the path does
    folder.mkdir(parents=True)
    base_doc, _ = generate(TraceSpec(layers=3, iterations=3, backward=False, optimizer=False, nccl=False))
    cand_doc, _ = generate(TraceSpec(layers=3, iterations=3, backward=False, optimizer=False, nccl=False, sparse_layers=frozenset({1}), seed=1))
    base, cand = folder / "base.json", folder / "cand.json"
    write_doc(base, _bracketed(base_doc, fragment))
    write_doc(cand, _bracketed(cand_doc, fragment))
    name = fragment + layer_name(1)
    for args, needles in (
        (["import", "trace", str(base)], [str(base), name]),
        (["fallbacks", str(base), str(cand)], [name]),
        (["bisect", str(base), str(cand)], [fragment + "layers."]),
        (["classify", str(cand), "--baseline", str(base)], [str(cand), fragment + "layers."]),
        (["gate", str(base), str(cand)], []),
    ):
        result = invoke([*args, "--wide"])  # names whole, not folded across lines
        _clean(result.stdout, result.stderr)
        assert result.exit_code in (0, 1), (args, result.exit_code, result.stderr, result.exception)
        flat = "".join((result.stdout + result.stderr).split())  # a title wraps at its spaces
        for needle in needles:
            assert "".join(needle.split()) in flat, (args, needle, result.stdout)


def test_clock_log_at_a_bracketed_path_covering_the_run(tmp_path: Path) -> None:
    """The issue's case: evidence text that quotes the log's path inside brackets, for a log that covers the run."""
    folder = tmp_path / "[" / "x]"
    folder.mkdir(parents=True)
    smi = folder / "smi.csv"
    shutil.copy(FIXTURES / "h200" / "nvidia_smi_short.csv", smi)
    trace = FIXTURES / "h200" / "trace_sparse_mlp_T2048_cudagraph.json.gz"
    result = invoke(["classify", str(trace), "--smi", str(smi), "--smi-utc-offset", "0"])
    _clean(result.stdout, result.stderr)
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert "dominant mechanism: thermal" in result.stdout
    assert f"[{smi}: 1 sample(s) in the run's window" in " ".join(result.stdout.split())
