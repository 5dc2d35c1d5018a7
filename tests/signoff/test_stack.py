"""signoff.stack: the stack rules against the H200 support matrix, and the layout, epilogue and consumer-op rules."""

from __future__ import annotations

import json

import pytest

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.kernels.masks import parse_pattern
from sparsedebug.render.words.notes import say
from sparsedebug.signoff.stack import TensorFacts, judge_on_stack, weight_layout
from sparsedebug.sources.stacks import parse_stack_spec
from tests.conftest import FIXTURES

SUPPORT = json.loads((FIXTURES / "h200" / "results.json").read_text())["support"]
TWO_FOUR = parse_pattern("2:4")


def _facts(name: str, dtype: str, out: int, k: int, **extra: object) -> TensorFacts:
    return TensorFacts(name, dtype, out, k, "compliant", TWO_FOUR, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("row", SUPPORT, ids=lambda r: f"{r['backend']}-{r['dtype']}-{r['out']}x{r['in']}")
def test_pytorch_profile_reproduces_every_row_of_the_h200_support_matrix(row: dict) -> None:
    spec = parse_stack_spec("pytorch==2.11.0")
    path = next(p for p in spec.profile.paths if p.id == row["backend"])
    profile = spec.profile.model_copy(update={"paths": [path]})
    dtype = canonical_dtype(row["dtype"])
    assert dtype is not None
    verdict = judge_on_stack(profile, spec.version, _facts("layers.0.mlp.up_proj.weight", dtype, row["out"], row["in"]))
    rules = {f.rule for f in verdict.findings}
    if row["convert"] == "error":
        # the error names the shape or the dtype: so does the verdict
        assert verdict.verdict == "dense"
        if "shape" in row["convert_error"]:
            assert "alignment" in rules, (rules, row["convert_error"])
        else:
            assert rules == {"dtype"}, (rules, row["convert_error"])
    elif row["backend"] == "cutlass":
        # converts; the matmul needs compute capability 8.x, which a checkpoint cannot tell: a caveat
        assert verdict.verdict == "sparse" and "8.x" in row["matmul_error"]
        assert any(c.rule == "capability" and say(c.facts).endswith("8.x") for c in verdict.caveats)
    elif row["matmul"] == "error":
        assert verdict.verdict == "dense" and "dtype" in rules and "mm is not supported" in row["matmul_error"]
    else:
        assert verdict.verdict == "sparse" and verdict.path == "cusparselt"


def test_fp8_conv1d_weight_has_no_sparse_layout_on_vllm_cutlass() -> None:
    spec = parse_stack_spec("vllm==0.18.0")
    assert weight_layout("h.0.mlp.c_fc.weight") == "col" and weight_layout("layers.0.mlp.up_proj.weight") == "row"
    col = judge_on_stack(spec.profile, spec.version, _facts("h.0.mlp.c_fc.weight", "fp8_e4m3", 768, 3072))
    assert col.verdict == "dense"
    (layout,) = [f for f in col.findings if f.rule == "layout"]
    assert "A row-major and sparse x B column-major and dense" in say(layout.facts)
    assert any("cutlass issue #2029" in c.source for c in layout.cite)
    row = judge_on_stack(spec.profile, spec.version, _facts("layers.0.mlp.up_proj.weight", "fp8_e4m3", 768, 3072))
    assert row.verdict == "sparse"


def test_tensorrt_int8_names_the_int8_out_epilogue() -> None:
    spec = parse_stack_spec("tensorrt==10.3")
    verdict = judge_on_stack(spec.profile, spec.version, _facts("layers.0.mlp.up_proj.weight", "int8", 4096, 4096))
    assert verdict.verdict == "eligible"
    (epilogue,) = [c for c in verdict.caveats if c.rule == "epilogue"]
    assert "INT8 output" in say(epilogue.facts) and any("Model-Optimizer PR #1664" in c.source for c in epilogue.cite)
    fp16 = judge_on_stack(spec.profile, spec.version, _facts("layers.0.mlp.up_proj.weight", "fp16", 4096, 4096))
    assert not [c for c in fp16.caveats if c.rule == "epilogue"]


def test_compliant_embedding_is_not_lowered_sparse_and_bf16_is_dense_on_vllm() -> None:
    spec = parse_stack_spec("pytorch==2.11.0")
    emb = judge_on_stack(spec.profile, spec.version, _facts("model.embed_tokens.weight", "fp16", 32000, 4096))
    assert emb.verdict == "dense" and emb.consumer == "embedding" and {f.rule for f in emb.findings} == {"not_lowered"}
    vllm = parse_stack_spec("vllm==0.18.0")
    bf16 = judge_on_stack(vllm.profile, vllm.version, _facts("layers.0.mlp.up_proj.weight", "bf16", 4096, 4096))
    assert bf16.verdict == "dense" and {f.rule for f in bf16.findings} == {"dtype"}


def test_a_version_other_than_the_measured_one_is_a_caveat() -> None:
    spec = parse_stack_spec("pytorch==2.9.1")
    verdict = judge_on_stack(spec.profile, spec.version, _facts("layers.0.mlp.up_proj.weight", "fp16", 4096, 4096))
    assert verdict.verdict == "sparse"
    assert any(c.rule == "measured" and "2.9.1 was not measured" in say(c.facts) for c in verdict.caveats)
