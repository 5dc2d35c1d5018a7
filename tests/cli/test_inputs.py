"""Rough edges a new user hit with bad inputs: each is one clean line and exit 2, or the documented behaviour."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparsedebug.core.io import save_record
from sparsedebug.sources.bundle import load_bundle
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.proc import run_cli
from tests.support.synth import dense_run, sparse_run

PLANTED = FIXTURES / "workloads" / "planted"
H200 = FIXTURES / "h200"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0), base)
    save_record(sparse_run(3.5), cand)
    return base, cand


# --------------------------------------------------------------------------- policies


@pytest.mark.parametrize("text", ["", "# nothing but a comment\n"])
def test_an_empty_policy_is_an_error(runs: tuple[Path, Path], tmp_path: Path, text: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    assert_clean_error(invoke(["gate", *map(str, runs), "--policy", str(policy)]), 2, "policy.yaml: empty policy file")


@pytest.mark.parametrize(
    ("section", "values", "needle"),
    [
        ("quality_delta", {"min_cosine": -3}, "quality_delta.min_cosine: Input should be greater than or equal to -1"),
        ("quality_delta", {"min_cosine": 1.5}, "quality_delta.min_cosine: Input should be less than or equal to 1"),
        ("quality_delta", {"max_accuracy_drop": -0.1}, "quality_delta.max_accuracy_drop: Input should be greater than or equal to 0"),
        ("fallback_rate", {"max_rate": 2}, "fallback_rate.max_rate: Input should be less than or equal to 1"),
        ("significance", {"alpha": 1.5}, "significance.alpha: Input should be less than 1"),
        ("significance", {"factor": 0.5}, "significance.factor: Input should be greater than or equal to 1"),
        ("p99_latency", {"max_ratio": -1}, "p99_latency.max_ratio: Input should be greater than 0"),
        ("precision_drift", {"max_rel_err": {"fp16": 0}}, "precision_drift.max_rel_err.fp16: Input should be greater than 0"),
        ("effective_speedup", {"min": float("nan")}, "effective_speedup.min: Input should be a finite number"),
    ],
)
def test_thresholds_are_validated_to_their_range(
    runs: tuple[Path, Path], tmp_path: Path, section: str, values: dict[str, Any], needle: str
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({section: values}))
    assert_clean_error(invoke(["gate", *map(str, runs), "--policy", str(policy)]), 2, needle)


def test_bisect_min_cosine_is_a_cosine(runs: tuple[Path, Path]) -> None:
    result = run_cli(["bisect", *map(str, runs), "--min-cosine", "-3"])
    assert result.returncode == 2 and "Invalid value for '--min-cosine'" in result.stderr


# --------------------------------------------------------------------------- freeze


def test_freeze_refuses_a_negative_seed(tmp_path: Path) -> None:
    result = run_cli(["freeze", "--seed", "-1", "-o", str(tmp_path / "fp.yaml")])
    assert result.returncode == 2, result.stderr
    assert "Invalid value for '--seed'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "fp.yaml").exists()


def test_freeze_check_resolves_paths_from_the_fingerprint_file(tmp_path: Path) -> None:
    work = tmp_path / "project"
    (work / "ci").mkdir(parents=True)
    shutil.copy(PLANTED / "base.yaml", work / "w.yaml")
    made = run_cli(["freeze", "-o", "ci/fp.yaml", "--seed", "7", "--workload", "w.yaml"], cwd=work)
    assert made.returncode == 0, made.stderr
    assert yaml.safe_load((work / "ci" / "fp.yaml").read_text())["workload"]["path"] == "../w.yaml"
    for cwd, target in ((work, "ci/fp.yaml"), (tmp_path, "project/ci/fp.yaml"), (work / "ci", "fp.yaml")):
        checked = run_cli(["freeze", "--check", target], cwd=cwd)
        assert checked.returncode == 0, (cwd, checked.stdout, checked.stderr)
    moved = tmp_path / "elsewhere"
    shutil.move(str(work), str(moved))  # the pair moves together
    assert run_cli(["freeze", "--check", str(moved / "ci" / "fp.yaml")]).returncode == 0
    os.remove(moved / "w.yaml")
    gone = run_cli(["freeze", "--check", str(moved / "ci" / "fp.yaml")])
    assert gone.returncode == 2
    assert "fp.yaml: workload.path:" in gone.stderr and "pinned file not found" in gone.stderr


# --------------------------------------------------------------------------- traces and binary files


def test_a_trace_without_timing_says_how_many_events_and_which_fields(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "args": {"device": 0}} for _ in range(5)]
    events += [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "args": {"device": 0}} for _ in range(3)]
    events += [{"ph": "X", "cat": "gpu_memcpy", "name": "copy", "pid": 0, "tid": 7, "ts": 10, "dur": -4, "args": {}}]
    path = tmp_path / "untimed.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert_clean_error(
        invoke(["import", "trace", str(path)]), 2,
        "untimed.json: no GPU activity",
        "9 GPU event(s) had no usable timing: 5 kernel without numeric ts and dur, 3 kernel without numeric dur, 1 gpu_memcpy with negative dur",
    )


@pytest.fixture
def garbage(tmp_path: Path) -> dict[str, Path]:
    data = bytes((i * 7919 + 13) % 256 for i in range(4096))
    paths = {}
    for name in ("garbage.json", "garbage.bin", "garbage.yaml"):
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    paths["garbage.json.gz"] = tmp_path / "garbage.json.gz"
    paths["garbage.json.gz"].write_bytes(gzip.compress(data))
    paths["plain.json.gz"] = tmp_path / "plain.json.gz"  # named .gz, not compressed
    paths["plain.json.gz"].write_bytes(data)
    return paths


@pytest.mark.parametrize("name", ["garbage.json", "garbage.json.gz", "plain.json.gz"])
def test_binary_garbage_is_not_a_trace(garbage: dict[str, Path], name: str) -> None:
    assert_clean_error(invoke(["import", "trace", str(garbage[name])]), 2, f"{name}: not a trace: binary data")


@pytest.mark.parametrize("name", ["garbage.json", "garbage.bin", "garbage.yaml"])
def test_binary_garbage_is_named_as_such_everywhere(garbage: dict[str, Path], runs: tuple[Path, Path], name: str) -> None:
    path = str(garbage[name])
    for args in (["bisect", str(runs[0]), path], ["gate", path, str(runs[1])], ["replay", path], ["fallbacks", path, str(runs[1])]):
        result = invoke(args)
        assert_clean_error(result, 2, f"{name}: binary data, not")
        assert "UTF-8" not in result.stderr, result.stderr
    assert_clean_error(invoke(["freeze", "--check", path]), 2, f"{name}: binary data")


# --------------------------------------------------------------------------- bundles

MAPS = {"by_class_ms", "class_shares", "max_rel_err", "knobs", "thread_env", "files", "layer_idle_samples_ms", "reasons", "gates", "based_on", "terms", "detail", "values"}
"""Fields that are maps by design (free keys), not records: an extra key there is data."""


def _record_nodes(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of the dicts in a document that are records (not maps), the first two items of each list."""
    found: list[tuple[Any, ...]] = []
    if isinstance(obj, dict):
        if not path or path[-1] not in MAPS:
            found.append(path)
        for key, value in obj.items():
            found.extend(_record_nodes(value, (*path, key)))
    elif isinstance(obj, list):
        for index, value in enumerate(obj[:2]):
            found.extend(_record_nodes(value, (*path, index)))
    return found


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("b") / "bundle"
    result = invoke([
        "playbook", "run", "--baseline", str(H200 / "trace_dense_T2048.json.gz"), "--candidate", str(H200 / "trace_sparse_mlp_T2048.json.gz"),
        "--fixed", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"), "-o", str(out),
    ])
    assert result.exit_code == 0, result.stderr
    return out


def test_an_unknown_key_anywhere_in_a_bundle_is_refused(bundle: Path, tmp_path: Path) -> None:
    checked = 0
    for source in sorted(bundle.glob("*.json")):
        document = json.loads(source.read_text())
        for node in _record_nodes(document):
            copy = json.loads(source.read_text())
            target = copy
            for key in node:
                target = target[key]
            target["surprise"] = 1
            broken = tmp_path / "broken"
            shutil.rmtree(broken, ignore_errors=True)
            shutil.copytree(bundle, broken)
            (broken / source.name).write_text(json.dumps(copy))
            with pytest.raises(Exception, match=r"surprise: unknown field") as info:
                load_bundle(broken)
            assert type(info.value).__name__ == "UserError", (source.name, node)
            checked += 1
    assert checked > 50
    # and through the CLI, one nested case:
    document = json.loads((bundle / "bisect.json").read_text())
    document["stages"][-1]["metrics"][0]["comparison"]["surprise"] = 1
    broken = tmp_path / "cli"
    shutil.copytree(bundle, broken)
    (broken / "bisect.json").write_text(json.dumps(document))
    assert_clean_error(invoke(["memo", str(broken)]), 2, "bisect.json: stages.4.metrics.0.comparison.surprise: unknown field")
