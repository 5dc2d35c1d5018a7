"""`sparsedebug bisect` through the CLI: traces, run records, workloads, JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sparsedebug.core.io import load_record, save_record
from sparsedebug.records.base import FACTS_SCHEMA_VERSION
from sparsedebug.records.findings import BisectResult
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath
from sparsedebug.render.words.locate_text import verdict_text
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.schema import save_workload
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.locate.test_walk import MLP, SPARSE, PathSpec, make_run
from tests.support.builders import mlp_chain

H200 = FIXTURES / "h200"


def test_eager_trace_pair_points_at_schedule() -> None:
    result = invoke(["bisect", str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz")])
    assert result.exit_code == 0, result.stderr
    assert "schedule <- first" in result.stdout
    assert "first persistent divergence: schedule" in result.stdout
    assert "layers.[0-3].mlp.gate_proj (4 pooled)" in result.stdout and "{i}" not in result.stdout
    assert "layers by contribution" in result.stdout


def test_cuda_graph_trace_pair_json_reports_improvement() -> None:
    result = invoke(["bisect", "--json", str(H200 / "trace_dense_T2048_cudagraph.json.gz"), str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz")])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    # 3 iterations a side: faster by its ratio, but too few for the one rule to judge (undecided, 6 a side needed)
    assert payload["state"] == "undecided" and payload["first_stage"] is None
    assert [s["stage"] for s in payload["stages"]] == ["graph", "lower", "kernel", "schedule", "outcome"]
    assert payload["outcome"]["direction"] == "same" and payload["outcome"]["enough_samples"] is False
    assert payload["outcome"]["ratio"] < 0.9 and payload["outcome"]["needed"] == 6
    assert [n["code"] for n in payload["verdict"]][:1] == ["locate.verdict.undecided"]
    assert "6 a side needed" in verdict_text(BisectResult.model_validate(payload))


def test_run_records_in_json_and_yaml(tmp_path: Path) -> None:
    fallback = "layers.1.mlp.down"
    path: dict[str, PathSpec] = {n: SPARSE for n in MLP if n != fallback}
    path[fallback] = (KernelPath.DENSE, FallbackReason.DTYPE_UNSUPPORTED, KernelClass.FP32_GEMM)
    base, cand = tmp_path / "base.json", tmp_path / "cand.yaml"
    save_record(make_run("dense", seed=1), base)
    save_record(make_run("cand", seed=2, intended={n: "2:4" for n in MLP}, path=path, scale={fallback: 2.0}), cand)
    result = invoke(["bisect", str(base), str(cand), "--layers", "3"])
    assert result.exit_code == 0, result.stderr
    assert "lower <- first" in result.stdout and "dtype_unsupported" in result.stdout
    payload = json.loads(invoke(["bisect", str(base), str(cand), "--json"]).stdout)
    assert payload["first_stage"] == "lower"
    assert payload["layers"][0]["layer"] == fallback


def test_workloads_are_replayed(tmp_path: Path) -> None:
    good = mlp_chain("good", [64, 128, 64], sequence=16, sparsity="2:4", backend="h200-cusparselt", precision="fp16", repeats=3)
    bad = revalidate(good.model_copy(update={"name": "bad", "layers": [l.model_copy(update={"dtype": "fp32"}) if l.name == "fc0" else l for l in good.layers]}))
    save_workload(good, tmp_path / "good.yaml")
    save_workload(bad, tmp_path / "bad.yaml")
    result = invoke(["bisect", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["first_stage"] == "lower"
    assert [f["layer"] for f in payload["stages"][1]["layers"] if f["regression"]] == ["fc0"]


def test_bad_inputs_are_one_clean_line(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    save_record(make_run("r", iterations=4), run)
    assert_clean_error(invoke(["bisect", str(run), str(tmp_path / "nope.json")]), 2, "nope.json", "not found")
    assert_clean_error(invoke(["bisect", str(run), str(run)]), 2, "same file")
    other = tmp_path / "fp.yaml"
    other.write_text("kind: fingerprint\n")
    assert_clean_error(invoke(["bisect", str(run), str(other)]), 2, "fp.yaml: kind")
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "run", "name": ')
    assert_clean_error(invoke(["bisect", str(run), str(broken)]), 2, "broken.json: malformed JSON")
    data = json.loads(run.read_text())
    del data["lower"]
    missing = tmp_path / "missing.yaml"
    missing.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["bisect", str(run), str(missing)]), 2, "missing.yaml: lower: missing field")
    truncated = tmp_path / "t.json.gz"
    truncated.write_bytes(b"\x1f\x8b\x08\x00garbage")
    result = invoke(["bisect", str(run), str(truncated)])
    assert_clean_error(result, 2, "t.json.gz")
    assert invoke(["bisect", str(run), str(run), "--min-effect", "0.5"]).exit_code == 2


def test_json_is_the_bisect_record(tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(make_run("b", seed=1), base)
    save_record(make_run("c", seed=2, scale={"layers.0.mlp.up": 1.5}), cand)
    result = invoke(["bisect", str(base), str(cand), "--json"])
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "bisect.json"
    out.write_text(result.stdout)
    record = load_record(out, BisectResult)
    assert record.schema_version == FACTS_SCHEMA_VERSION and record.first_stage == "kernel"
    assert list(json.loads(result.stdout))[:2] == ["schema_version", "base"]



def test_unannotated_trace_pair_points_at_schedule_like_the_annotated_one() -> None:
    traces = FIXTURES / "traces"
    result = invoke(["bisect", "--json", str(traces / "h200_dense_unannotated.json.gz"), str(traces / "h200_sparse_mlp_unannotated.json.gz")])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["state"] == "divergence" and payload["first_stage"] == "schedule"
    assert [s["status"] for s in payload["stages"][:2]] == ["expected", "expected"]
    pooled = {f["layer"]: len(f["members"]) for f in payload["stages"][3]["layers"] if f["regression"]}
    assert pooled == {"linear#{i} [11008x4096]": 8, "linear#{i} [4096x11008]": 4}


def test_attention_backend_change_is_staged_at_lower_with_backends_and_cause() -> None:
    traces = FIXTURES / "traces"
    result = invoke(["bisect", "--json", str(H200 / "trace_dense_T2048.json.gz"), str(traces / "h200_dense_sdpa_efficient_noncontig.json.gz")])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["first_stage"] == "lower"
    changed = [f for f in payload["stages"][1]["layers"] if f["kind"] == "path_changed"]
    assert [f["layer"] for f in changed] == [f"layers.{i}.self_attn.sdpa" for i in range(4)]
    for f in changed:
        assert (f["base_backend"], f["cand_backend"]) == ("cudnn", "efficient") and f["regression"]
        assert f["cause"] == [{"code": "non_contiguous", "tensor": "query", "was": "1", "now": "2048"}]
    people = invoke(["bisect", str(H200 / "trace_dense_T2048.json.gz"), str(traces / "h200_dense_sdpa_efficient_noncontig.json.gz")])
    text = " ".join(people.stdout.split())
    assert "first persistent divergence: lower" in text and "attention backend cudnn -> efficient" in text
    assert "cause seen in the trace: query not contiguous" in text


def test_unannotated_attention_move_to_fp32_math_is_staged_at_lower() -> None:
    traces = FIXTURES / "traces"
    result = invoke(["bisect", "--json", str(traces / "h200_dense_unannotated.json.gz"), str(traces / "h200_dense_unannotated_sdpa_math_fp32.json.gz")])
    payload = json.loads(result.stdout)
    assert payload["first_stage"] == "lower"
    changed = [f for f in payload["stages"][1]["layers"] if f["kind"] == "path_changed"]
    assert [f["layer"] for f in changed] == [f"scaled_dot_product_attention#{i} [1x32x2048x128]" for i in range(4)]
    assert all((f["base_backend"], f["cand_backend"]) == ("cudnn", "math") for f in changed)
    assert [(c["code"], c["tensor"], c["was"], c["now"]) for c in changed[0]["cause"]] == [("dtype_change", t, "fp16", "fp32") for t in ("query", "key", "value")]
    assert changed[0]["facts"]["code"] == "locate.finding.path_changed"
    assert (changed[0]["facts"]["values"]["before"], changed[0]["facts"]["values"]["after"]) == ("dense/attention", "dense/fp32_gemm")
