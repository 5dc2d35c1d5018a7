"""`sparsedebug import trt-engine` and `import trtlog` on real TensorRT artifacts, and an engine pair through the playbook."""

from __future__ import annotations

import json
from pathlib import Path

from sparsedebug.records.run import RunRecord
from tests.conftest import assert_clean_error, invoke
from tests.support.engines import GRAPH, PROFILE, TRT, build_engine_pair


def test_import_trt_engine_prints_layers_with_tactic_precision_sparse_weights_and_time() -> None:
    result = invoke(["import", "trt-engine", str(GRAPH), "--profile", str(PROFILE), "--layers", "8", "--wide"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "73 layers on cuda:NVIDIA TITAN RTX" in out and "profiled over 6610 inferences" in out
    assert "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1" in out
    assert "CaskConvolution" in out and "int8" in out and "not eligible" in out
    assert "0.0086" in out and "1.9%" in out  # features.0.0's profiled median and share
    assert "sparse kernels used: no: none of trex__tests_mobilenet.qat.onnx's 53 layers with weights carries 2:4 weights" in out


def test_import_trt_engine_json_is_a_run_record_of_the_schema(tmp_path: Path) -> None:
    result = invoke(["import", "trt-engine", str(GRAPH), "--profile", str(PROFILE), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    record = RunRecord.model_validate(payload)
    assert record.source.kind == "trt_engine" and record.lower.layers[1].engine is not None
    schema = json.loads(invoke(["schema", "run"]).stdout)
    assert set(payload) <= set(schema["properties"])
    assert "engine" in schema["$defs"]["LowerLayer"]["properties"] and "EngineLayer" in schema["$defs"]
    out = tmp_path / "engine.run.json"
    assert invoke(["import", "trt-engine", str(GRAPH), "--profile", str(PROFILE), "-o", str(out)]).exit_code == 0
    assert RunRecord.model_validate_json(out.read_text()).name == "trex__tests_mobilenet.qat.onnx"


def test_import_trt_engine_bad_input_is_one_line() -> None:
    assert_clean_error(invoke(["import", "trt-engine", str(GRAPH)]), 2, "no time for this engine")
    assert_clean_error(invoke(["import", "trt-engine", str(TRT)]), 2, "2 log exports")
    assert_clean_error(invoke(["import", "trt-engine", str(PROFILE), "--profile", str(PROFILE)]), 2, "Layers")


def test_trtexec_log_sparsity_disabled_and_no_sparsity_are_findings_with_the_flag() -> None:
    disabled = invoke(["import", "trtlog", str(TRT / "superbench__tensorrt_inference.2.log")])
    assert disabled.exit_code == 0, disabled.stderr
    assert "Sparsity: Disabled (line 14)" in disabled.stdout and "trtexec --sparsity=enable" in disabled.stdout
    none = invoke(["import", "trtlog", str(TRT / "superbench__tensorrt_inference.1.log")])
    assert none.exit_code == 0, none.stderr
    assert "no (Sparsity) lines" in none.stdout and "shows no sparsity at all" in none.stdout and "--sparsity=enable" in none.stdout
    payload = json.loads(invoke(["import", "trtlog", str(TRT / "superbench__tensorrt_inference.2.log"), "--json"]).stdout)
    assert payload["build_sparsity"] == "disabled" and payload["enable_flags"][0] == "trtexec --sparsity=enable"


def test_dense_sparse_engine_pair_walks_the_playbook_to_a_memo_line(tmp_path: Path) -> None:
    pair = build_engine_pair(tmp_path / "engines")
    bisect = invoke(["bisect", str(pair.dense), str(pair.sparse), "--json"])
    assert bisect.exit_code == 0, bisect.stderr
    assert json.loads(bisect.stdout)["first_stage"] == "lower"
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(pair.dense), "--candidate", str(pair.sparse), "-o", str(out)])
    assert result.exit_code == 0, result.stdout + result.stderr
    memo = (out / "memo.md").read_text()
    lines = memo.splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith("- **Sparse kernels used**"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("- **"))
    line = "\n".join(lines[start:end])  # the answer, then its layers one a line when the names are long
    assert "yes: `sparse` ran a sparse tactic on 9 of 12 layers with 2:4 weights" in line
    assert all(f"`{name}`" in line for name in pair.not_picked[:3]) and "eligible but not picked" in line
    assert "largest per-layer change" in line and "-40.0%, profile median)" in line
    assert "per-layer time (profile median)" in (out / "report.md").read_text()
    manifest = json.loads((out / "bundle.json").read_text())
    assert [i["kind"] for i in manifest["inputs"]] == ["trt_engine", "trt_engine"]
