"""benchmarks/results.py: each benchmark replaces its own section of the results file, with its conditions."""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _results() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_results", REPO_ROOT / "benchmarks" / "results.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_results"] = module
    spec.loader.exec_module(module)
    return module


def test_a_section_names_its_command_date_machine_and_load() -> None:
    results = _results()
    text = results.section("startup.py", "python benchmarks/startup.py", "ratio 1.0\n", datetime(2026, 12, 3, 8, 30, tzinfo=timezone.utc),
                           "0.10 / 0.20 / 0.30")
    assert text.startswith("## `benchmarks/startup.py`")
    for line in ("- command: `python benchmarks/startup.py`", "- date: 2026-12-03 08:30 UTC", "- machine: ",
                 "- load average (1 / 5 / 15 min): 0.10 / 0.20 / 0.30 before, ", "```text\nratio 1.0\n```"):
        assert line in text, line


def test_writing_a_section_replaces_only_that_benchmark(tmp_path: Path) -> None:
    results = _results()
    target = tmp_path / "results.md"
    results.write_section(target, "startup.py", "## `benchmarks/startup.py`\n\nfirst\n")
    results.write_section(target, "forward.py", "## `benchmarks/forward.py`\n\nforward\n")
    results.write_section(target, "startup.py", "## `benchmarks/startup.py`\n\nsecond\n")
    text = target.read_text()
    assert text.startswith(results.HEADER.rstrip("\n"))
    assert "first" not in text and text.count("second") == 1 and text.count("forward\n") == 1
    assert text.index("benchmarks/forward.py") < text.index("benchmarks/startup.py")  # sections in name order
    assert not list(tmp_path.glob("*.partial"))


def test_the_shipped_file_keeps_its_header_and_every_section_says_its_conditions() -> None:
    results = _results()
    text = results.RESULTS.read_text()
    assert text.startswith(results.HEADER.rstrip("\n"))
    sections = results.SECTION.findall(text)
    assert sections, "no benchmark has written its section"
    for name in sections:
        assert (REPO_ROOT / "benchmarks" / name).is_file(), name
    assert text.count("- command: ") == text.count("- date: ") == text.count("- load average") == len(sections)


def test_a_failing_benchmark_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _results()
    target = tmp_path / "results.md"
    monkeypatch.setenv("SPARSEDEBUG_BENCH_RESULTS", str(target))
    with pytest.raises(SystemExit):
        results.record(lambda: 3)
    with pytest.raises(RuntimeError):
        results.record(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    assert not target.exists()
    results.record(lambda: print("ratio 1.0"))
    assert "ratio 1.0" in target.read_text()
