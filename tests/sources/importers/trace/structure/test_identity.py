"""Op identity from what the model called: unannotated H200 traces, attention backends, training phases, modules, torch.compile."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sparsedebug.records.run import KernelClass, KernelPath, OpKind
from sparsedebug.render.words.dispatch import trigger_words
from sparsedebug.render.words.notes import say
from sparsedebug.sources.importers.trace.importer import TraceImport, analyze_trace
from tests.conftest import FIXTURES
from tests.sources.importers.trace_variants import (
    drop_ops,
    edit_op_inputs,
    load,
    rename_ops,
    save,
    strip_annotations,
)

H200 = FIXTURES / "h200"
TRACES = FIXTURES / "traces"
DENSE, SPARSE = H200 / "trace_dense_T2048.json.gz", H200 / "trace_sparse_mlp_T2048.json.gz"


@pytest.fixture(scope="module")
def stripped() -> dict[str, TraceImport]:
    return {name: analyze_trace(TRACES / f"h200_{name}_unannotated.json.gz") for name in ("dense", "sparse_mlp")}


def test_unannotated_h200_traces_give_three_iterations_from_the_call_sequence(stripped: dict[str, TraceImport]) -> None:
    for result in stripped.values():
        s = result.summary
        assert s.iteration_source == "repeating call sequence" and len(s.iterations) == 3
        assert s.iteration_detail is not None and s.iteration_detail.code == "sources.iterations.repeating_calls"
        assert s.iteration_detail.values["units"] == 12 and s.iteration_detail.values["units_per_iteration"] == 4
        assert "4 units per iteration" in say(s.iteration_detail)
        assert not s.annotated and s.layer_sources == {"aten_op": 112}
        assert [it.gpu_ops for it in s.iterations] == [124, 124, 124]


def test_unannotated_layers_match_layer_by_layer_and_keep_what_annotations_showed(stripped: dict[str, TraceImport]) -> None:
    dense, sparse = stripped["dense"].record, stripped["sparse_mlp"].record
    assert [layer.name for layer in dense.lower.layers] == [layer.name for layer in sparse.lower.layers]
    sparse_layers = [layer.name for layer in sparse.lower.layers if layer.path is KernelPath.SPARSE]
    assert Counter(name.split(" ")[1] for name in sparse_layers) == {"[11008x4096]": 8, "[4096x11008]": 4}
    assert all(name.startswith("linear#") for name in sparse_layers)
    # same kernel time per class and the same timeline as the annotated import
    annotated = analyze_trace(SPARSE)
    assert stripped["sparse_mlp"].summary.busy_ms == pytest.approx(annotated.summary.busy_ms)
    assert sum(sum(k.samples_ms) for k in sparse.kernel.layers) == pytest.approx(sum(sum(k.samples_ms) for k in annotated.record.kernel.layers))
    by_kind = Counter(g.op for g in sparse.graph.layers)
    assert by_kind[OpKind.LINEAR] == 28 and by_kind[OpKind.ATTENTION] == 4


def test_shapes_come_from_the_top_level_op_not_the_compressed_child() -> None:
    record = analyze_trace(SPARSE).record
    gate = next(g for g in record.graph.layers if g.name == "layers.0.mlp.gate_proj")
    lower = next(lo for lo in record.lower.layers if lo.name == "layers.0.mlp.gate_proj")
    assert gate.weight_shape == [11008, 4096] and gate.op is OpKind.LINEAR  # _cslt_sparse_mm under it shows [11008, 2304]
    assert lower.dispatch is not None and lower.dispatch.backend == "cusparselt" and lower.dispatch.backend_op == "aten::_cslt_sparse_mm"


def test_kernel_classes_never_change_the_op_kind() -> None:
    result = analyze_trace(TRACES / "h200_dense_sdpa_math_fp32.json.gz")
    graph = {g.name: g for g in result.record.graph.layers}
    for lower in result.record.lower.layers:
        if lower.name.endswith(".sdpa"):
            assert lower.kernel_class is KernelClass.FP32_GEMM  # its kernels are SIMT sgemm now
            assert graph[lower.name].op is OpKind.ATTENTION and graph[lower.name].dtype == "fp32"
            assert lower.dispatch is not None and lower.dispatch.backend == "math"
            assert "fp32 inputs" in [trigger_words(t) for t in lower.dispatch.triggers]


def test_attention_backend_dtypes_strides_and_arguments_are_recorded() -> None:
    base = analyze_trace(DENSE).record
    cand = analyze_trace(TRACES / "h200_dense_sdpa_efficient_noncontig.json.gz").record
    before = next(lo for lo in base.lower.layers if lo.name == "layers.2.self_attn.sdpa").dispatch
    after = next(lo for lo in cand.lower.layers if lo.name == "layers.2.self_attn.sdpa").dispatch
    assert before is not None and after is not None
    assert (before.backend, after.backend) == ("cudnn", "efficient")
    assert before.input_dtypes == ["fp16", "fp16", "fp16"] and before.input_shapes[0] == [1, 32, 2048, 128]
    assert before.non_contiguous == [] and after.non_contiguous == [0]
    assert after.input_strides[0] == [8388608, 262144, 1, 2048]
    assert [trigger_words(t) for t in after.triggers] == ["query not contiguous (last-dim stride 2048)"]
    assert (after.is_causal, after.attn_mask, after.dropout_p, after.head_dim) == (True, False, 0.0, 128)


def test_other_backends_and_masks_from_renamed_ops(tmp_path: Path) -> None:
    doc = rename_ops(load(DENSE), {"aten::_scaled_dot_product_cudnn_attention": "aten::_scaled_dot_product_flash_attention"})
    doc = drop_ops(doc, {"aten::_cudnn_attention_forward"})
    mask = [[1, 32, 2048, 128]] * 3 + [[1, 1, 2048, 2048], [], [], [], []]
    doc = edit_op_inputs(doc, "aten::scaled_dot_product_attention", dims=mask, concrete=["", "", "", "", "0.1", "False", "", "False"])
    record = analyze_trace(save(strip_annotations(doc), tmp_path / "flash_mask.json.gz")).record
    attn = [lo for lo in record.lower.layers if lo.name.startswith("scaled_dot_product_attention#")]
    assert len(attn) == 4 and {lo.dispatch.backend for lo in attn if lo.dispatch} == {"flash"}
    triggers = [trigger_words(t) for t in attn[0].dispatch.triggers] if attn[0].dispatch else []
    assert "attn_mask passed" in triggers and "dropout_p 0.1" in triggers


def test_training_trace_phases_backward_names_and_communication() -> None:
    result = analyze_trace(TRACES / "training_step.json")
    s, record = result.summary, result.record
    assert s.iteration_source == "ProfilerStep" and len(s.iterations) == 3
    phases = {lo.name: lo.phase for lo in record.lower.layers}
    assert phases["linear#0 [32x16]"] == "forward" and phases["backward:linear#0 [32x16]"] == "backward"
    assert phases["optimizer:_foreach_add_#0"] == "optimizer" and phases["backward:AccumulateGrad#0"] == "backward"
    assert set(s.phases_ms) == {"forward", "backward", "optimizer"}
    classes = {lo.name: lo.kernel_class for lo in record.lower.layers}
    assert classes["backward:nccl:all_reduce"] is KernelClass.COMMUNICATION and classes["copy_#0 [8x16]"] is KernelClass.COPY
    assert s.by_class_ms["communication"] == pytest.approx(0.39) and "other" not in s.by_class_ms
    # the backward GEMMs of the linear layer: two per step, pooled into one call per step
    bwd = next(k for k in record.kernel.layers if k.name == "backward:linear#0 [32x16]")
    assert bwd.samples_ms == pytest.approx([0.050, 0.050, 0.050])
    assert [(st.stream, st.gpu_ops) for st in s.streams] == [(7, 33), (20, 3)]


def test_module_events_name_layers_by_module_path() -> None:
    record = analyze_trace(TRACES / "module_trace.json").record
    names = [lo.name for lo in record.lower.layers]
    assert names[:4] == ["TinyModel.Block.0.RMSNorm", "TinyModel.Block.0.Linear.0", "TinyModel.Block.0.Linear.1", "TinyModel.Block.0"]
    graph = {g.name: g for g in record.graph.layers}
    assert graph["TinyModel.Block.1"].op is OpKind.ATTENTION  # SDPA called in the block's own forward
    assert graph["TinyModel.Block.1.RMSNorm"].op is OpKind.NORM  # elementwise ops, kind from the module class
    assert graph["TinyModel.Block.1.Linear.1"].weight_shape == [256, 64]
    assert all(len(k.samples_ms) == 2 for k in record.kernel.layers)


def test_compiled_region_is_looked_into() -> None:
    record = analyze_trace(TRACES / "compiled_region.json").record
    assert [lo.name for lo in record.lower.layers] == ["triton_poi_fused_add_cos_sin_0#0 [10x10]", "mm#0 [10x10]", "triton_red_fused_sum_1#0 [10x10]"]
    kinds = [g.op for g in record.graph.layers]
    assert kinds == [OpKind.ELEMENTWISE, OpKind.LINEAR, OpKind.OTHER]
    assert record.lower.layers[1].kernel_class is KernelClass.FP32_GEMM


def test_renamed_layer_in_one_block_keeps_the_others_matched(tmp_path: Path) -> None:
    """Layer names are per (op, shape) ordinals: changing one op's shape renames that op's family only."""
    doc = strip_annotations(load(DENSE))
    for event in doc["traceEvents"]:
        if event.get("name") == "aten::silu":
            event["args"]["Input Dims"] = [[2048, 11264]]
    base = [lo.name for lo in analyze_trace(TRACES / "h200_dense_unannotated.json.gz").record.lower.layers]
    cand = [lo.name for lo in analyze_trace(save(doc, tmp_path / "silu.json.gz")).record.lower.layers]
    differ = [(b, c) for b, c in zip(base, cand, strict=True) if b != c]
    assert differ == [(f"silu#{i} [2048x11008]", f"silu#{i} [2048x11264]") for i in range(4)]
