"""Lowering profiles: the H200 rules reproduce all 80 real support rows; the CPU rules follow the kernels."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import parse_pattern
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath
from sparsedebug.render.words.notes import say
from sparsedebug.sources.workload.lowering import PROFILES, LayerQuery, get_profile, kernel_class, torch_semi_structured
from tests.conftest import FIXTURES

RESULTS = json.loads((FIXTURES / "h200" / "results.json").read_text())
SUPPORT: list[dict[str, Any]] = RESULTS["support"]


def test_fixture_has_all_80_rows() -> None:
    assert len(SUPPORT) == 80
    assert {row["backend"] for row in SUPPORT} == {"cusparselt", "cutlass"}


@pytest.mark.parametrize("row", SUPPORT, ids=lambda r: f"{r['backend']}-{r['dtype']}-{r['out']}x{r['in']}")
def test_torch_rules_reproduce_every_real_support_row(row: dict[str, Any]) -> None:
    got = torch_semi_structured(row["backend"], row["dtype"], row["out"], row["in"])
    assert got.convert == (row["convert"] == "ok")
    assert got.convert_error == row.get("convert_error")
    if row["convert"] == "ok":
        assert got.matmul == (row["matmul"] == "ok")
        assert got.matmul_error == row.get("matmul_error")
    else:
        assert got.matmul is None and "matmul" not in row


@pytest.mark.parametrize("row", SUPPORT, ids=lambda r: f"{r['backend']}-{r['dtype']}-{r['out']}x{r['in']}")
def test_h200_profiles_go_sparse_exactly_when_both_steps_worked(row: dict[str, Any]) -> None:
    profile = get_profile(f"h200-{row['backend']}")
    query = LayerQuery(name="w", op="linear", out=row["out"], k=row["in"], dtype=row["dtype"], pattern=parse_pattern("2:4"))
    decision = profile.decide(query)
    worked = row["convert"] == "ok" and row.get("matmul") == "ok"
    assert (decision.path is KernelPath.SPARSE) == worked
    if not worked:
        assert decision.reason in (
            FallbackReason.SHAPE_NOT_ALIGNED,
            FallbackReason.DTYPE_UNSUPPORTED,
            FallbackReason.OP_UNSUPPORTED,
        )
        error = row.get("convert_error") or row.get("matmul_error")
        assert isinstance(error, str) and decision.detail is not None and decision.detail.code == "targets.torch_raises"
        assert decision.detail.values["error"] == error and error in say(decision.detail)


def test_reasons_match_the_kind_of_torch_error() -> None:
    h200 = get_profile("h200-cusparselt")
    two_four = parse_pattern("2:4")
    shape = h200.decide(LayerQuery("w", "linear", 4100, 4096, "fp16", two_four))
    assert shape.reason is FallbackReason.SHAPE_NOT_ALIGNED
    dtype = h200.decide(LayerQuery("w", "linear", 4096, 4096, "fp32", two_four))
    assert dtype.reason is FallbackReason.DTYPE_UNSUPPORTED
    fp8 = h200.decide(LayerQuery("w", "linear", 4096, 4096, "fp8", two_four))
    assert fp8.reason is FallbackReason.DTYPE_UNSUPPORTED and fp8.detail is not None and fp8.detail.values["stage"] == "matmul"
    assert "matmul raises NotImplementedError" in say(fp8.detail)
    cutlass = get_profile("h200-cutlass").decide(LayerQuery("w", "linear", 4096, 4096, "fp16", two_four))
    assert cutlass.path is KernelPath.DENSE and cutlass.detail is not None and "compute capability 8.x" in say(cutlass.detail)


def test_h200_accepts_blocked_2_4_but_not_other_ratios_or_noncompliant_weights() -> None:
    h200 = get_profile("h200-cusparselt")
    assert h200.decide(LayerQuery("w", "linear", 512, 1376, "fp16", parse_pattern("64:2:4"))).path is KernelPath.SPARSE
    other = h200.decide(LayerQuery("w", "linear", 512, 1376, "fp16", parse_pattern("4:8")))
    assert other.reason is FallbackReason.PATTERN_NOT_COMPLIANT
    loose = h200.decide(LayerQuery("w", "linear", 512, 512, "bf16", parse_pattern("2:4"), compliant=False))
    assert loose.reason is FallbackReason.PATTERN_NOT_COMPLIANT


def test_cpu_numpy_rules() -> None:
    cpu = get_profile("cpu-numpy")
    for pattern in ("2:4", "1:8", "32:2:4", "3:16"):
        for dtype in ("fp32", "fp16", "bf16"):
            decision = cpu.decide(LayerQuery("w", "linear", 100, 48, dtype, parse_pattern(pattern)))
            assert decision.path is KernelPath.SPARSE, (pattern, dtype)
    assert "VNMWeight" in cpu.decide(LayerQuery("w", "linear", 8, 8, "fp32", parse_pattern("4:2:4"))).kernels[0]
    assert "NMWeight" in cpu.decide(LayerQuery("w", "linear", 8, 8, "fp32", parse_pattern("2:4"))).kernels[0]
    assert cpu.decide(LayerQuery("w", "linear", 8, 6, "fp32", parse_pattern("2:4"))).reason is FallbackReason.SHAPE_NOT_ALIGNED
    assert cpu.decide(LayerQuery("w", "linear", 8, 8, "int8", parse_pattern("2:4"))).reason is FallbackReason.DTYPE_UNSUPPORTED
    assert (
        cpu.decide(LayerQuery("w", "linear", 8, 8, "fp32", parse_pattern("2:4"), compliant=False)).reason
        is FallbackReason.PATTERN_NOT_COMPLIANT
    )


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_keeps_dense_ops_dense_and_refuses_sparse_non_linear(name: str) -> None:
    profile = PROFILES[name]
    dense = profile.decide(LayerQuery("fc", "linear", 512, 512, "fp16", None))
    assert dense.path is KernelPath.DENSE and dense.reason is FallbackReason.INTENDED_DENSE
    norm = profile.decide(LayerQuery("n", "norm", None, None, "fp16", None))
    assert norm.reason is FallbackReason.INTENDED_DENSE
    embed = profile.decide(LayerQuery("e", "embedding", 32000, 512, "fp16", parse_pattern("2:4")))
    assert embed.path is KernelPath.DENSE and embed.reason is FallbackReason.OP_UNSUPPORTED


def test_kernel_classes_and_unknown_names() -> None:
    assert kernel_class("linear", KernelPath.SPARSE, "fp16") is KernelClass.SPARSE_GEMM
    assert kernel_class("linear", KernelPath.DENSE, "fp32") is KernelClass.FP32_GEMM
    assert kernel_class("linear", KernelPath.DENSE, "bf16") is KernelClass.DENSE_TC_GEMM
    assert kernel_class("attention", KernelPath.DENSE, "fp16") is KernelClass.ATTENTION
    with pytest.raises(UserError, match="backend profile 'tpu'"):
        get_profile("tpu")
    with pytest.raises(UserError, match="dtype 'fp4'"):
        torch_semi_structured("cusparselt", "fp4", 16, 16)
