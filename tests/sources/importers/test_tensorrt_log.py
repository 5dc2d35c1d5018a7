"""TensorRT build logs: both prefixes, fused names, empty lists, no sparsity lines."""

from __future__ import annotations

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.importers.tensorrt_log import load_trt_log, split_layers
from tests.conftest import FIXTURES

ART = FIXTURES / "artifacts"


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


def test_no_sparsity_lines_is_a_user_error() -> None:
    with pytest.raises(UserError, match="sparsity enabled"):
        load_trt_log(ART / "trt_build_no_sparsity.log")


def test_split_layers() -> None:
    assert split_layers(" A + B ,C,, D ") == ["A + B", "C", "D"]
    assert split_layers("   ") == []
