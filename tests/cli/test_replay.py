"""`sparsedebug replay` and `sparsedebug lower` through the CLI: records, tables, JSON and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sparsedebug.core.io import load_record
from sparsedebug.records.run import STAGES, RunRecord
from sparsedebug.sources.workload.schema import save_workload
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.builders import llama_stack, mlp_chain


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    workload = llama_stack(
        "tiny",
        blocks=1,
        hidden=64,
        ffn=96,
        heads=4,
        sequence=16,
        repeats=3,
        warmup=1,
        sparsity="2:4",
        backend="h200-cusparselt",
        precision="fp16",
        budget_ms=1000.0,
        overrides={"layers.0.mlp.down_proj": {"dtype": "fp32"}},
    )
    save_workload(workload, path)
    return path


def test_replay_writes_a_valid_record_and_prints_tables(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = invoke(["replay", str(tiny), "-o", str(out), "--layers"])
    assert result.exit_code == 0, result.stderr
    record = load_record(out, RunRecord)
    for stage in STAGES:
        assert getattr(record, stage) is not None
    assert record.workload is not None and record.workload.file is not None
    assert record.workload.file.path == str(tiny)
    assert "run tiny" in result.stdout
    assert "effective speedup" in result.stdout
    assert "6 of 7 linear layers sparse on h200-cusparselt; 1 fell back" in result.stdout
    assert "dtype_unsupported" in result.stdout
    assert "kernels (p50" in result.stdout
    assert "check sla" in result.stdout
    assert f"wrote {out}" in result.stdout


def test_replay_json_is_the_record_only(tiny: Path) -> None:
    result = invoke(["replay", str(tiny), "--json", "--repeats", "4"])
    assert result.exit_code == 0, result.stderr
    record = RunRecord.model_validate(json.loads(result.stdout))
    assert len(record.outcome.latency_samples_ms) == 4
    assert record.verdicts and record.verdicts[0].check == "sla"


def test_replay_yaml_output(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.yaml"
    assert invoke(["replay", str(tiny), "-o", str(out), "--json"]).exit_code == 0
    assert load_record(out, RunRecord).name == "tiny"


def test_lower_shows_fallback_without_timing(tiny: Path) -> None:
    result = invoke(["lower", str(tiny)])
    assert result.exit_code == 0, result.stderr
    assert "layers.0.mlp.down_proj" in result.stdout and "dense (fallback)" in result.stdout
    assert "sdpa" not in result.stdout
    assert "sdpa" in invoke(["lower", str(tiny), "--all"]).stdout
    payload = json.loads(invoke(["lower", str(tiny), "--json"]).stdout)
    down = [l for l in payload["layers"] if l["name"] == "layers.0.mlp.down_proj"][0]
    assert down["reason"] == "dtype_unsupported" and down["conversion_ms"] is None


def test_lower_embedded_regressed_fixture_by_name() -> None:
    result = invoke(["lower", "llama_2of4_regressed", "--json"])
    assert result.exit_code == 0, result.stderr
    fallbacks = [l["name"] for l in json.loads(result.stdout)["layers"] if l["reason"] == "dtype_unsupported"]
    assert fallbacks == ["layers.1.mlp.down_proj"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    return path


BAD_HEADER = "schema_version: 1\nname: bad\ntokens: {sequence: 4}\n"


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ("layers:\n- {name: fc, op: conv, shape: [8, 8]}\n", ["layers.0 (fc): op"]),
        (
            "layers:\n- {name: fc0, op: linear, shape: [16, 8]}\n- {name: fc1, op: linear, shape: [8, 12]}\n",
            ["layer 'fc1'", "expects 12 input features"],
        ),
        ("layers:\n- {name: fc, op: linear, shape: [8, 6], sparsity: '2:4'}\n", ["layer 'fc'", "K=6 is not divisible by M=4"]),
    ],
)
def test_bad_workloads_exit_2_and_write_nothing(tmp_path: Path, body: str, needles: list[str]) -> None:
    out = tmp_path / "run.json"
    result = invoke(["replay", str(_write(tmp_path, BAD_HEADER + body)), "-o", str(out)])
    assert_clean_error(result, 2, *needles)
    assert not out.exists()


def test_bad_weights_exit_2_naming_the_layer(tmp_path: Path) -> None:
    workload = mlp_chain("m", [8, 16, 8], sparsity="2:4", weights={"path": "w.npz"})
    path = tmp_path / "m.yaml"
    save_workload(workload, path)
    nan = np.ones((16, 8))
    nan[0, 0] = np.nan
    np.savez(tmp_path / "w.npz", fc0=nan, fc1=np.ones((8, 16)))
    out = tmp_path / "run.json"
    assert_clean_error(invoke(["replay", str(path), "-o", str(out)]), 2, "layer 'fc0'", "NaN")
    np.savez(tmp_path / "w.npz", fc0=np.ones((16, 8)), fc1=np.ones((8, 12)))
    assert_clean_error(invoke(["replay", str(path), "-o", str(out)]), 2, "layer 'fc1'", "does not match the declared [8, 16]")
    assert not out.exists()


def test_missing_and_unknown_workloads(tmp_path: Path) -> None:
    assert_clean_error(invoke(["replay", str(tmp_path / "none.yaml")]), 2, "file not found")
    assert_clean_error(invoke(["replay", "no_such_embedded"]), 2, "embedded workload 'no_such_embedded' not found", "llama_dense")
    assert_clean_error(invoke(["replay", str(FIXTURES / "workloads" / "llama_dense.yaml"), "--repeats", "1"]), 2)


def test_help_explains_the_stages() -> None:
    result = invoke(["replay", "--help"])
    assert result.exit_code == 0
    assert "fp64 reference" in result.stdout and "--repeats" in result.stdout
    assert "fallback" in invoke(["lower", "--help"]).stdout


def test_replay_prints_both_clocks_and_the_target_flags(tiny: Path) -> None:
    result = invoke(["replay", str(tiny), "--layers"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "forward latency (this machine, measured)" in out
    assert "target (h200-cusparselt, eager, projected)" in out
    assert "sparse slower than dense (target)" in out and "6 layer(s)" in out
    assert "slower_than_dense" in out and "target sparse/dense ms" in out
    assert "target: projected" in out


def test_lower_json_carries_the_slower_than_dense_flag_with_both_numbers(tiny: Path) -> None:
    payload = json.loads(invoke(["lower", str(tiny), "--json"]).stdout)
    flags = [l["slower_on_target"] for l in payload["layers"] if l["slower_on_target"] is not None]
    assert len(flags) == 6  # every sparse layer: at 16 tokens the per-call host cost dwarfs the kernel
    assert all(f["reason"] == "slower_than_dense" and f["sparse_ms"] > f["dense_ms"] > 0 for f in flags)
    down = [l for l in payload["layers"] if l["name"] == "layers.0.mlp.down_proj"][0]
    assert down["slower_on_target"] is None  # it fell back (fp32): nothing sparse to flag
