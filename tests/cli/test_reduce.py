"""`sparsedebug reduce` through the CLI: the reproducer and its command, JSON, unreproducible, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.records.run import RunRecord
from sparsedebug.reduce.reduce import _Prober
from sparsedebug.sources.workload.load import load_workload, revalidate
from sparsedebug.sources.workload.schema import Workload, save_workload
from tests.conftest import assert_clean_error, invoke
from tests.locate.test_walk import make_run
from tests.support.builders import mlp_chain


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    good = mlp_chain("good", [64, 128, 128, 64], sequence=16, sparsity="2:4", backend="h200-cusparselt", precision="fp16", repeats=3)
    layers = [layer.model_copy(update={"dtype": "fp32"}) if layer.name == "fc1" else layer for layer in good.layers]
    bad = revalidate(good.model_copy(update={"name": "bad", "layers": layers, "conversion": "per_call"}))
    save_workload(good, tmp_path / "good.yaml")
    save_workload(bad, tmp_path / "bad.yaml")
    return tmp_path / "good.yaml", tmp_path / "bad.yaml"


def test_reduce_writes_a_reproducer_that_bisect_confirms(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path)
    out = tmp_path / "out" / "repro.yaml"
    out.parent.mkdir()
    result = invoke(["reduce", str(good), str(bad), "-o", str(out)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "reproduce with: sparsedebug bisect" in result.stdout
    assert "probe(s)" in result.stdout and "static graph+lowering" in result.stdout
    assert "probe 1 [changes]" in result.stderr  # progress goes to stderr
    repro = load_workload(out)
    base = load_workload(out.with_name("repro.base.yaml"))
    assert [layer.name for layer in repro.layers] == ["fc1"] and repro.layer("fc1").dtype == "fp32"
    assert [layer.name for layer in base.layers] == ["fc1"] and base.layer("fc1").dtype is None
    again = invoke(["bisect", str(out.with_name("repro.base.yaml")), str(out), "--json"])
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["first_stage"] == "lower"


def test_reduce_json_is_only_json(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path)
    result = invoke(["reduce", str(good), str(bad), "-o", str(tmp_path / "r.yaml"), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["target_finding"] == "fallback:dtype_unsupported"
    assert [c["key"] for c in payload["kept"]] == ["layer:fc1"]
    assert payload["other_causes"][0]["finding"] == "per_call_conversion"
    assert payload["probe_count"] == len(payload["probes"]) and payload["command"].endswith("r.yaml")


def test_unreproducible_regression_exits_1_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_timed_run(self: _Prober, workload: Workload, base_dir: object, repeats: int) -> RunRecord:
        self.replays += 1
        return make_run(workload.name, iterations=repeats, seed=self.replays, layers=[layer.name for layer in workload.layers])

    monkeypatch.setattr(_Prober, "timed_run", fake_timed_run)
    good = mlp_chain("good", [32, 64, 32], sequence=8, repeats=3)
    save_workload(good, tmp_path / "good.yaml")
    save_workload(good.model_copy(update={"name": "bad", "seed": 5}), tmp_path / "bad.yaml")
    out = tmp_path / "repro.yaml"
    result = invoke(["reduce", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "-o", str(out)])
    assert result.exit_code == 1
    assert "cannot reproduce a regression" in result.stdout
    assert not out.exists() and not (tmp_path / "repro.base.yaml").exists()


def test_reduce_bad_inputs(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path)
    assert_clean_error(invoke(["reduce", str(good), str(good)]), 2, "same file")
    assert_clean_error(invoke(["reduce", str(good), str(bad), "-o", str(tmp_path / "r.json")]), 2, "r.json", ".yaml")
    assert_clean_error(invoke(["reduce", str(good), str(bad), "-o", str(tmp_path / "no" / "r.yaml")]), 2, "does not exist")
    assert_clean_error(invoke(["reduce", str(good), str(tmp_path / "missing.yaml")]), 2, "missing.yaml", "not found")
    broken = tmp_path / "broken.yaml"
    broken.write_text(bad.read_text().replace("op: activation", "op: convolution", 1))
    assert_clean_error(invoke(["reduce", str(good), str(broken)]), 2, "broken.yaml", "act0")
    assert invoke(["reduce", str(good), str(bad), "--probe-repeats", "2"]).exit_code == 2
