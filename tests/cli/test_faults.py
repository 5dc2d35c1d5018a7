"""Faults a new user hit (issue 43), each through the CLI on inputs built here: one line and exit 2, or the right verdict.

Odd numbers in a trace or an option, a binary file among traces, a cut checkpoint, an output
folder that cannot be made, a trace whose kernels were all dropped, a run with no latency, a
fixed run of another model, a gate on separately recorded runs, and a walk under ``ulimit -v``.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sparsedebug.core.io import save_record
from sparsedebug.records.findings import StageFinding
from sparsedebug.render.words.locate_text import stage_text
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.proc import ENV
from tests.support.synth import dense_run, sparse_run
from tests.support.tracegen import TraceSpec, generate, write_doc, write_trace


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _one_error(stderr: str) -> str:
    lines = _error_lines(stderr)
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture(scope="module")
def trace_doc() -> dict[str, Any]:
    doc, _ = generate(TraceSpec(iterations=4))
    return doc


def _with_kernels(doc: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    for event in out["traceEvents"]:
        if event.get("cat") == "kernel":
            event[field] = value(event[field]) if callable(value) else value
    return out


# --------------------------------------------------------------------------- odd numbers: a named check, one line


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [("dur", float("nan"), "dur (us) nan"), ("dur", 1e30, "dur (us) 1e+30"), ("dur", float("inf"), "dur (us) inf"),
     ("ts", float("nan"), "ts (us) nan"), ("ts", 1e30, "ts (us) 1e+30")],
)
def test_a_trace_number_no_profiler_writes_is_refused_by_name(
    trace_doc: dict[str, Any], tmp_path: Path, field: str, value: float, shown: str
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(_with_kernels(trace_doc, field, value)))  # json writes NaN / Infinity bare, as a lax writer does
    result = invoke(["import", "trace", str(path), "-o", str(tmp_path / "run.json")])
    assert_clean_error(result, 2, f"{path}: kernel event", shown, "expected a finite number of microseconds between")
    assert len(_error_lines(result.stderr)) == 1
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e30", "15"])
@pytest.mark.parametrize("command", ["classify", "playbook"])
def test_smi_utc_offset_is_bounded_before_any_work(command: str, value: str, trace_doc: dict[str, Any], tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    write_doc(trace, trace_doc)
    args = {
        "classify": ["classify", str(trace), "--smi-utc-offset", value],
        "playbook": ["playbook", "run", "--baseline", str(trace), "--candidate", str(trace), "--smi-utc-offset", value,
                     "-o", str(tmp_path / "bundle")],
    }[command]
    result = invoke(args)
    assert_clean_error(result, 2, "--smi-utc-offset", "expected a finite number of hours between -14 and 14")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]  # no bundle, no partial folder


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [(1, " nan", "column 'temperature.gpu': nan: expected a finite number of degrees C"),
     (2, " 1e30 MHz", "column 'clocks.current.sm [MHz]': 1e+30: expected a finite number of MHz"),
     (5, " -3 %", "column 'utilization.gpu [%]': -3: expected a finite number of percent between 0 and 100"),
     (7, " -5", "clock event reasons '-5' is not a 64-bit bitmask")],  # before: decoding a negative mask never ended
)
def test_every_number_of_an_smi_log_is_bounded(tmp_path: Path, column: int, value: str, needle: str) -> None:
    lines = (FIXTURES / "h200" / "nvidia_smi_short.csv").read_text().splitlines()
    rows = [lines[0]] + [",".join([*row.split(",")[:column], value, *row.split(",")[column + 1:]]) for row in lines[1:]]
    path = tmp_path / "smi.csv"
    path.write_text("\n".join(rows) + "\n")
    result = invoke(["import", "smi", str(path)])
    assert_clean_error(result, 2, f"{path}: line 2", needle)


@pytest.mark.parametrize(("value", "shown"), [("nan", "nan"), ("inf", "inf"), ("1e30", "1e+27"), ("-5", "-0.005")])
def test_every_metric_an_ncu_import_reads_is_bounded(tmp_path: Path, value: str, shown: str) -> None:
    import csv
    import io

    lines = (FIXTURES / "h200" / "ncu_dense_vs_sparse_11008x4096x2048.csv").read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("".join(lines[start:]))))
    column = rows[0].index("Metric Value")
    for row in rows[1:]:
        row[column] = value
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    path = tmp_path / "ncu.csv"
    path.write_text("".join(lines[:start]) + out.getvalue())
    result = invoke(["import", "ncu", str(path)])
    assert_clean_error(result, 2, f"{path}: kernel 0", f"Duration {shown}: expected a finite number of us")


@pytest.mark.parametrize(
    ("name", "body", "needle"),
    [("zeus.csv", "start_time,window_name,elapsed_time,gpu0_energy\n1796119200.5,forward,2.0,1e30\n",
      "line 2, column 'gpu0_energy': 1e+30: expected a finite number between 0 and 1e+18"),
     ("smi.csv", "timestamp, power.draw [W]\n2026/12/01 10:00:00.000, 1e30 W\n",
      "line 2, column 'power.draw [W]': 1e+30: expected a finite number between 0 and 1e+18"),
     ("m.prom", 'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 5e18 1796119200000\n',  # from 9.2e18 on, DCGM's blank
      "line 1, metric DCGM_FI_DEV_POWER_USAGE: value 5e+18: expected a finite number between 0 and 1e+18")],
)
def test_a_power_reading_beyond_any_log_is_refused(tmp_path: Path, name: str, body: str, needle: str) -> None:
    path = tmp_path / name
    path.write_text(body)
    assert_clean_error(invoke(["import", "power", str(path)]), 2, f"{path}: {needle}")


def test_damping_refuses_infinity() -> None:
    result = invoke(["quality", "study", "--damping", "inf"])
    assert result.exit_code == 2 and "Invalid value for '--damping'" in result.stderr


# --------------------------------------------------------------------------- odd files


def test_a_binary_file_among_traces_is_named(trace_doc: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    write_doc(folder / "rank0.json", trace_doc)
    (folder / "rank1.json").write_bytes(bytes(range(256)) * 8)
    result = invoke(["import", "trace", str(folder)])
    assert_clean_error(result, 2, "rank1.json: not a profiler trace (byte 128 is not UTF-8 text)")
    assert len(_error_lines(result.stderr)) == 1


def test_a_gzip_that_is_not_gzip_among_traces_is_named(trace_doc: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    write_doc(folder / "rank0.json", trace_doc)
    whole = folder / "whole.json.gz"
    write_doc(whole, trace_doc)
    (folder / "rank1.json.gz").write_bytes(whole.read_bytes()[:40])  # gzip's header, then cut
    whole.unlink()
    result = invoke(["import", "trace", str(folder)])
    assert_clean_error(result, 2, "rank1.json.gz:")
    assert len(_error_lines(result.stderr)) == 1


@pytest.fixture
def checkpoint(tmp_path: Path) -> bytes:
    from safetensors.numpy import save_file

    path = tmp_path / "whole.safetensors"
    save_file({"a.weight": np.ones((64, 64), np.float32), "b.weight": np.ones((64, 64), np.float32)}, str(path))
    return path.read_bytes()


@pytest.mark.parametrize("cut", [4, 100, -1, -20000])
def test_a_cut_safetensors_is_one_line(checkpoint: bytes, tmp_path: Path, cut: int) -> None:
    path = tmp_path / "cut.safetensors"
    path.write_bytes(checkpoint[:cut])
    result = invoke(["audit", str(path)])
    assert_clean_error(result, 2, f"{path}:")
    assert len(_error_lines(result.stderr)) == 1


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_output_folder_that_cannot_be_made_is_one_line() -> None:
    result = invoke(["playbook", "run", "-o", "/proc/bundle"])
    assert_clean_error(result, 2, "/proc/bundle: cannot create the bundle's working folder")
    assert len(_error_lines(result.stderr)) == 1


# --------------------------------------------------------------------------- absence is never success


def test_a_trace_whose_kernels_were_all_dropped_is_refused_unless_allowed(trace_doc: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "negative.json"
    write_doc(path, _with_kernels(trace_doc, "dur", lambda dur: -abs(dur) - 1.0))
    kernels = sum(1 for e in trace_doc["traceEvents"] if e.get("cat") == "kernel")
    result = invoke(["import", "trace", str(path), "-o", str(tmp_path / "run.json")])
    assert_clean_error(result, 2, "every kernel event was dropped", f"{kernels} kernel with negative dur", "--allow-dropped")
    assert not (tmp_path / "run.json").exists()
    allowed = invoke(["import", "trace", str(path), "--allow-dropped", "-o", str(tmp_path / "run.json")])
    assert allowed.exit_code == 0, allowed.stderr
    assert (tmp_path / "run.json").is_file()


def test_a_run_without_latency_samples_does_not_pass_the_gate(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0, n=12), base)
    run = sparse_run(3.5, n=12)
    save_record(run.model_copy(update={"outcome": run.outcome.model_copy(update={"latency_samples_ms": []})}), cand)
    result = invoke(["gate", str(base), str(cand), "--json"])
    assert result.exit_code == 1, result.stderr
    checks = {c["id"]: c for c in json.loads(result.stdout)["checks"]}
    for check in ("effective_speedup", "p99_latency"):
        assert checks[check]["status"] == "inconclusive" and checks[check]["on_inconclusive"] == "fail"
        [empty] = [n for n in checks[check]["basis"] if n["code"] == "gate.no_latency_samples"]
        assert empty["values"]["runs"] == ["sparse"]
    relaxed = tmp_path / "relaxed.yaml"
    relaxed.write_text("effective_speedup: {on_inconclusive: pass}\np99_latency: {on_inconclusive: pass}\n")
    assert invoke(["gate", str(base), str(cand), "--policy", str(relaxed)]).exit_code == 0  # only when asked to allow it


def test_bisect_does_not_read_a_run_without_latency_samples_as_no_change(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0, n=12), base)
    run = dense_run(5.0, n=12).model_copy(update={"name": "dense-again"})
    save_record(run.model_copy(update={"outcome": run.outcome.model_copy(update={"latency_samples_ms": []})}), cand)
    result = invoke(["bisect", str(base), str(cand), "--json"])
    payload = json.loads(result.stdout)
    (outcome,) = [s for s in payload["stages"] if s["stage"] == "outcome"]
    assert outcome["status"] == "undecided" and payload["state"] == "undecided"
    assert outcome["facts"][0]["code"] == "locate.outcome.no_samples" and outcome["facts"][0]["values"]["runs"] == ["dense-again"]
    assert stage_text(StageFinding.model_validate(outcome)).startswith("no latency samples in dense-again (0 measured): whole-forward latency not compared")


# --------------------------------------------------------------------------- the fixed run, the gate's sessions


def test_a_fixed_trace_of_another_model_is_refused_before_classify(tmp_path: Path) -> None:
    base, cand, other = tmp_path / "base.json", tmp_path / "cand.json", tmp_path / "other.json"
    write_trace(base, TraceSpec(iterations=6))
    write_trace(cand, TraceSpec(iterations=6, sparse_layers=frozenset({0, 1, 2}), sparse_host_us=40.0))
    write_trace(other, TraceSpec(iterations=6, layers=3, hidden=1024, tokens=512))
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "--fixed", str(other), "-o", str(out)])
    assert_clean_error(result, 2, f"--fixed {other}: cand vs other: not comparable: model:", "--allow-different model")
    assert "3 classify" not in result.stderr  # refused in step 2, before classify and reduce
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.json", "cand.json", "other.json"]


def test_a_fixed_run_that_slowed_is_said_slower_against_the_projection(tmp_path: Path) -> None:
    """Before: 'the fix did NOT move latency p50' and 'more than projected' for a fixed run 51% slower than projected faster."""
    base, cand, fixed = tmp_path / "base.json", tmp_path / "cand.json", tmp_path / "fixed.json"
    sparse = frozenset(range(6))
    write_trace(base, TraceSpec(iterations=8))
    write_trace(cand, TraceSpec(iterations=8, sparse_layers=sparse, sparse_host_us=800.0))  # host overhead: scheduling
    write_trace(fixed, TraceSpec(iterations=8, sparse_layers=sparse, sparse_host_us=1600.0, seed=3))  # the "fix" doubled it
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "--fixed", str(fixed), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    fix = json.loads((out / "fix.json").read_text())
    (lat,) = [m for m in fix["movements"] if m["metric"] == "latency p50"]
    assert (lat["direction"], lat["expected_direction"]) == ("slower", "faster")
    assert lat["after"] > lat["before"] > lat["expected_after"]
    ratio = lat["after"] / lat["before"]
    rerun = next(line for line in result.stdout.splitlines() if line.startswith("5 rerun"))
    assert "slower, AGAINST the expected direction" in rerun
    memo = (out / "memo.md").read_text()
    assert "slower), AGAINST the expected direction" in memo.replace(", slower, AGAINST", "slower), AGAINST") or "AGAINST the expected direction" in memo
    detail = (out / "report.md").read_text()
    assert f"the fix made latency p50 slower (x{ratio:.3f}), against the projection (faster)" in detail
    assert "the opposite way to the projection" in detail and "did NOT move" not in memo + detail and "more than projected" not in detail


def test_timing_checks_on_separately_recorded_runs_say_what_to_run_instead(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0, n=2), base)  # 2 a side, not separated: too few to decide
    save_record(dense_run(5.1, n=2).model_copy(update={"name": "dense-again"}), cand)
    result = invoke(["gate", str(base), str(cand)])
    assert result.exit_code == 1, result.stderr
    notes = [line for line in result.stderr.splitlines() if "separately recorded" in line]
    assert len(notes) == 1, result.stderr
    assert notes[0].startswith("note: ") and "cannot be judged on two separately recorded runs" in notes[0]
    assert "`sparsedebug gate BASE.yaml CAND.yaml` to replay both in one interleaved session" in notes[0]


# --------------------------------------------------------------------------- low memory: a real process under ulimit -v


def _limited(megabytes: int) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, resource.RLIM_INFINITY))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
@pytest.mark.parametrize(("megabytes", "traces"), [(500, False), (250, False), (250, True)])
def test_a_walk_under_a_memory_limit_is_one_line_and_leaves_nothing(megabytes: int, traces: bool, tmp_path: Path) -> None:
    """Before: spun after '1 freeze done' ignoring SIGTERM (500 MB), or an OpenBLAS abort and a partial folder (250 MB)."""
    work = tmp_path / "work"
    work.mkdir()
    pair: list[str] = []
    if traces:
        write_trace(tmp_path / "base.json", TraceSpec(iterations=6))
        write_trace(tmp_path / "cand.json", TraceSpec(iterations=6, sparse_layers=frozenset({0, 1}), sparse_host_us=40.0))
        pair = ["--baseline", str(tmp_path / "base.json"), "--candidate", str(tmp_path / "cand.json")]
    out = work / "b"
    proc = subprocess.run(
        [sys.executable, "-m", "sparsedebug", "playbook", "run", *pair, "-o", str(out)], env={**ENV, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=180, check=False, preexec_fn=lambda: _limited(megabytes),
    )
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    if proc.returncode == 0:  # a machine where the walk fits under the limit
        assert (out / "bundle.json").is_file() and (out / "report.html").is_file()
    else:
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert "ulimit -v" in _one_error(proc.stderr)
        assert list(work.iterdir()) == []  # no bundle, no .b.partial-PID
