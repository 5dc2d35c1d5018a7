"""`sparsedebug audit --stack NAME==VERSION`: per-tensor verdicts from the shipped stack profiles, and the -0.0 rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from sparsedebug.records.notes import Note
from sparsedebug.render.words.notes import say
from tests.conftest import assert_clean_error, invoke


def _pruned(rng: np.random.Generator, out: int, k: int) -> np.ndarray:
    """fp16 2:4 with canonical (+0.0) zeros: the two largest |w| of each four kept."""
    w = rng.standard_normal((out, k)).astype(np.float16)
    groups = np.abs(w.astype(np.float32)).reshape(out, k // 4, 4)
    keep = np.argsort(groups, axis=2)[:, :, 2:]
    mask = np.zeros_like(groups, dtype=bool)
    np.put_along_axis(mask, keep, True, axis=2)
    return np.where(mask.reshape(out, k), w, np.float16(0.0))


def _planted(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    up = _pruned(rng, 64, 128)
    for row in (5, 9):
        zero = int(np.flatnonzero(up[row, :4] == 0)[0])
        up[row, zero] = np.float16(-0.0)  # a third "non-zero" in group 0 for a bitwise compressor
    tensors = {
        "model.layers.0.mlp.up_proj.weight": up,
        "model.layers.0.mlp.down_proj.weight": _pruned(rng, 64, 100),  # K=100: not a multiple of 16
        "model.layers.0.self_attn.q_proj.weight": _pruned(rng, 64, 128),
        "model.norm.weight": np.ones(128, dtype=np.float16),
    }
    path = tmp_path / "planted.safetensors"
    save_file(tensors, str(path))
    return path


def _by_name(data: dict) -> dict[str, dict]:
    return {t["name"]: t for t in data["tensors"]}


def test_planted_negative_zeros_and_misaligned_k_are_both_named(tmp_path: Path) -> None:
    path = _planted(tmp_path)
    result = invoke(["audit", str(path)])
    assert result.exit_code == 0, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert "2 element(s) stored as -0.0 in model.layers.0.mlp.up_proj.weight (rows 5, 9)" in text
    assert "2 group(s) compliant by value break 2:4 for a compressor that tests bits (rows 5, 9)" in text
    assert "shape not aligned on h200-cusparselt: model.layers.0.mlp.down_proj.weight 64x100" in text
    data = json.loads(invoke(["audit", str(path), "--json"]).stdout)
    tensors = _by_name(data)
    assert data["negative_zero_tensors"] == ["model.layers.0.mlp.up_proj.weight"]
    assert tensors["model.layers.0.mlp.up_proj.weight"]["status"] == "compliant"  # by value -0.0 is a zero
    assert tensors["model.layers.0.mlp.up_proj.weight"]["bitwise_violating_groups"] == 2
    assert tensors["model.layers.0.self_attn.q_proj.weight"]["negative_zeros"] == 0


def test_pytorch_stack_names_the_k_alignment_and_cites_the_h200_matrix(tmp_path: Path) -> None:
    data = json.loads(invoke(["audit", str(_planted(tmp_path)), "--stack", "pytorch==2.11.0", "--json"]).stdout)
    down = _by_name(data)["model.layers.0.mlp.down_proj.weight"]["stack"]
    assert down["verdict"] == "dense"
    finding = next(f for f in down["findings"] if f["rule"] == "alignment")
    assert finding["facts"]["code"] == "stack.k_alignment" and finding["facts"]["values"]["k"] == 100
    assert "K=100 (in features) is not a multiple of 16" in say(Note.model_validate(finding["facts"]))
    assert any(c["source"].startswith("fixtures/h200/results.json") for c in finding["cite"])
    q = _by_name(data)["model.layers.0.self_attn.q_proj.weight"]["stack"]
    assert q["verdict"] == "sparse" and q["path"] == "cusparselt"
    assert data["stack"] == "pytorch==2.11.0" and data["stack_counts"] == {"dense": 1, "sparse": 2}


def test_vllm_0_19_1_refuses_a_2of4_checkpoint_citing_pr_36799(tmp_path: Path) -> None:
    path = _planted(tmp_path)
    result = invoke(["audit", str(path), "--stack", "vllm==0.19.1", "--check"])
    assert result.exit_code == 1, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert "Sparse24 models are no longer supported by vLLM" in text
    assert "removed in vllm 0.19.1" in text and "vllm-project/vllm PR #36799" in text
    data = json.loads(invoke(["audit", str(path), "--stack", "vllm==0.19.1", "--json"]).stdout)
    matrices = [t for t in data["tensors"] if t["stack"] is not None]
    assert matrices and {t["stack"]["verdict"] for t in matrices} == {"dense"}
    assert all(any(f["rule"] == "removed" for f in t["stack"]["findings"]) for t in matrices)


def test_vllm_before_0_19_1_runs_int8_and_flags_negative_zero_for_its_bitwise_compressor(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    w = np.where(rng.random((64, 128)) < 0.5, rng.integers(1, 100, (64, 128)), 0).astype(np.int8)
    w.reshape(64, 32, 4)[:, :, 2:] = 0
    w.reshape(64, 32, 4)[:, :, :2] = 7
    up = _pruned(rng, 64, 128)
    up[3, int(np.flatnonzero(up[3, :4] == 0)[0])] = np.float16(-0.0)
    np.savez(tmp_path / "ckpt.npz", **{"layers.0.mlp.gate_proj.weight": w, "layers.0.mlp.up_proj.weight": up})
    data = json.loads(invoke(["audit", str(tmp_path / "ckpt.npz"), "--stack", "vllm==0.18.0", "--json"]).stdout)
    tensors = _by_name(data)
    gate = tensors["layers.0.mlp.gate_proj.weight"]["stack"]
    assert gate["verdict"] == "sparse" and gate["path"] == "ct-sparse24-cutlass"
    assert any(c["rule"] == "not_lowered" and "PR #11889" in c["cite"][0]["source"] for c in gate["caveats"])
    up_rules = {f["rule"] for f in tensors["layers.0.mlp.up_proj.weight"]["stack"]["findings"]}
    assert {"dtype", "negative_zero"} <= up_rules


def test_fp8_raw_negative_zero_byte_is_counted(tmp_path: Path) -> None:
    import struct

    rows, k = 32, 64
    raw = np.zeros((rows, k), dtype=np.uint8)
    raw.reshape(rows, k // 4, 4)[:, :, :2] = 0x38  # 1.0 in e4m3
    raw[4, 2] = 0x80  # -0.0
    header = json.dumps({"layers.0.mlp.up_proj.weight": {"dtype": "F8_E4M3", "shape": [rows, k], "data_offsets": [0, raw.size]}}).encode()
    (tmp_path / "fp8.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + raw.tobytes())
    data = json.loads(invoke(["audit", str(tmp_path / "fp8.safetensors"), "--json"]).stdout)
    t = data["tensors"][0]
    assert t["negative_zeros"] == 1 and t["negative_zero_rows"] == [4]
    assert t["status"] == "compliant" and t["bitwise_violating_groups"] == 1


def test_tensorrt_is_eligible_not_promised_and_torchao_removal_is_unknown_without_a_release(tmp_path: Path) -> None:
    path = _planted(tmp_path)
    trt = _by_name(json.loads(invoke(["audit", str(path), "--stack", "tensorrt==10.3", "--json"]).stdout))
    q = trt["model.layers.0.self_attn.q_proj.weight"]["stack"]
    assert q["verdict"] == "eligible" and any("#3849" in c["source"] for f in q["caveats"] for c in f["cite"])
    ao = _by_name(json.loads(invoke(["audit", str(path), "--stack", "torchao==0.14.0", "--json"]).stdout))
    q = ao["model.layers.0.self_attn.q_proj.weight"]["stack"]
    assert q["verdict"] == "unknown"
    removed = next(f for f in q["findings"] if f["rule"] == "removed")
    assert "2026-08-08" in say(Note.model_validate(removed["facts"])) and "pytorch/ao PR #4728" in removed["cite"][0]["source"]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("sglang==1.0", "unknown stack 'sglang'; known: pytorch, tensorrt, torchao, vllm"), ("vllm==", "no version after '=='"),
     ("vllm", "--stack 'vllm': no version; a stack's verdict depends on its release: write NAME==VERSION"), ("vllm==abc", "expected release numbers")],
)
def test_bad_stack_is_one_line_exit_2(tmp_path: Path, spec: str, needle: str) -> None:
    assert_clean_error(invoke(["audit", str(_planted(tmp_path)), "--stack", spec]), 2, needle)
