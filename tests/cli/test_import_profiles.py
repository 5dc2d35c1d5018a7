"""`sparsedebug import nsys|rocprof` and the commands that take their files: bisect, classify, fallbacks, playbook run."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from sparsedebug.records.run import RunRecord
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.profilegen import ProfileSpec, write_nsys, write_rocprof_json

NSYS_SAMPLE = FIXTURES / "nsys" / "pipit_saxpy-mpi-cuda_nsys_perlmutter0.trimmed.sqlite"
ROCPROF_SAMPLE = FIXTURES / "rocprof" / "tracelens_908_results.first3000.json.gz"


def test_import_nsys_sample_prints_devices_timeline_and_writes_the_record(tmp_path: Path) -> None:
    out = tmp_path / "run.yaml"
    result = invoke(["import", "nsys", str(NSYS_SAMPLE), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "Nsight Systems export (product version 2022.2.1.31, schema version 2.9.1): 1 device(s), device 0 analysed" in text
    assert "NVIDIA A100-SXM4-40GB" in text and "373.273" in text and "host wait" in text
    assert "sparse kernels: no" in text and f"wrote {out}" in text
    record = RunRecord.model_validate(yaml.safe_load(out.read_text()))
    assert record.source.kind == "nsys" and record.device is not None and record.device.family == "cuda"


def test_import_rocprof_sample_says_sparse_kernels_no() -> None:
    result = invoke(["import", "rocprof", str(ROCPROF_SAMPLE), "--layers", "0", "--iterations", "0"])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "rocprofv3 JSON: 1 device(s), device 0 analysed" in text and "AMD Instinct MI350X" in text
    assert "sparse kernels: no (none of the 4 distinct GEMM kernel name(s) on device 0 is a sparse GEMM)" in text
    payload = json.loads(invoke(["import", "rocprof", str(ROCPROF_SAMPLE), "--json"]).stdout)
    assert payload["sparse_kernels"] == [] and payload["imported"]["record"]["source"]["kind"] == "rocprof"


def test_import_picks_a_device_and_lists_every_one(tmp_path: Path) -> None:
    path = tmp_path / "two.sqlite"
    write_nsys(path, ProfileSpec(iterations=4, devices=(0, 1)))
    result = invoke(["import", "nsys", str(path), "--device", "1", "--layers", "0", "--iterations", "0"])
    assert result.exit_code == 0, result.stderr
    assert "2 device(s), device 1 analysed" in " ".join(result.stdout.split()) and "1*" in result.stdout
    assert_clean_error(invoke(["import", "nsys", str(path), "--device", "4"]), 2, "--device 4: no work on that device (devices with work: 0, 1)")


def test_nsys_pair_with_a_host_gap_stages_schedule(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.sqlite", tmp_path / "cand.sqlite"
    write_nsys(base, ProfileSpec(iterations=10, seed=1))
    write_nsys(cand, ProfileSpec(iterations=10, seed=2, host_gap_us=150.0))
    result = invoke(["bisect", str(base), str(cand), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["state"] == "divergence" and payload["first_stage"] == "schedule"
    classify = invoke(["classify", str(cand), "--baseline", str(base), "--json"])
    assert classify.exit_code == 0, classify.stderr
    assert json.loads(classify.stdout)["winner"] == "scheduling"
    fallbacks = invoke(["fallbacks", str(base), str(cand)])
    assert fallbacks.exit_code == 0 and "no matched layer changed kernel class" in fallbacks.stdout
    bundle = tmp_path / "bundle"
    played = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "-o", str(bundle)])
    assert played.exit_code == 0, played.stderr
    assert "scheduling" in played.stdout and (bundle / "memo.md").is_file()


def test_nsys_export_walked_against_itself_moves_nothing_and_is_undecided_on_five_iterations(tmp_path: Path) -> None:
    """The sample export holds 5 iterations a side, fewer than a latency comparison needs: the same file twice
    diverges nowhere and its outcome did not move, but the bisection says undecided rather than "no regression"."""
    base, again = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    shutil.copy(NSYS_SAMPLE, base)
    shutil.copy(NSYS_SAMPLE, again)
    result = invoke(["bisect", str(base), str(again), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["state"] == "undecided" and payload["first_stage"] is None
    assert payload["outcome"]["direction"] == "same" and payload["outcome"]["enough_samples"] is False


def test_rocprof_pair_goes_through_every_command(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    write_rocprof_json(base, ProfileSpec(iterations=10, seed=1))
    write_rocprof_json(cand, ProfileSpec(iterations=10, seed=2, sparse_layers=frozenset({0, 1}), kernel_us=160.0))
    bisect = json.loads(invoke(["bisect", str(base), str(cand), "--json"]).stdout)
    assert bisect["state"] == "divergence" and bisect["first_stage"] in ("lower", "kernel")
    classify = invoke(["classify", str(cand), "--baseline", str(base), "--json"])
    assert classify.exit_code == 0, classify.stderr
    fallbacks = invoke(["fallbacks", str(base), str(cand)])
    assert fallbacks.exit_code == 0, fallbacks.stderr
    assert "sparse_gemm" in fallbacks.stdout
    played = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "-o", str(tmp_path / "bundle")])
    assert played.exit_code == 0, played.stderr
    shown = invoke(["import", "rocprof", str(cand), "--layers", "0", "--iterations", "0"])
    assert "1 inferred from the name: hipSPARSELt's _SPA_/_SPB_ token" in " ".join(shown.stdout.split())


def _rpd(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE rocpd_op (id INTEGER, gpuId INTEGER, start INTEGER, end INTEGER)")
        db.execute("CREATE TABLE rocpd_api (id INTEGER, start INTEGER, end INTEGER)")
        db.execute("CREATE TABLE rocpd_string (id INTEGER, string TEXT)")
    return path


def _not_a_profile(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (name TEXT, city TEXT)")
    return path


def _truncated(path: Path) -> Path:
    whole = path.with_name("whole.sqlite")
    write_nsys(whole, ProfileSpec(iterations=30))
    path.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    return path


@pytest.mark.parametrize(("command", "make", "needle"), [
    ("rocprof", _rpd, "a rocmProfileData (rpd) trace, which sparsedebug does not read"),
    ("nsys", _not_a_profile, "binary data, not"),
    ("nsys", _truncated, "truncated"),
])
def test_bad_files_are_refused_in_one_line(tmp_path: Path, command: str, make: object, needle: str) -> None:
    assert callable(make)
    path = make(tmp_path / "input.sqlite")
    result = invoke(["import", command, str(path)])
    assert_clean_error(result, 2, needle)
    assert len(result.stderr.strip().splitlines()) == 1
    assert_clean_error(invoke(["bisect", str(path), str(NSYS_SAMPLE)]), 2, str(path))


def test_a_file_of_the_other_format_is_refused_by_what_it_is() -> None:
    result = invoke(["import", "nsys", str(ROCPROF_SAMPLE)])
    assert_clean_error(result, 2, "is a rocprofv3 kernel trace", "expected an Nsight Systems SQLite export")
