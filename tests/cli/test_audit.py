"""`sparsedebug audit`: a planted non-compliant tensor in a 2:4 checkpoint fails --check; pruned and dense ones do not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from sparsedebug.kernels.masks import nm_mask
from tests.conftest import assert_clean_error, invoke


def _checkpoint(tmp_path: Path, *, plant: bool, prune: bool = True) -> Path:
    rng = np.random.default_rng(1)
    tensors = {}
    for i in range(3):
        w = rng.standard_normal((32, 64)).astype(np.float16)
        tensors[f"layers.{i}.mlp.up_proj.weight"] = (w * nm_mask(w.astype(np.float32), 2, 4)).astype(np.float16) if prune else w
    tensors["layers.0.norm.weight"] = np.ones(64, dtype=np.float16)
    if plant:
        bad = tensors["layers.1.mlp.up_proj.weight"].copy()
        bad[7, 8:12] = 1.0
        bad[20, 0:4] = 1.0
        tensors["layers.1.mlp.up_proj.weight"] = bad
    path = tmp_path / ("planted.safetensors" if plant else "ok.safetensors")
    save_file(tensors, str(path))
    return path


def test_planted_violation_fails_check_and_names_rows(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path, plant=True)
    result = invoke(["audit", str(path), "--check"])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "layers.1.mlp.up_proj.weight (rows 7, 20)" in result.stdout
    data = json.loads(invoke(["audit", str(path), "--json"]).stdout)
    assert data["kind"] == "checkpoint_audit" and data["failing"] == ["layers.1.mlp.up_proj.weight"]
    statuses = {t["name"]: t["status"] for t in data["tensors"]}
    assert statuses["layers.0.mlp.up_proj.weight"] == "compliant"
    assert statuses["layers.0.norm.weight"] == "not_a_matrix"


def test_compliant_checkpoint_passes_and_runs_sparse_on_h200(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path, plant=False)
    result = invoke(["audit", str(path), "--check", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    matrices = [t for t in data["tensors"] if t["status"] != "not_a_matrix"]
    assert {t["status"] for t in matrices} == {"compliant"}
    # fp16 2:4 32x64: the H200 cuSPARSELt profile's rules decide (shape alignment among them); the reason is named.
    assert all(t["backend_path"] == "sparse" or t["backend_reason"] for t in matrices)


def test_dense_checkpoint_audits_as_dense_not_violations(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path, plant=False, prune=False)
    result = invoke(["audit", str(path), "--check", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["failing"] == [] and data["counts"]["dense"] == 3
    assert all(t["backend_judged"] == "once_pruned" for t in data["tensors"] if t["status"] == "dense")


def test_fp32_on_cusparselt_says_why_it_stays_dense(tmp_path: Path) -> None:
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    save_file({"fc.weight": w * nm_mask(w, 2, 4)}, str(tmp_path / "f.safetensors"))
    data = json.loads(invoke(["audit", str(tmp_path / "f.safetensors"), "--json"]).stdout)
    (t,) = data["tensors"]
    assert t["backend_path"] == "dense" and t["backend_reason"] == "dtype_unsupported"
    cpu = json.loads(invoke(["audit", str(tmp_path / "f.safetensors"), "--backend", "cpu-numpy", "--json"]).stdout)
    assert cpu["tensors"][0]["backend_path"] == "sparse"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["audit", "missing.safetensors"], "file not found"),
        (["audit", "PATH", "--pattern", "5:4"], "5:4"),
        (["audit", "PATH", "--backend", "tpu"], "backend profile 'tpu'"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    path = _checkpoint(tmp_path, plant=False)
    assert_clean_error(invoke([str(path) if a == "PATH" else a for a in args]), 2, needle)


def _gguf(tmp_path: Path, *, plant: bool) -> Path:
    """A GGUF holding 2:4 matrices stored as F32 and F16, one stored quantized (Q8_0) and a norm vector."""
    import gguf
    from gguf import GGMLQuantizationType, quants

    rng = np.random.default_rng(3)
    path = tmp_path / ("planted.gguf" if plant else "ok.gguf")
    writer = gguf.GGUFWriter(str(path), "llama")

    def pruned(shape: tuple[int, int]) -> np.ndarray:
        w = rng.standard_normal(shape).astype(np.float32)
        return (w * nm_mask(w, 2, 4)).astype(np.float32)

    up = pruned((32, 64))
    if plant:
        up[5, 4:8] = 1.0
    writer.add_tensor("blk.0.ffn_up.weight", up)
    writer.add_tensor("blk.0.ffn_down.weight", pruned((64, 32)).astype(np.float16))
    writer.add_tensor("blk.0.attn_q.weight", quants.quantize(pruned((32, 64)), GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_checkpoints_audit_by_stored_type(tmp_path: Path) -> None:
    ok = _gguf(tmp_path, plant=False)
    result = invoke(["audit", str(ok), "--check", "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    tensors = {t["name"]: t for t in json.loads(result.stdout)["tensors"]}
    up, down, q = tensors["blk.0.ffn_up.weight"], tensors["blk.0.ffn_down.weight"], tensors["blk.0.attn_q.weight"]
    assert (up["dtype"], up["status"], up["backend_reason"]) == ("fp32", "compliant", "dtype_unsupported")
    assert (down["dtype"], down["status"], down["backend_path"]) == ("fp16", "compliant", "sparse")
    assert q["dtype"] == "q8_0" and q["backend_reason"] == "dtype_unsupported" and q["backend_detail"]["code"] == "targets.stored_format_unknown"
    assert q["backend_detail"]["values"]["dtype"] == "q8_0"
    assert tensors["blk.0.attn_norm.weight"]["status"] == "not_a_matrix"
    planted = invoke(["audit", str(_gguf(tmp_path, plant=True)), "--check"])
    assert planted.exit_code == 1 and "blk.0.ffn_up.weight (rows 5)" in planted.stdout
