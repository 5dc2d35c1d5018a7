"""`sparsedebug classify` through the CLI: real H200 artifacts, run records, planted workloads, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from sparsedebug.core.io import save_record
from sparsedebug.records.classification import Classification, Fix, Mechanism
from sparsedebug.records.notes import Note
from sparsedebug.records.run import RunRecord
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.mechanisms_records import fix_words, proof_words
from sparsedebug.render.words.notes import say
from tests.conftest import FIXTURES, assert_clean_error, invoke

H200 = FIXTURES / "h200"
SPARSE = str(H200 / "trace_sparse_mlp_T2048.json.gz")
DENSE = str(H200 / "trace_dense_T2048.json.gz")
SMI = str(H200 / "nvidia_smi_short.csv")
NCU = str(H200 / "ncu_dense_vs_sparse_11008x4096x2048.csv")



def said(field: object) -> str:
    """A JSON detail, reason or capture as the renderers word it: a sentence, or a note in words."""
    return field if isinstance(field, str) else say(Note.model_validate(field))

def test_h200_traces_json_is_scheduling() -> None:
    result = invoke(["classify", SPARSE, "--baseline", DENSE, "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["kind"] == "classification"
    assert payload["winner"] == "scheduling"
    assert [s["rank"] for s in payload["scores"]] == [1, 2, 3, 4, 5]
    assert payload["scores"][0]["mechanism"] == "scheduling"
    fired = {e["rule"]: e for e in payload["evidence"] if e["fired"]}
    assert fired["scheduling.host_wait"]["value"] > 0.9
    assert fired["scheduling.overhead_regression"]["source"].startswith("schedule.")
    assert payload["fix"]["kind"] == "advice" and payload["fix"]["direction"] == "down"
    assert payload["proof"]["artifact"].endswith("trace_sparse_mlp_T2048.json.gz")
    cls = Classification.model_validate(payload)
    assert "trace_sparse_mlp_T2048.json.gz" in (proof_words(cls) or "")
    assert any("nvidia-smi --query-gpu" in say(m.capture) for m in cls.missing_for(Mechanism.THERMAL))


def test_h200_with_smi_and_ncu_people_output() -> None:
    result = invoke(["classify", SPARSE, "--baseline", DENSE, "--smi", SMI, "--ncu", NCU])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for needle in ("mechanisms for trace_sparse_mlp_T2048", "evidence", "thermal.throttle_time", "FIRED", "roofline: NVIDIA H200",
                   "dominant mechanism: scheduling", "proved by:", "smallest reversible test:"):
        assert needle in out, needle
    # progress goes to stderr, never into the tables
    assert "reading" in result.stderr and "reading" not in out


def test_h200_smi_thermal_only_from_the_runs_own_window() -> None:
    """The short smi log was captured at 23:42:23-43 UTC, two minutes after the eager traces (23:40:34-35): it covers
    neither, so it gives no thermal verdict; without a UTC offset it cannot be aligned at all (context only).
    The CUDA-graph trace (23:42:40) lies inside it."""
    unaligned = json.loads(invoke(["classify", SPARSE, "--baseline", DENSE, "--smi", SMI, "--json"]).stdout)
    aligned = json.loads(invoke(["classify", SPARSE, "--baseline", DENSE, "--smi", SMI, "--smi-utc-offset", "0", "--json"]).stdout)
    for payload, why in ((unaligned, "cannot be aligned"), (aligned, "no sample inside the run's window")):
        thermal = next(s for s in payload["scores"] if s["mechanism"] == "thermal")
        assert thermal["score"] == 0 and payload["winner"] != "thermal"
        lines = [e for e in Classification.model_validate(payload).evidence if e.rule in ("thermal.throttle_time", "thermal.clock_drop")]
        assert lines and all(not e.fired and why in evidence_words(e) for e in lines)
        assert SMI in payload["inputs"]
    graph = str(Path(SPARSE).with_name("trace_sparse_mlp_T2048_cudagraph.json.gz"))
    alone = json.loads(invoke(["classify", graph, "--smi", SMI, "--smi-utc-offset", "0", "--json"]).stdout)
    throttle = next(e for e in Classification.model_validate(alone).evidence if e.rule == "thermal.throttle_time")
    assert throttle.fired and "1 sample(s) in the run's window" in evidence_words(throttle)


def test_classify_a_saved_run_record(tmp_path: Path) -> None:
    from sparsedebug.sources.importers.trace.importer import import_trace

    record = tmp_path / "sparse.json"
    save_record(import_trace(Path(SPARSE)), record)
    result = invoke(["classify", str(record), "--json", "--gpu", "NVIDIA H100 PCIe"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["baseline"] is None
    assert payload["roofline"]["device"] == "NVIDIA H100 PCIe"
    assert payload["winner"] == "scheduling"


def test_planted_workload_pair_through_cli(tmp_path: Path) -> None:
    fp = tmp_path / "fp.yaml"
    assert invoke(["freeze", "--calibrate", "-o", str(fp)]).exit_code == 0
    planted = FIXTURES / "workloads" / "planted"
    result = invoke(
        ["classify", str(planted / "memory_small_blocks.yaml"), "--baseline", str(planted / "base.yaml"), "--fingerprint", str(fp), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["winner"] == "memory", (payload["established"], payload["attribution"])
    fix = payload["fix"]
    assert fix["rule"] in ("memory.gather_traffic", "memory.bytes_growth")
    assert {k: v for k, v in fix.items() if k not in ("rule", "text", "layer_role", "names_layer")} == {
        "kind": "block", "knob": None, "value": 16, "layer": None, "action": None, "metric": "busy_p50_ms", "direction": "down",
        "code": "block_size", "targets": [], "removes_ms": None, "basis": None, "was": 4,
    }
    assert "text" not in fix and "V from 4 to 16" in fix_words(Fix.model_validate(fix))
    assert payload["roofline"]["source"] == "calibration"


def test_missing_run_file(tmp_path: Path) -> None:
    assert_clean_error(invoke(["classify", str(tmp_path / "nope.json")]), 2, "nope.json: file not found")


def test_invalid_run_record_names_field(tmp_path: Path) -> None:
    bad = tmp_path / "run.json"
    bad.write_text(json.dumps({"kind": "run", "name": "x"}))
    result = invoke(["classify", str(bad)])
    assert_clean_error(result, 2, f"{bad}: source: missing field")


def test_bad_smi_and_ncu_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.csv"
    junk.write_text("hello\n")
    assert_clean_error(invoke(["classify", SPARSE, "--smi", str(junk)]), 2, "junk.csv")
    assert_clean_error(invoke(["classify", SPARSE, "--ncu", str(junk)]), 2, "junk.csv")


def test_bad_fingerprint_file(tmp_path: Path) -> None:
    fp = tmp_path / "fp.yaml"
    fp.write_text("kind: fingerprint\n")
    assert_clean_error(invoke(["classify", SPARSE, "--fingerprint", str(fp)]), 2, f"{fp}: created_at: missing field")


def test_help_is_worth_reading() -> None:
    result = invoke(["classify", "--help"])
    assert result.exit_code == 0
    for option in ("--baseline", "--ncu", "--smi", "--fingerprint", "--gpu", "--json"):
        assert option in result.stdout
    assert "compute, memory, scheduling" in result.stdout


def test_record_round_trip_is_unchanged(tmp_path: Path) -> None:
    from sparsedebug.sources.importers.trace.importer import import_trace

    record = import_trace(Path(DENSE))
    path = tmp_path / "dense.yaml"
    save_record(record, path)
    assert RunRecord.model_validate_json(record.model_dump_json()) == record
    assert invoke(["classify", str(path), "--json"]).exit_code == 0


def test_unknown_gpu_name_is_refused() -> None:
    assert_clean_error(invoke(["classify", SPARSE, "--gpu", "Tesla T4"]), 2, "--gpu 'Tesla T4': not in the peak-figure table", "NVIDIA H200 SXM")


def test_layer_raised_to_fp32_is_precision_evidence_through_cli(tmp_path: Path) -> None:
    from tests.classify.test_precision import raised_to_fp32

    base, cand = raised_to_fp32("l1")
    save_record(base, tmp_path / "base.json")
    save_record(cand, tmp_path / "cand.json")
    args = ["classify", str(tmp_path / "cand.json"), "--baseline", str(tmp_path / "base.json")]
    result = invoke([*args, "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    line = next(e for e in payload["evidence"] if e["rule"] == "precision.dtype_change")
    assert line["fired"] and line["value"] == 1.0 and "l1 fp16 -> fp32" in said(line["detail"])
    precision = next(s for s in payload["scores"] if s["mechanism"] == "precision")
    assert precision["status"] == "supported" and precision["score"] > 0
    people = invoke(args)
    assert people.exit_code == 0 and "l1 fp16 -> fp32" in people.stdout
    # compute (the fp32 layer fell back) scores too: the margin says it is a ratio of scores
    assert payload["margin"] is not None and f"{payload['margin']:.2f} times the runner-up's score" in people.stdout


def test_unannotated_h200_pair_is_scheduling_like_the_annotated_one() -> None:
    traces = FIXTURES / "traces"
    result = invoke(["classify", str(traces / "h200_sparse_mlp_unannotated.json.gz"), "--baseline", str(traces / "h200_dense_unannotated.json.gz"), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["winner"] == "scheduling"


def test_attention_moving_to_fp32_simt_is_precision_evidence_and_the_fix_names_the_cause() -> None:
    traces = FIXTURES / "traces"
    for base, cand, layer in (
        (DENSE, str(traces / "h200_dense_sdpa_math_fp32.json.gz"), "layers.0.self_attn.sdpa"),
        (str(traces / "h200_dense_unannotated.json.gz"), str(traces / "h200_dense_unannotated_sdpa_math_fp32.json.gz"),
         "scaled_dot_product_attention#0 [1x32x2048x128]"),
    ):
        result = invoke(["classify", cand, "--baseline", base, "--json"])
        assert result.exit_code == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["winner"] == "precision"
        evidence = next(e for e in payload["evidence"] if e["rule"] == "precision.dtype_change")
        assert evidence["fired"] and evidence["value"] == 4
        assert f"{layer} fp16 -> fp32 (attention -> fp32_gemm)" in said(evidence["detail"]) and "query dtype fp16 -> fp32" in said(evidence["detail"])
        fix = payload["fix"]
        # as wide as its cause: every attention layer whose query, key and value arrive in fp32, one group
        assert fix["layer"] == layer and fix["code"] == "cast_back" and fix["basis"] == "math_path_time"
        [group] = fix["targets"]
        assert group["cause"] == "dtype_change" and group["tensors"] == ["query", "key", "value"] and group["restore"] == "fp16"
        assert len(group["layers"]) == 4 and layer in group["layers"] and fix["removes_ms"] == group["removes_ms"] > 0
        model_fix = Classification.model_validate(payload).fix
        assert model_fix is not None
        fix_text = fix_words(model_fix)
        assert fix_text.startswith(f"cast the query, key and value of {layer}, ") and "(4 layers) back to fp16" in fix_text
