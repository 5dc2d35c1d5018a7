"""`sparsedebug import trace|ncu|smi|trtlog|trt-engine` and `sparsedebug fallbacks` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sparsedebug.records.run import RunRecord
from tests.conftest import FIXTURES, assert_clean_error, invoke

H200 = FIXTURES / "h200"
ART = FIXTURES / "artifacts"
SPARSE = str(H200 / "trace_sparse_mlp_T2048.json.gz")
DENSE = str(H200 / "trace_dense_T2048.json.gz")


def test_import_trace_prints_timeline_and_writes_record(tmp_path: Path) -> None:
    out = tmp_path / "run.yaml"
    result = invoke(["import", "trace", SPARSE, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "host wait" in text and "36.532" in text and "15.505" in text
    assert "sparse_gemm 12" in text
    assert "layers.0.mlp.down_proj" in text
    assert f"wrote {out}" in text
    record = RunRecord.model_validate(yaml.safe_load(out.read_text()))
    assert record.source.kind == "torch_trace" and len(record.lower.layers) == 44


def test_import_trace_json_is_pure_json() -> None:
    result = invoke(["import", "trace", SPARSE, "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["summary"]["busy_ms"] == pytest.approx(15.505, abs=1e-3)
    assert payload["summary"]["host_wait_ms"] > 0.9 * payload["summary"]["idle_ms"]
    RunRecord.model_validate(payload["record"])


def test_import_trace_without_annotations_names_layers_by_top_level_ops() -> None:
    result = invoke(["import", "trace", str(ART / "no_annotations.json"), "--layers", "0"])
    assert result.exit_code == 0, result.stderr
    assert "6 layers (3 from top-level ops, 3 from kernel names)" in " ".join(result.stdout.split())
    assert "layers of" not in result.stdout


def test_import_unannotated_h200_trace_shows_iterations_layers_and_hta_breakdown() -> None:
    result = invoke(["import", "trace", str(FIXTURES / "traces" / "h200_sparse_mlp_unannotated.json.gz"), "--layers", "12"])
    assert result.exit_code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "3 iterations from repeating call sequence" in out and "112 layers (112 from top-level ops)" in out
    assert "host gaps group 4 units per iteration" in out
    assert "temporal breakdown (Holistic Trace Analysis)" in out and "15.477" in out and "21.027" in out
    assert "linear#0 [4096x4096]" in out and "cudnn" in out


def test_import_cuda_graph_trace_says_layers_are_kernel_names() -> None:
    result = invoke(["import", "trace", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"), "--layers", "0"])
    assert result.exit_code == 0, result.stderr
    assert "CUDA-graph replay: no CPU ops under its kernels" in " ".join(result.stdout.split())


def test_import_training_trace_phases_streams_and_hta_last_step() -> None:
    training = str(FIXTURES / "traces" / "training_step.json")
    result = invoke(["import", "trace", training, "--layers", "0"])
    assert result.exit_code == 0, result.stderr
    assert "GPU busy by phase: forward" in result.stdout and "GPU streams" in result.stdout
    assert "last ProfilerStep dropped" in " ".join(result.stdout.split())
    dropped = json.loads(invoke(["import", "trace", training, "--json"]).stdout)["summary"]["temporal"][1]
    kept = json.loads(invoke(["import", "trace", training, "--json", "--include-last-step"]).stdout)["summary"]["temporal"][1]
    assert dropped["dropped_last_step"] and not kept["dropped_last_step"]
    assert (dropped["compute_ms"], kept["compute_ms"]) == pytest.approx((0.282, 0.423))


def test_import_trace_reports_skipped_events() -> None:
    result = invoke(["import", "trace", str(ART / "missing_fields.json")])
    assert result.exit_code == 0, result.stderr
    assert "skipped 1 event(s): kernel without numeric ts and dur" in result.stdout
    assert "skipped 1 event(s): kernel without numeric ts\n" in result.stdout


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("truncated_trace.json.gz", "truncated gzip"),
        ("cut_json_trace.json.gz", "truncated?"),
        ("cpu_only_trace.json", "no GPU activity"),
        ("not_a_trace.json", "no traceEvents"),
        ("missing.json", "file not found"),
    ],
)
def test_import_trace_bad_files_exit_2_and_write_nothing(tmp_path: Path, name: str, needle: str) -> None:
    out = tmp_path / "run.json"
    result = invoke(["import", "trace", str(ART / name), "-o", str(out)])
    assert_clean_error(result, 2, needle, name)
    assert not out.exists()
    assert len(result.stderr.strip().splitlines()) == 1


def test_import_ncu_table_and_json() -> None:
    ncu = str(H200 / "ncu_dense_vs_sparse_11008x4096x2048.csv")
    result = invoke(["import", "ncu", ncu])
    assert result.exit_code == 0, result.stderr
    assert "248.3" in result.stdout and "174.0" in result.stdout and "balanced" in result.stdout and "77,144" in result.stdout
    payload = json.loads(invoke(["import", "ncu", ncu, "--json"]).stdout)
    assert [k["bound"] for k in payload["kernels"]] == ["compute", "balanced"]
    assert_clean_error(invoke(["import", "ncu", str(ART / "ncu_raw_page.csv")]), 2, "--page details")


def test_import_smi_table_json_and_bad_option() -> None:
    smi = str(H200 / "nvidia_smi_short.csv")
    result = invoke(["import", "smi", smi])
    assert result.exit_code == 0, result.stderr
    assert "sw_power_cap" in result.stdout and "1980" in result.stdout
    payload = json.loads(invoke(["import", "smi", smi, "--json"]).stdout)
    assert payload["samples"] == [] and payload["summaries"][0]["max_sm_clock_mhz"] == 1980
    with_samples = json.loads(invoke(["import", "smi", smi, "--json", "--samples"]).stdout)
    assert len(with_samples["samples"]) == 83
    assert_clean_error(invoke(["import", "smi", smi, "--max-clock", "0"]), 2, "--max-clock")
    assert_clean_error(invoke(["import", "smi", str(ART / "smi_bad_reasons.csv")]), 2, "line 3")


def test_import_trtlog_check_exit_codes() -> None:
    log = str(ART / "trt_build_trtexec.log")
    result = invoke(["import", "trtlog", log])
    assert result.exit_code == 0, result.stderr
    assert "Conv_7 + Relu_8" in result.stdout and "dense fallback" in result.stdout
    assert invoke(["import", "trtlog", log, "--check"]).exit_code == 1
    assert invoke(["import", "trtlog", str(ART / "trt_build_legacy.log"), "--check"]).exit_code == 0
    payload = json.loads(invoke(["import", "trtlog", log, "--json"]).stdout)
    assert payload["fallback"] == ["Conv_7 + Relu_8", "MatMul_701"]
    none = invoke(["import", "trtlog", str(ART / "trt_build_no_sparsity.log")])
    assert none.exit_code == 0, none.stderr
    assert "no (Sparsity) lines" in none.stdout and "--sparsity=enable" in none.stdout


def test_fallbacks_between_traces_and_records(tmp_path: Path) -> None:
    result = invoke(["fallbacks", DENSE, SPARSE, "--check"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "12 changed; 0 unintended" in result.stdout
    # the candidate as a saved record, one neighbour pushed onto an fp32 GEMM
    cand = tmp_path / "cand.json"
    assert invoke(["import", "trace", SPARSE, "-o", str(cand), "--layers", "0"]).exit_code == 0
    data = json.loads(cand.read_text())
    layer = next(x for x in data["lower"]["layers"] if x["name"] == "layers.3.self_attn.o_proj")
    layer["kernels"], layer["kernel_class"] = ["ampere_sgemm_128x64_tn"], "fp32_gemm"
    cand.write_text(json.dumps(data))
    flagged = invoke(["fallbacks", DENSE, str(cand), "--check"])
    assert flagged.exit_code == 1
    assert "UNINTENDED" in flagged.stdout and "layers.3.self_attn.o_proj" in flagged.stdout
    payload = json.loads(invoke(["fallbacks", DENSE, str(cand), "--json"]).stdout)
    assert [c["layer"] for c in payload["unintended"]] == ["layers.3.self_attn.o_proj"]


def test_fallbacks_bad_record_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: run\nname: x\n")
    assert_clean_error(invoke(["fallbacks", DENSE, str(bad)]), 2, "bad.yaml")


def test_help_texts() -> None:
    for args in (["import", "--help"], ["import", "trace", "--help"], ["fallbacks", "--help"]):
        result = invoke(args)
        assert result.exit_code == 0
    assert "host wait" in invoke(["import", "trace", "--help"]).stdout
    assert "Speed-of-Light" in invoke(["import", "ncu", "--help"]).stdout


def test_fallbacks_name_an_attention_backend_change_and_its_cause() -> None:
    cand = str(FIXTURES / "traces" / "h200_dense_sdpa_efficient_noncontig.json.gz")
    result = invoke(["fallbacks", DENSE, cand, "--check"])
    assert result.exit_code == 1
    text = " ".join(result.stdout.split())
    assert "4 changed; 4 unintended" in text and "attention (cudnn)" in text and "attention (efficient)" in text
    assert "cause seen in the trace (layers.0.self_attn.sdpa, layers.1.self_attn.sdpa, layers.2.self_attn.sdpa and more): query not contiguous (last-dim stride 2048, was 1)" in text
    payload = json.loads(invoke(["fallbacks", DENSE, cand, "--json"]).stdout)
    assert [(c["layer"], c["base_backend"], c["cand_backend"]) for c in payload["unintended"]] == [
        (f"layers.{i}.self_attn.sdpa", "cudnn", "efficient") for i in range(4)
    ]


def test_fallbacks_between_unannotated_traces() -> None:
    traces = FIXTURES / "traces"
    result = invoke(["fallbacks", str(traces / "h200_dense_unannotated.json.gz"), str(traces / "h200_sparse_mlp_unannotated.json.gz"), "--check"])
    assert result.exit_code == 0, result.stdout
    assert "112 layers matched; 12 changed; 0 unintended" in " ".join(result.stdout.split())
