"""benchmarks/corpus.py: its independent busy/span, its crash detection and its subprocess runner."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT
from tests.support.tracegen import TraceSpec, generate, strip, write_doc, write_trace


def _corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_script", REPO_ROOT / "benchmarks" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_script"] = module
    spec.loader.exec_module(module)
    return module


corpus = _corpus()


def test_independent_union_matches_the_generator(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    truth = write_trace(path, TraceSpec(layers=4, iterations=2, streams=3))
    union = corpus.independent_union(path)
    assert union is not None
    busy, span, ops = union
    assert busy == pytest.approx(truth.busy_ms, rel=1e-12) and span == pytest.approx(truth.span_ms, rel=1e-12)
    assert ops == len(truth.gpu)
    bare = tmp_path / "bare.json"
    write_doc(bare, strip(generate(TraceSpec(layers=2, iterations=1))[0], "bare_array"))
    assert corpus.independent_union(bare) is not None
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}', encoding="utf-8")
    assert corpus.independent_union(empty) is None


def test_import_check_flags_a_disagreement(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    truth = write_trace(path, TraceSpec(layers=2, iterations=1))
    good = json.dumps({"summary": {"busy_ms": truth.busy_ms, "span_ms": truth.span_ms}})
    bad = json.dumps({"summary": {"busy_ms": truth.busy_ms * 1.01, "span_ms": truth.span_ms}})
    assert corpus.import_check(path, good)[1] is True
    text, ok = corpus.import_check(path, bad)
    assert not ok and "MISMATCH" in text


def test_rows_count_tracebacks_and_odd_exit_codes_as_crashes() -> None:
    row = corpus.Row
    rows = [row("a", "bisect", 0, False, 1.0, 50.0), row("a", "gate", 1, False, 1.0, 50.0), row("b", "bisect", 1, True, 2.0, 60.0), row("c", "x", -9, False, 9.0, 70.0)]
    assert [r.crashed for r in rows] == [False, False, True, True]
    line, ok = corpus.summary(rows)
    assert not ok and "2 crashed" in line
    assert corpus.render(rows).count("\n") == len(rows) + 1


def test_run_cli_reports_exit_code_and_its_own_peak_memory(tmp_path: Path) -> None:
    code, wall, peak, stdout, stderr = corpus.run_cli(["--version"], timeout=120)
    assert code == 0 and wall > 0 and 10 < peak < 500 and stdout.strip()
    code, _wall, _peak, _out, stderr = corpus.run_cli(["import", "trace", str(tmp_path / "missing.json")], timeout=120)
    assert code == 2 and "Traceback" not in stderr and "missing.json" in stderr
