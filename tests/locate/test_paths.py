"""Dense-fallback counter: H200 dense vs sparse traces, an fp32 neighbour, a declared-sparse fallback."""

from __future__ import annotations

from sparsedebug.locate.paths import compare_paths
from sparsedebug.records.findings import PathChange
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath, RunRecord
from sparsedebug.sources.importers.trace.importer import import_trace
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"


def _pair() -> tuple[RunRecord, RunRecord]:
    return import_trace(H200 / "trace_dense_T2048.json.gz"), import_trace(H200 / "trace_sparse_mlp_T2048.json.gz")


def test_h200_sparse_mlp_has_twelve_declared_changes_and_no_unintended() -> None:
    dense, sparse = _pair()
    report = compare_paths(dense, sparse)
    assert report.matched_layers == 44
    assert len(report.changed) == 12
    assert {c.layer.split(".")[-1] for c in report.changed} == {"gate_proj", "up_proj", "down_proj"}
    assert all(c.base_class == "dense_tc_gemm" and c.cand_class == "sparse_gemm" and c.declared_sparse for c in report.changed)
    assert report.unintended == [] and report.dense_fallbacks == []
    assert all(c.cand_ms is not None and c.base_ms is not None and c.cand_ms < c.base_ms for c in report.changed)


def test_neighbour_on_fp32_path_is_unintended() -> None:
    dense, sparse = _pair()
    cand = sparse.model_copy(deep=True)
    attn = next(layer for layer in cand.lower.layers if layer.name == "layers.1.self_attn.o_proj")
    attn.kernels = ["ampere_sgemm_128x64_tn"]
    attn.kernel_class = KernelClass.FP32_GEMM
    report = compare_paths(dense, cand)
    assert [c.layer for c in report.unintended] == ["layers.1.self_attn.o_proj"]
    assert report.unintended[0].cand_class == "fp32_gemm" and report.unintended[0].cand_intended == "dense"
    assert len(report.changed) == 13


def test_declared_sparse_layer_that_ran_dense_is_a_fallback() -> None:
    dense, sparse = _pair()
    cand = sparse.model_copy(deep=True)
    lower = next(layer for layer in cand.lower.layers if layer.name == "layers.2.mlp.up_proj")
    lower.path, lower.reason = KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED
    base_layer = next(layer for layer in dense.lower.layers if layer.name == "layers.2.mlp.up_proj")
    lower.kernel_class, lower.kernels, lower.dispatch = KernelClass.DENSE_TC_GEMM, list(base_layer.kernels), base_layer.dispatch
    report = compare_paths(dense, cand)
    assert [f.layer for f in report.dense_fallbacks] == ["layers.2.mlp.up_proj"]
    assert report.dense_fallbacks[0].reason == "shape_not_aligned"
    assert "layers.2.mlp.up_proj" not in [c.layer for c in report.changed]


def test_reverse_direction_flags_every_sparse_layer_going_dense() -> None:
    dense, sparse = _pair()
    report = compare_paths(sparse, dense)
    assert len(report.unintended) == 12


def test_records_without_kernel_classes_compare_paths() -> None:
    dense, sparse = _pair()
    base, cand = dense.model_copy(deep=True), sparse.model_copy(deep=True)
    for record in (base, cand):
        for layer in record.lower.layers:
            layer.kernel_class, layer.kernels = None, []
    report = compare_paths(base, cand)
    assert len(report.changed) == 12 and report.unintended == []
    assert all(c.base_path == "dense" and c.cand_path == "sparse" for c in report.changed)


def _shown(change: PathChange) -> tuple[object, ...]:
    """What a fallbacks row shows of each side: path, class, the classes it ran, backend."""
    return (change.base_path, change.base_class, change.base_classes, change.base_backend)


def test_a_same_class_row_is_never_a_change() -> None:
    dense, sparse = _pair()
    cand = sparse.model_copy(deep=True)
    touched = []
    for layer in cand.lower.layers:
        if layer.dispatch is not None and layer.path is KernelPath.DENSE and layer.dispatch.input_strides:
            # the dispatcher saw a strided input, but the same backend ran the same kernels: the same path
            layer.dispatch = layer.dispatch.model_copy(update={"non_contiguous": [0]})
            touched.append(layer.name)
        if layer.kernels:
            layer.kernels = [*layer.kernels, "my_custom_kernel_v2"]  # a name that tells no class is no other path
    assert touched
    report = compare_paths(dense, cand)
    assert len(report.changed) == 12 and report.unintended == []
    for change in report.changed:
        assert _shown(change) != (change.cand_path, change.cand_class, change.cand_classes, change.cand_backend)
