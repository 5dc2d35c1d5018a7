"""Every comparing command refuses two unrelated runs with exit 2 and one line naming what differs (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import assert_clean_error, invoke
from tests.support.tracegen import TraceSpec, read_doc, strip, write_doc, write_trace

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "h200"
DENSE = str(H200 / "trace_dense_T2048.json.gz")


@pytest.fixture
def training(tmp_path: Path) -> str:
    path = tmp_path / "training.json"
    write_trace(path, TraceSpec())
    return str(path)


@pytest.mark.parametrize(
    "args",
    [
        ["bisect", DENSE, "{other}"],
        ["gate", DENSE, "{other}"],
        ["fallbacks", DENSE, "{other}"],
        ["classify", "{other}", "--baseline", DENSE],
        ["playbook", "run", "--baseline", DENSE, "--candidate", "{other}", "-o", "{out}"],
    ],
)
def test_unrelated_models_are_refused(tmp_path: Path, training: str, args: list[str]) -> None:
    out = tmp_path / "bundle"
    result = invoke([a.format(other=training, out=out) for a in args])
    assert_clean_error(
        result, 2, "not comparable: model: 0 of 44 layers match by op and shape (0%)", "phase: inference vs training step",
        "tokens: 2048 vs 4096 tokens per call (x2)", "--allow-different model --allow-different phase --allow-different tokens",
    )
    error_lines = [line for line in result.stderr.splitlines() if "not comparable" in line]
    assert len(error_lines) == 1 and error_lines[0].startswith("error: trace_dense_T2048 vs training: not comparable")
    assert not out.exists() and not list(tmp_path.glob(".bundle*"))


def test_allow_different_opts_in_and_says_so(tmp_path: Path, training: str) -> None:
    allow = ["--allow-different", "model", "--allow-different", "phase", "--allow-different", "tokens"]
    result = invoke(["bisect", DENSE, training, *allow, "--json"])
    assert result.exit_code == 0, result.stderr
    check = json.loads(result.stdout)["comparability"]
    assert check["comparable"] and check["allowed"] == ["model", "phase", "tokens"]
    assert {d["dimension"] for d in check["differences"] if d["allowed"]} == {"model", "phase", "tokens"}
    partial = invoke(["gate", DENSE, training, "--allow-different", "model"])
    assert_clean_error(partial, 2, "phase: inference vs training step", "--allow-different phase --allow-different tokens")
    assert "--allow-different model " not in partial.stderr


def test_annotated_and_stripped_traces_compare_as_equal_through_the_cli(tmp_path: Path) -> None:
    stripped = tmp_path / "dense_stripped.json.gz"
    write_doc(stripped, strip(read_doc(H200 / "trace_dense_T2048.json.gz"), "no_annotations"))
    result = invoke(["bisect", DENSE, str(stripped), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    # 3 iterations a side: too few for the one rule to judge the forward; every other stage the same
    assert data["state"] == "undecided", data["verdict"]
    assert [s["stage"] for s in data["stages"] if s["status"] == "undecided"] == ["outcome"]
    assert data["comparability"]["layers"]["matched"] == 44 and data["comparability"]["layers"]["merged"]
    fallbacks = invoke(["fallbacks", DENSE, str(stripped), "--json"])
    assert fallbacks.exit_code == 0 and json.loads(fallbacks.stdout)["matched_layers"] == 44


def test_playbook_memo_states_what_was_allowed(tmp_path: Path) -> None:
    other = tmp_path / "other_gpu.json.gz"
    doc = read_doc(H200 / "trace_sparse_mlp_T2048.json.gz")
    doc["deviceProperties"] = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "numSms": 108, "totalGlobalMem": 85_899_345_920}]
    write_doc(other, doc)
    out = tmp_path / "bundle"
    refused = invoke(["playbook", "run", "--baseline", DENSE, "--candidate", str(other), "-o", str(out)])
    assert_clean_error(refused, 2, "device: cuda:NVIDIA H200 (sm 9.0, 132 SMs, 140 GiB) vs cuda:NVIDIA A100-SXM4-80GB (sm 8.0, 108 SMs, 80 GiB)")
    result = invoke(["playbook", "run", "--baseline", DENSE, "--candidate", str(other), "-o", str(out), "--allow-different", "device"])
    assert result.exit_code == 0, result.stderr
    memo = (out / "report.md").read_text()  # the memo's detail
    assert "**Comparability**: Compared although they differ (--allow-different): device: cuda:NVIDIA H200" in memo


def test_gate_on_a_fifteen_times_slower_trace_needs_six_iterations(tmp_path: Path) -> None:
    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    summary = tmp_path / "s.md"
    for iterations, status in ((3, "INCONCLUSIVE"), (6, "FAIL")):  # 3 a side: too few for the one rule, whatever the ratio
        write_trace(base, TraceSpec(iterations=iterations, backward=False, optimizer=False, nccl=False))
        write_trace(slow, TraceSpec(iterations=iterations, backward=False, optimizer=False, nccl=False, kernel_scale=15.0, seed=3))
        result = invoke(["gate", str(base), str(slow), "--summary", str(summary)])
        assert result.exit_code == 1, result.stdout + result.stderr
        assert f"| `effective_speedup` | {status}" in summary.read_text(), summary.read_text()


def test_playbook_refuses_a_fixed_run_of_another_model(tmp_path: Path, training: str) -> None:
    """The --fixed run is checked against the candidate as the baseline/candidate pair is (issue 25)."""
    out = tmp_path / "bundle"
    sparse = str(H200 / "trace_sparse_mlp_T2048.json.gz")
    refused = invoke(["playbook", "run", "--baseline", DENSE, "--candidate", sparse, "--fixed", training, "-o", str(out)])
    assert_clean_error(refused, 2, "trace_sparse_mlp_T2048 vs training: not comparable", "phase: inference vs training step")
    assert not out.exists() and not list(tmp_path.glob(".bundle*"))
