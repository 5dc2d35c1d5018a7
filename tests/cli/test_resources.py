"""Requests this machine cannot do are refused before anything is allocated: one line, exit 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from sparsedebug.sources.workload.schema import save_workload
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.builders import llama_stack, mlp_chain
from tests.support.proc import run_cli

SMALL = FIXTURES / "workloads" / "planted" / "base.yaml"


@pytest.fixture
def long_attention(tmp_path: Path) -> Path:
    """Within the schema's bounds, far beyond memory: a million-token sequence through attention."""
    path = tmp_path / "long.yaml"
    save_workload(llama_stack("long", blocks=1, hidden=64, ffn=128, heads=4, sequence=1_048_576, repeats=3), path)
    return path


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    path = tmp_path / "wide.yaml"
    save_workload(mlp_chain("wide", [1_048_576, 1_048_576], sequence=4, repeats=3), path)
    return path


def _one_line(stderr: str) -> str:
    """The one error line (progress lines such as 'reading X' may precede it)."""
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("command", ["replay", "lower", "bisect", "gate", "classify", "reduce", "playbook"])
def test_every_command_refuses_what_memory_cannot_hold(command: str, long_attention: Path, tmp_path: Path) -> None:
    args = {
        "replay": ["replay", str(long_attention), "-o", str(tmp_path / "run.json")],
        "lower": ["lower", str(long_attention)],
        "bisect": ["bisect", str(SMALL), str(long_attention)],
        "gate": ["gate", str(SMALL), str(long_attention)],
        "classify": ["classify", str(long_attention)],
        "reduce": ["reduce", str(SMALL), str(long_attention), "-o", str(tmp_path / "repro.yaml")],
        "playbook": ["playbook", "run", "--baseline", str(SMALL), "--candidate", str(long_attention), "-o", str(tmp_path / "b")],
    }[command]
    start = time.monotonic()
    result = invoke(args)
    assert time.monotonic() - start < 30
    assert_clean_error(result, 2, "needs about", "of memory, more than half of the")
    line = _one_line(result.stderr)
    assert "tokens 1x1048576" in line and "use fewer tokens or narrower layers" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.yaml"]  # nothing written


def test_a_layer_too_wide_for_memory_is_refused(wide: Path) -> None:
    result = run_cli(["replay", str(wide)])
    assert result.returncode == 2, result.stderr
    assert "needs about" in _one_line(result.stderr) and "TiB of memory" in result.stderr


def test_schema_bounds(tmp_path: Path) -> None:
    data = yaml.safe_load(SMALL.read_text())
    for field, value, needle in (
        (("tokens", "sequence"), 1_000_000_000_000, "tokens.sequence: Input should be less than or equal to 1048576"),
        (("repeats",), 10_001, "repeats: Input should be less than or equal to 10000"),
        (("layers", 0, "shape"), [2_000_000, 128], "dimensions must be at most 1048576"),
    ):
        bad = yaml.safe_load(yaml.safe_dump(data))
        target = bad
        for key in field[:-1]:
            target = target[key]
        target[field[-1]] = value
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(bad))
        assert_clean_error(invoke(["replay", str(path)]), 2, needle)


@pytest.mark.parametrize(
    "args",
    [
        ["replay", str(SMALL), "--repeats", "99999999999999999999"],
        ["bisect", str(SMALL), str(SMALL), "--repeats", "10001"],
        ["gate", str(SMALL), str(SMALL), "--repeats", "10001"],
        ["playbook", "run", "--repeats", "10001"],
        ["reduce", str(SMALL), str(SMALL), "--probe-repeats", "10001"],
        ["bench", "kernel", "--rounds", "10001"],
    ],
)
def test_counts_have_upper_bounds_on_the_command_line(args: list[str]) -> None:
    result = run_cli(args, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Invalid value for" in result.stderr


def test_time_beyond_the_limit_is_refused_with_the_estimate() -> None:
    result = run_cli(["replay", str(SMALL), "--repeats", "10000"], env={"SPARSEDEBUG_MAX_SECONDS": "0.5"})
    assert result.returncode == 2, result.stderr
    line = _one_line(result.stderr)
    assert "needs at least" in line and "GFLOP/s" in line and "more than the 0.5 s limit (SPARSEDEBUG_MAX_SECONDS)" in line


def test_memory_limit_can_be_set_and_is_checked(tmp_path: Path) -> None:
    result = run_cli(["replay", str(SMALL)], env={"SPARSEDEBUG_MAX_MEMORY_GB": "0.0001"})
    assert result.returncode == 2
    assert "more than the 0.0001 GiB limit (SPARSEDEBUG_MAX_MEMORY_GB)" in _one_line(result.stderr)
    bad = run_cli(["replay", str(SMALL)], env={"SPARSEDEBUG_MAX_MEMORY_GB": "lots"})
    assert bad.returncode == 2 and "SPARSEDEBUG_MAX_MEMORY_GB='lots': expected a positive number" in bad.stderr


def test_bench_refuses_a_shape_beyond_memory() -> None:
    result = invoke(["bench", "kernel", "--shape", "1000000x1000000", "--tokens", "1"])
    assert_clean_error(result, 2, "bench kernel 1000000x1000000", "of memory, more than half of the")
