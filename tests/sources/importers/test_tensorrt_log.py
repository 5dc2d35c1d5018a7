"""TensorRT build logs: both prefixes, fused names, empty lists; no sparsity lines and Sparsity: Disabled are findings."""

from __future__ import annotations

from pathlib import Path

from sparsedebug.records.engine import BuildSparsity
from sparsedebug.sources.importers.tensorrt_log import load_trt_log, split_layers
from tests.conftest import FIXTURES

ART = FIXTURES / "artifacts"
TRT = FIXTURES / "trt"


def test_trtexec_log_fallbacks_keep_fused_names() -> None:
    report = load_trt_log(ART / "trt_build_trtexec.log")
    assert report.eligible == ["Conv_3 + Relu_4", "Conv_7 + Relu_8", "Conv_619 + Relu_620", "MatMul_701", "Gemm_705"]
    assert report.picked == ["Conv_3 + Relu_4", "Conv_619 + Relu_620", "Gemm_705"]
    assert report.fallback == ["Conv_7 + Relu_8", "MatMul_701"]
    assert report.eligible_lines == [4] and report.picked_lines == [5] and report.complete


def test_legacy_prefix_all_picked() -> None:
    report = load_trt_log(ART / "trt_build_legacy.log")
    assert report.eligible == ["conv1 + relu1", "conv2", "fc1"]
    assert report.fallback == []


def test_empty_lists() -> None:
    report = load_trt_log(ART / "trt_build_empty_lists.log")
    assert report.eligible == [] and report.picked == [] and report.fallback == [] and report.complete


def test_no_sparsity_lines_is_a_finding_with_the_enabling_flag() -> None:
    report = load_trt_log(ART / "trt_build_no_sparsity.log")
    assert not report.sparsity_lines and report.eligible == [] and report.fallback == []
    assert "trtexec --sparsity=enable" in report.enable_flags


def test_real_trtexec_log_with_sparsity_disabled() -> None:
    report = load_trt_log(TRT / "superbench__tensorrt_inference.2.log")
    assert report.build_sparsity is BuildSparsity.DISABLED and report.build_sparsity_line == 14
    assert report.enable_flags == ["trtexec --sparsity=enable", "BuilderFlag.SPARSE_WEIGHTS"]


def test_real_trtexec_log_without_sparsity() -> None:
    report = load_trt_log(TRT / "superbench__tensorrt_inference.1.log")
    assert report.build_sparsity is BuildSparsity.NOT_SAID and not report.sparsity_lines and report.enable_flags


def test_sparsity_enabled_without_verbose_lines_needs_no_flag(tmp_path: Path) -> None:
    log = tmp_path / "b.log"
    log.write_text("[12/01/2026-10:00:00] [I] Sparsity: Enabled\n[12/01/2026-10:00:00] [I] Precision: FP16\n")
    report = load_trt_log(log)
    assert report.build_sparsity is BuildSparsity.ENABLED and not report.sparsity_lines and report.enable_flags == []


def test_split_layers() -> None:
    assert split_layers(" A + B ,C,, D ") == ["A + B", "C", "D"]
    assert split_layers("   ") == []
