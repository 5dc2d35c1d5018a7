"""Refusals and messages a new user found missing or misleading (issue 55): each is one line, exit 2, naming the
file, field and value, and a file a later step would reject is rejected before step 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparsedebug.core.io import save_record
from sparsedebug.locate.comparable import check_pair
from sparsedebug.records.notes import note
from sparsedebug.render.words.gate import PHRASES as GATE_PHRASES
from sparsedebug.render.words.notes import say
from sparsedebug.signoff.metrics import layer_rows
from sparsedebug.sources.detect import load_run
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.powerlogs import write_smi_power_log
from tests.support.synth import dense_run
from tests.support.tracegen import TraceSpec, generate, write_doc, write_trace

H200 = FIXTURES / "h200"
PLANTED = FIXTURES / "workloads" / "planted" / "base.yaml"


def _kernels_only(doc: dict[str, Any]) -> dict[str, Any]:
    """A trace with its GPU work and step markers only: layers are kernel names, as in a CUDA-graph replay."""
    kept = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") or e.get("ph") == "M"
            or str(e.get("name", "")).startswith("ProfilerStep#")]
    return {**doc, "traceEvents": kept}


@pytest.mark.parametrize("command", ["bisect", "playbook"])
def test_a_trace_of_one_forward_is_not_compared_as_a_run(command: str, tmp_path: Path) -> None:
    one, many = tmp_path / "one.json", tmp_path / "many.json"
    write_trace(one, TraceSpec(iterations=1, backward=False, optimizer=False, nccl=False))
    write_trace(many, TraceSpec(iterations=6, backward=False, optimizer=False, nccl=False))
    args = ["bisect", str(one), str(many)] if command == "bisect" else [
        "playbook", "run", "--baseline", str(one), "--candidate", str(many), "-o", str(tmp_path / "b")]
    result = invoke(args)
    assert_clean_error(result, 2, f"{one}: outcome.latency_samples_ms: 1 forward measured; a run compared with another needs at least 2")
    assert not (tmp_path / "b").exists()


def test_an_unrelated_fixed_trace_of_kernel_names_is_refused(tmp_path: Path) -> None:
    """CUDA-graph traces name layers by kernel: the model is told by the kernels two runs share, so a fixed run of
    another model is refused as an unrelated pair is; the dense and sparse builds of one model stay comparable."""
    other = tmp_path / "other.json"
    write_doc(other, _kernels_only(generate(TraceSpec(iterations=6, layers=3, hidden=1024, tokens=512, backward=False,
                                                      optimizer=False, nccl=False))[0]))
    dense, sparse = (load_run(H200 / f"trace_{name}_T2048_cudagraph.json.gz") for name in ("dense", "sparse_mlp"))
    assert check_pair(dense, sparse).check.comparable
    refused = check_pair(sparse, load_run(other)).check
    model = next(d for d in refused.differences if d.dimension == "model")
    assert not refused.comparable and "kernels of the run with fewer are in both" in say(model.facts)
    result = invoke(["playbook", "run", "--baseline", str(H200 / "trace_dense_T2048_cudagraph.json.gz"),
                     "--candidate", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"), "--fixed", str(other),
                     "-o", str(tmp_path / "b")])
    assert_clean_error(result, 2, f"--fixed {other}:", "not comparable: model:", "in common)", "--allow-different model")


def test_an_unannotated_run_merged_into_annotated_layers_keeps_a_coded_detail() -> None:
    """Before: the merged layer's lowering detail was a sentence where a coded fact belongs: a traceback in step 5."""
    annotated = load_run(H200 / "trace_sparse_mlp_T2048.json.gz")
    unannotated = load_run(FIXTURES / "traces" / "h200_dense_unannotated.json.gz")
    merged = check_pair(annotated, unannotated).cand
    details = [row.detail for row in layer_rows(merged) if row.detail is not None and row.detail.code == "locate.compare.merged_layer"]
    assert details and say(details[0]).startswith("merged from ")


def test_a_workload_key_given_twice_is_refused(tmp_path: Path) -> None:
    text = PLANTED.read_text()
    doubled = tmp_path / "w.yaml"
    doubled.write_text(text + "\nseed: 1\nseed: 2\n")
    assert_clean_error(invoke(["replay", str(doubled)]), 2, f"{doubled}: malformed YAML at line", "key 'seed' given twice (first at line")


def test_freeze_refuses_a_binary_workload_before_pinning_it(tmp_path: Path) -> None:
    binary = tmp_path / "w.yaml"
    binary.write_bytes(bytes(range(256)) * 8)
    out = tmp_path / "fp.yaml"
    assert_clean_error(invoke(["freeze", "--workload", str(binary), "-o", str(out)]), 2, f"{binary}: binary data")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bisect", "a.json", "b.json", "--executor", "banana"], "Invalid value for '--executor': expected local, inprocess"),
        (["playbook", "run", "--executor", "banana", "-o", "b"], "Invalid value for '--executor': expected local, inprocess"),
        (["replay", "w.yaml", "--repeats", "0"], "Invalid value for '--repeats': Input should be greater than or equal to 3, got '0'"),
        (["gate", "a.json"], "Missing argument 'candidate'."),
    ],
)
def test_usage_errors_are_one_line(args: list[str], needle: str) -> None:
    result = invoke(args)
    assert_clean_error(result, 2, needle)
    assert result.stderr.count("\n") == 1 and "╭" not in result.stderr and "--help: usage)" in result.stderr


def test_a_device_given_as_an_input_is_named_as_such(tmp_path: Path) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    result = invoke(["bisect", str(zero), str(FIXTURES / "artifacts" / "small_trace.json")])
    assert_clean_error(result, 2, f"{zero}: is a character device, not a regular file")
    assert "file not found" not in result.stderr


def test_an_impossible_date_is_said_to_be_no_date(tmp_path: Path) -> None:
    log = tmp_path / "smi.csv"
    log.write_text("timestamp, power.draw [W]\n2026/02/30 10:00:01.000, 300 W\n2026/03/01 10:00:00.000, 300 W\n")
    assert_clean_error(invoke(["import", "smi", str(log)]), 2, "line 2: timestamp '2026/02/30 10:00:01.000' is no date: day is out of range")
    counter = FIXTURES / "artifacts" / "power_smi_counter.csv"
    result = invoke(["import", "power", str(counter), "--utc-offset", "0", "--from", "2026-02-30T10:00:00Z", "--to", "2026-12-01T10:00:01Z"])
    assert_clean_error(result, 2, "--from '2026-02-30T10:00:00Z': no such date or time: day is out of range for month")


def test_a_bad_power_log_is_refused_before_step_1(tmp_path: Path) -> None:
    log = write_smi_power_log(tmp_path / "smi.csv", 1_764_583_200.0, 0.1, [300.0, 300.0, -5000.0, 300.0], fields=(),
                              energy_start_mj=4e12)
    trace = tmp_path / "t.json"
    write_trace(trace, TraceSpec(iterations=4, backward=False, optimizer=False, nccl=False))
    result = invoke(["playbook", "run", "--baseline", str(trace), "--candidate", str(trace), "--power", str(log), "-o", str(tmp_path / "b")])
    assert_clean_error(result, 2, f"{log}: line 5, total_energy_consumption: the energy counter runs backwards")
    assert "freeze" not in result.stdout + result.stderr  # step 1 never started
    assert not (tmp_path / "b").exists()


def test_a_record_sample_beyond_a_week_is_named_not_called_unstable(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0, n=6), base)
    doc = dense_run(5.0, n=6).model_dump(mode="json")
    doc["outcome"]["latency_samples_ms"][2] = 1e30
    cand.write_text(json.dumps(doc))
    result = invoke(["gate", str(base), str(cand)])
    assert_clean_error(result, 2, f"{cand}: outcome.latency_samples_ms.2: Input should be less than or equal to", "got 1e+30")
    assert "unstable" not in result.stderr


@pytest.mark.parametrize("session", [True, False])
def test_unstable_timings_do_not_contradict_the_session(session: bool) -> None:
    words = say(note("gate.timings_unstable", runs=["cand"], policy="fail", session=session, problems=["core.timing_spread"]))
    assert "samples spread wider than the policy allows" in words
    if session:
        assert "drift common to both sides cancels in each round's ratio, this spread does not" in words
        assert "rerun on a quiet machine" not in words
    else:
        assert words.endswith("rerun on a quiet machine; the gate fails on it (on_inconclusive: fail)") or "rerun on a quiet machine" in words
    assert "gate.timings_unstable" in GATE_PHRASES
