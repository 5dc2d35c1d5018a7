"""`sparsedebug freeze` through the CLI: record, check, drift, and every bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from sparsedebug.records.fingerprint import Calibration
from sparsedebug.render.words.fingerprint import calibration_words
from tests.conftest import assert_clean_error, invoke


def test_freeze_then_check_is_clean(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    result = invoke(["freeze", "-o", str(out), "--seed", "7"])
    assert result.exit_code == 0, result.stderr
    data = yaml.safe_load(out.read_text())
    assert data["seed"] == 7
    assert data["schema_version"] == 2
    assert data["numpy"]["blas"], "threadpoolctl should report numpy's BLAS"
    check = invoke(["freeze", "--check", str(out)])
    assert check.exit_code == 0, check.stdout + check.stderr
    assert "no result-affecting drift" in check.stdout


def test_hand_edited_numpy_version_fails_check_and_names_field(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    assert invoke(["freeze", "-o", str(out)]).exit_code == 0
    data = yaml.safe_load(out.read_text())
    data["numpy"]["version"] = "0.0.1"
    out.write_text(yaml.safe_dump(data))
    check = invoke(["freeze", "--check", str(out)])
    assert check.exit_code == 1
    assert "numpy.version" in check.stdout
    as_json = invoke(["freeze", "--check", str(out), "--json"])
    assert as_json.exit_code == 1
    payload = json.loads(as_json.stdout)
    assert payload["ok"] is False
    assert [d["field"] for d in payload["drifts"] if d["affects_results"]] == ["numpy.version"]


def test_seed_and_model_digest_drift_fail(tmp_path: Path) -> None:
    model = tmp_path / "w.bin"
    model.write_bytes(b"abc")
    out = tmp_path / "f.json"
    assert invoke(["freeze", "-o", str(out), "--seed", "1", "--model", str(model)]).exit_code == 0
    assert invoke(["freeze", "--check", str(out)]).exit_code == 0
    assert invoke(["freeze", "--check", str(out), "--seed", "2"]).exit_code == 1
    model.write_bytes(b"abd")
    drifted = invoke(["freeze", "--check", str(out), "--json"])
    assert drifted.exit_code == 1
    assert "model.sha256" in [d["field"] for d in json.loads(drifted.stdout)["drifts"]]


def test_git_revision_drift_is_reported_but_not_failing(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    assert invoke(["freeze", "-o", str(out)]).exit_code == 0
    data = yaml.safe_load(out.read_text())
    data["git"] = {"revision": "0" * 40, "dirty": False}
    data["platform"]["release"] = "0.0-other"
    out.write_text(yaml.safe_dump(data))
    check = invoke(["freeze", "--check", str(out)])
    assert check.exit_code == 0
    assert "platform.release" in check.stdout


def test_json_output_is_only_json(tmp_path: Path) -> None:
    result = invoke(["freeze", "--json", "--seed", "3"])
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["kind"] == "fingerprint"
    assert payload["seed"] == 3
    assert payload["thread_env"].keys() >= {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE"}


def test_calibrate_records_method_and_sizes() -> None:
    result = invoke(["freeze", "--json", "--calibrate"])
    assert result.exit_code == 0
    cal = json.loads(result.stdout)["calibration"]
    assert cal["gemm_gflops"] > 0 and cal["copy_gbps"] > 0
    assert "method" not in cal and cal["gemm_shape"] == [1024, 1024, 1024] and cal["copy_bytes"] == 2 * 64 * (1 << 20)
    assert len(cal["gemm_samples_ms"]) == cal["rounds"]
    assert calibration_words(Calibration.model_validate(cal)) == (
        f"median of {cal['rounds']} interleaved rounds: numpy.matmul fp32 1024x1024x1024 (2*m*n*k FLOPs) and numpy.copyto "
        "of 64 MiB fp32 (read+write bytes)"
    )


def test_a_fingerprint_of_the_older_layout_is_refused_with_the_upgrade_message(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    assert invoke(["freeze", "-o", str(out)]).exit_code == 0
    data = yaml.safe_load(out.read_text())
    data["schema_version"] = 1
    data["gpu_probe"] = "absent: nvidia-smi not found on PATH"
    out.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["freeze", "--check", str(out)]), 2, "schema_version: 1 was written by an older sparsedebug")


def test_gpu_absent_is_recorded_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = invoke(["freeze", "--json"])
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["gpus"] == []
    assert payload["gpu_probe"] == {"status": "not_on_path", "command": None, "exit_code": None, "error": None}
    shown = invoke(["freeze"])
    assert shown.exit_code == 0 and "absent: nvidia-smi not found on PATH" in shown.stdout + shown.stderr


def test_missing_check_file(tmp_path: Path) -> None:
    assert_clean_error(invoke(["freeze", "--check", str(tmp_path / "nope.yaml")]), 2, "nope.yaml: file not found")


def test_missing_model_file(tmp_path: Path) -> None:
    assert_clean_error(invoke(["freeze", "--model", str(tmp_path / "m.npz")]), 2, "m.npz: file not found")


def test_malformed_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1, 2\n")
    assert_clean_error(invoke(["freeze", "--check", str(bad)]), 2, "bad.yaml: malformed YAML at line")


def test_wrong_schema_one_line_per_problem(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    assert invoke(["freeze", "-o", str(out)]).exit_code == 0
    data = yaml.safe_load(out.read_text())
    data["surprise"] = 1
    del data["python"]
    data["seed"] = "seven"
    out.write_text(yaml.safe_dump(data))
    result = invoke(["freeze", "--check", str(out)])
    assert_clean_error(result, 2, f"{out}: surprise: unknown field", f"{out}: python: missing field", f"{out}: seed:")
    assert len(result.stderr.strip().splitlines()) == 3


def test_future_schema_version_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    assert invoke(["freeze", "-o", str(out)]).exit_code == 0
    data = yaml.safe_load(out.read_text())
    data["schema_version"] = 99
    out.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["freeze", "--check", str(out)]), 2, "schema_version: 99 is newer", "upgrade sparsedebug")


def test_unwritable_output_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        assert_clean_error(invoke(["freeze", "-o", str(locked / "f.yaml")]), 2, "cannot write")
    finally:
        locked.chmod(0o700)


def test_permission_denied_output_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def deny(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("sparsedebug.core.io.tempfile.mkstemp", deny)
    result = invoke(["freeze", "-o", str(tmp_path / "f.yaml")])
    assert_clean_error(result, 2, "cannot write", "Permission denied")
    assert not (tmp_path / "f.yaml").exists()


def test_missing_output_directory(tmp_path: Path) -> None:
    result = invoke(["freeze", "-o", str(tmp_path / "no" / "such" / "f.yaml")])
    assert_clean_error(result, 2, "does not exist")


def test_output_is_a_directory(tmp_path: Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    assert_clean_error(invoke(["freeze", "-o", str(target)]), 2, "is a directory; give a file name")


def test_help_is_worth_reading() -> None:
    result = invoke(["freeze", "--help"])
    assert result.exit_code == 0
    assert "--calibrate" in result.stdout and "--check" in result.stdout


def test_unknown_option_is_usage_error() -> None:
    assert invoke(["freeze", "--bogus"]).exit_code == 2
