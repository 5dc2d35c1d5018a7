"""Model workloads through the CLI: `lower`, `replay` and the whole `playbook run` walk on tiny checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.playbook.run import DEFAULT_BASELINE, DEFAULT_CANDIDATE
from sparsedebug.render.clocks import quotes_unlabelled_latency
from sparsedebug.sources.workload.load import load_workload
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.sources.replay.model_workloads import bert_pair, model_workload, write_workload


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return bert_pair(tmp_path_factory.mktemp("cli-models"))


def test_lower_and_replay_a_model_workload(pair: dict[str, Path], tmp_path: Path) -> None:
    result = invoke(["lower", str(pair["cand"]), "--json"])
    assert result.exit_code == 0, result.stderr
    lower = {layer["name"]: layer for layer in json.loads(result.stdout)["layers"]}
    assert lower["encoder.layer.1.output.dense"]["reason"] == "dtype_unsupported"
    out = tmp_path / "run.json"
    result = invoke(["replay", str(pair["cand"]), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "sentence-embedding cosine" in result.stdout and "sentences" in result.stdout
    run = json.loads(out.read_text())
    assert run["outcome"]["quality"]["evidence"]["text"] == str(pair["text"])


def test_bad_model_workloads_exit_2_with_one_line(pair: dict[str, Path], tmp_path: Path) -> None:
    data = model_workload(pair["bert"], pair["text"], layers=[{"name": "encoder.layer.7.output.dense"}])
    bad = write_workload(tmp_path / "bad.yaml", data)
    assert_clean_error(invoke(["replay", str(bad)]), 2, "layer 'encoder.layer.7.output.dense': model", "names look like")
    missing = write_workload(tmp_path / "missing.yaml", {**data, "model": str(tmp_path / "nowhere")})
    assert_clean_error(invoke(["lower", str(missing)]), 2, "not a known model")


def test_playbook_walk_on_a_model_pair_writes_a_memo_about_real_weights(pair: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(pair["base"]), "--candidate", str(pair["cand"]), "-o", str(out), "--repeats", "3"])
    assert result.exit_code == 0, result.stderr
    report = (out / "report.md").read_text()
    memo = report  # the memo's detail is in report.md
    assert "mean sentence-embedding cosine" in memo and "evaluation sentences" in memo and str(pair["text"]) in memo
    assert "Python " in memo and "vs the dense model's 1.0000" in memo
    assert "FFN neurons" in memo or "nothing to narrow" in memo
    assert "encoder.layer.1.output.dense" in memo and "dtype_unsupported" in memo
    assert "pattern(s): 2:4" in report and "layers: mlp" in report and f"calibration: {pair['text']}" in report
    assert "calibration_split: sentences_sha256_parity" in report
    reduce = json.loads((out / "reduce.json").read_text())
    assert reduce["reproduced"] and reduce["graph_source"] is not None and "kept whole" in report
    fixed = load_workload(out / "fixed.workload.yaml")
    assert fixed.model is not None and Path(fixed.model.name).is_absolute()
    _names_both_clocks_for_every_latency(memo)


def _names_both_clocks_for_every_latency(memo: str) -> None:
    """Baseline, candidate, fixed and the narrowed dense model: this machine, measured, and the target clock, projected."""
    assert [line for line in memo.splitlines() if quotes_unlabelled_latency(line)] == []
    latency = next(line for line in memo.splitlines() if "Latency, baseline" in line)
    assert latency.count("this machine, measured") == 2 and latency.count("on the target clock: h200-cusparselt") == 2
    for budget in [line for line in memo.splitlines() if "Latency budget" in line]:
        assert "this machine" in budget and "on the target clock" in budget
    assert "whole forward on the target clock: h200-cusparselt" in memo  # candidate -> fixed
    assert "p50 moved" in memo or "latency p50:" in memo
    assert "target clock, projected" in memo and "cross-check on this machine" in memo  # the narrowed dense model


def test_the_embedded_default_walk_is_the_real_minilm() -> None:
    base, cand = (load_workload(FIXTURES / "workloads" / f"{name}.yaml") for name in (DEFAULT_BASELINE, DEFAULT_CANDIDATE))
    assert base.model is not None and cand.model is not None and base.model.name == cand.model.name == "minilm-l6"
    assert cand.pruning.method == "wanda" and cand.pruning.pattern == "2:4" and cand.conversion == "per_call"
    assert [(layer.name, layer.dtype, layer.sparsity) for layer in cand.layers] == [("encoder.layer.3.output.dense", "fp32", "2:4")]


def test_the_blocked_fixture_is_faster_layout_on_the_cpu_profile() -> None:
    blocked = load_workload(FIXTURES / "workloads" / "minilm_2of4_blocked.yaml")
    assert blocked.model is not None and blocked.pruning.pattern == "64:2:4" and blocked.backend == "cpu-numpy"
    assert (blocked.precision, blocked.conversion, blocked.layers) == ("fp32", "once", [])
