"""`fallbacks` on TensorRT engines built in different precisions: the dtype refusal, what --allow-different dtype
names, and no same-class row ever listed as a path change (engines generated from the real MobileNet-QAT export)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.sources.importers.tensorrt_engine import import_engine
from tests.conftest import assert_clean_error, invoke
from tests.support.engines import build_precision_engine

# Other tactic families of the same precision: a rebuild may pick any of them, and none is another path.
_FP16_TACTICS = (
    "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16",
    "turing_h1688cudnn_256x64_sliced1x2_ldg8_relu_exp_large_nhwc_tn_v1",
    "volta_h884cudnn_256x128_ldg8_relu_exp_medium_nhwc_tn_v1",
)
_INT8_TACTICS = (
    "ampere_fp32_icudnn_int8x4_128x128_relu_xregs_large_c32_nn_v1",
    "turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1",
    "sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_tilesize128x128x64_stage3",
)


def _retactic(folder: Path, tactics: tuple[str, ...]) -> Path:
    """Give the engine's convolutions other tactics of the same precision, in turn."""
    graph_file = folder / "engine.graph.json"
    graph = json.loads(graph_file.read_text())
    convs = [layer for layer in graph["Layers"] if layer.get("TacticName") and "simt" not in layer["TacticName"]]
    for k, layer in enumerate(convs):
        layer["TacticName"] = tactics[k % len(tactics)]
    graph_file.write_text(json.dumps(graph))
    return folder


def _fallbacks_json(base: Path, cand: Path, *extra: str) -> dict[str, object]:
    result = invoke(["fallbacks", str(base), str(cand), "--json", *extra])
    assert result.exit_code in (0, 1), (result.stdout, result.stderr)
    payload: dict[str, object] = json.loads(result.stdout)
    return payload


def test_fp16_vs_int8_is_refused_for_dtype_exactly_as_fp32_vs_fp16(tmp_path: Path) -> None:
    engines = {p: build_precision_engine(tmp_path / p, p) for p in ("fp32", "fp16", "int8")}
    for base, cand in (("fp32", "fp16"), ("fp16", "int8"), ("int8", "fp16")):
        result = invoke(["fallbacks", str(engines[base]), str(engines[cand]), "--check"])
        assert_clean_error(result, 2, f"not comparable: dtype: {base} vs {cand}:", "pass --allow-different dtype to compare anyway")


def test_allowed_dtype_names_the_int8_layers(tmp_path: Path) -> None:
    fp16, int8 = build_precision_engine(tmp_path / "fp16", "fp16"), build_precision_engine(tmp_path / "int8", "int8")
    result = invoke(["fallbacks", str(fp16), str(int8), "--allow-different", "dtype"])
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stderr.split())
    cand = import_engine(int8)
    moved = [g.name for g in cand.graph.layers if g.dtype == "int8" and g.op.value == "linear"]
    assert len(moved) == 53
    assert "compared although they differ (--allow-different): dtype: fp16 vs int8: 53 layers changed dtype" in said
    for name in moved[:3]:
        assert name in said


def test_fallbacks_check_lists_only_rows_whose_class_changed(tmp_path: Path) -> None:
    fp16, int8 = build_precision_engine(tmp_path / "fp16", "fp16"), build_precision_engine(tmp_path / "int8", "int8")
    for base, cand in ((fp16, int8), (int8, fp16)):
        report = _fallbacks_json(base, cand, "--allow-different", "dtype")
        changed = report["changed"]
        assert isinstance(changed, list)
        # the one real move: the classifier's INT8 conv runs f32 math on SIMT cores, the fp16 one an HMMA GEMM
        assert [(c["base_class"], c["cand_class"]) for c in changed] in ([("dense_tc_gemm", "fp32_gemm")], [("fp32_gemm", "dense_tc_gemm")])
        assert all(c["base_class"] != c["cand_class"] for c in changed)


@pytest.mark.parametrize(("precision", "tactics"), [("fp16", _FP16_TACTICS), ("int8", _INT8_TACTICS)])
def test_other_tactics_of_the_same_precision_are_no_path_change(tmp_path: Path, precision: str, tactics: tuple[str, ...]) -> None:
    base = build_precision_engine(tmp_path / "base", precision)
    cand = _retactic(build_precision_engine(tmp_path / "cand", precision, slowdown=1.1, seed=1), tactics)
    result = invoke(["fallbacks", str(base), str(cand), "--check"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "no matched layer changed kernel class (73 layers matched)" in " ".join(result.stdout.split())


def test_classify_names_the_int8_layers_and_claims_no_move_to_fp32(tmp_path: Path) -> None:
    fp16, int8 = build_precision_engine(tmp_path / "fp16", "fp16"), build_precision_engine(tmp_path / "int8", "int8")
    result = invoke(["classify", str(int8), "--baseline", str(fp16), "--allow-different", "dtype"])
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "dominant mechanism: precision" in said
    assert "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16) fp16 -> int8" in said
    assert "fp16 -> fp32" not in said
