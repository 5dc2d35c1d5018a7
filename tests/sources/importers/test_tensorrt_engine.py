"""TensorRT engine exports: the real MobileNet-QAT export, built dense/sparse pairs, folders, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.locate.lower import sparse_use
from sparsedebug.records.engine import BuildSparsity, NotSparse
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath, OpKind
from sparsedebug.sources.importers.tensorrt_engine import import_engine
from sparsedebug.sources.importers.tensorrt_precision import layer_precision, precision_of
from tests.support.engines import GRAPH, PROFILE, TRT, build_engine_pair


def test_real_mobilenet_export_layers_tactics_precision_and_time() -> None:
    run = import_engine(GRAPH, profile=PROFILE)
    assert run.source.kind == "trt_engine" and len(run.lower.layers) == 73
    assert run.device is not None and run.device.name == "NVIDIA TITAN RTX" and run.device.compute_capability == "7.5"
    assert run.source.engine is not None and run.source.engine.profiled_runs == 6610 and run.source.engine.precision == "FP32+FP16+INT8"
    conv = next(layer for layer in run.lower.layers if layer.name.startswith("features.0.0.weight"))
    assert conv.engine is not None and conv.engine.tactic == "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1"
    assert conv.engine.precision == "int8" and conv.engine.sparse_weights is False and conv.engine.weights == 864
    assert conv.engine.median_ms == pytest.approx(0.008608) and conv.engine.share == pytest.approx(0.0185433)
    assert conv.path is KernelPath.DENSE and conv.engine.not_sparse is NotSparse.NOT_ELIGIBLE
    graph = {g.name: g for g in run.graph.layers}
    assert graph[conv.name].op is OpKind.LINEAR and graph[conv.name].weight_shape == [32, 27]
    assert graph[conv.name].flops == pytest.approx(2 * 864 * 32 * 112 * 112 / 32)
    reformat = run.lower.layers[0]
    assert reformat.engine is not None and reformat.engine.not_sparse is None and reformat.kernel_class is KernelClass.COPY
    # the kernel stage's layer times are the profile's medians; the outcome, the profiled inference
    assert sum(k.samples_ms[0] for k in run.kernel.layers) == pytest.approx(run.outcome.latency_samples_ms[0])
    use = sparse_use(run)
    assert use is not None and use.sparse == [] and use.sparse_weights == [] and use.weighted == 53


def test_built_pair_says_which_layers_ran_sparse_and_which_were_not_picked(tmp_path: Path) -> None:
    pair = build_engine_pair(tmp_path, sparse_layers=6, picked=4, inferences=50)
    dense, sparse = import_engine(pair.dense), import_engine(pair.sparse)
    assert dense.name == "dense" and sparse.name == "sparse"
    assert len(sparse.outcome.latency_samples_ms) == 50 and sparse.source.engine is not None and sparse.source.engine.times == 50
    assert sparse.device is not None and sparse.device.name == "NVIDIA A100-SXM4-40GB"
    by_name = {layer.name: layer for layer in sparse.lower.layers}
    for name in pair.picked:
        layer = by_name[name]
        assert layer.path is KernelPath.SPARSE and layer.kernel_class is KernelClass.SPARSE_GEMM
        assert layer.engine is not None and layer.engine.sparse_tactic and layer.engine.picked and layer.engine.eligible
    for name in pair.not_picked:
        layer = by_name[name]
        assert layer.path is KernelPath.DENSE and layer.reason is FallbackReason.SLOWER_THAN_DENSE
        assert layer.engine is not None and layer.engine.not_sparse is NotSparse.NOT_PICKED and layer.engine.eligible and not layer.engine.picked
    use = sparse_use(sparse)
    assert use is not None and use.sparse == pair.picked and use.not_picked == pair.not_picked
    # the dense build says Sparsity: Disabled: every weighted layer is dense for that reason, with the flag
    d_use = sparse_use(dense)
    assert d_use is not None and d_use.build_disabled and "trtexec --sparsity=enable" in d_use.enable_flags
    assert dense.source.engine is not None and dense.source.engine.build_sparsity is BuildSparsity.DISABLED
    # the timed inferences are enqueued after the previous one ended: the idle between them is host wait
    assert sparse.schedule.host_wait_ms == pytest.approx(49 * 0.002) and sparse.schedule.kernel_wait_ms == 0
    b = {k.name: k.samples_ms[0] for k in dense.kernel.layers}
    c = {k.name: k.samples_ms[0] for k in sparse.kernel.layers}
    assert all(c[n] == pytest.approx(0.6 * b[n]) for n in pair.picked)


def test_a_folder_with_two_engines_or_no_time_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.graph.json").write_text(GRAPH.read_text())
    with pytest.raises(UserError, match="no time for this engine"):
        import_engine(tmp_path)
    (tmp_path / "b.graph.json").write_text(GRAPH.read_text())
    with pytest.raises(UserError, match="2 graph exports"):
        import_engine(tmp_path)


def test_bad_exports_name_the_file_and_field(tmp_path: Path) -> None:
    profile = json.loads(PROFILE.read_text())
    profile[2]["medianMs"] = -1
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps(profile))
    with pytest.raises(UserError, match=r"p\.json: layer 'features.0.0.weight .*': medianMs"):
        import_engine(GRAPH, profile=bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"count": 3}, {"name": "not_a_layer", "averageMs": 1.0, "medianMs": 1.0}]))
    with pytest.raises(UserError, match="different engines"):
        import_engine(GRAPH, profile=other)
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"Layers": [{"LayerType": "x"}]}))
    with pytest.raises(UserError, match=r"Layers\[0\]"):
        import_engine(graph, profile=PROFILE)


def test_precision_from_tensorrt_format_texts() -> None:
    assert precision_of("Row major linear FP32") == "fp32"
    assert precision_of("Thirty-two wide channel vectorized row major Int8 format") == "int8"
    assert precision_of("Channel major FP16 format where channel % 8 == 0") == "fp16"
    assert precision_of("Half") == "fp16" and precision_of(None) is None


def test_the_shared_folder_files_are_the_real_ones() -> None:
    assert (TRT / "README.md").read_text().count("Apache-2.0") >= 3


def test_qat_export_layers_take_their_precision_from_tactic_and_inputs_not_outputs() -> None:
    run = import_engine(GRAPH, profile=PROFILE)
    graph = {g.name: g for g in run.graph.layers}
    weighted = [lo for lo in run.lower.layers if lo.engine is not None and lo.engine.weights]
    assert len(weighted) == 53 and {graph[lo.name].dtype for lo in weighted} == {"int8"}
    assert {lo.engine.precision for lo in weighted if lo.engine is not None} == {"int8"}
    # INT8 convolutions that write FP16 or FP32 (turing_fp16_i8816cudnn_int8, volta_fp32_i8816cudnn_int8) are int8 GEMMs
    dequantizing = [lo for lo in weighted if lo.engine is not None and lo.engine.tactic and "i8816cudnn" in lo.engine.tactic]
    assert len(dequantizing) == 16 and all(lo.kernel_class is KernelClass.DENSE_TC_GEMM for lo in dequantizing)
    assert {k.precision for k in run.kernel.layers if k.name in {lo.name for lo in weighted}} == {"int8"}


@pytest.mark.parametrize(
    ("layer", "tactic", "expected"),
    [
        ({"Precision": "Half", "Inputs": [{"Format/Datatype": "Int8"}]}, "volta_scudnn_128x64_relu_interior_nn_v1", "fp16"),
        ({"Precision": "N/A", "Inputs": [{"Format/Datatype": "Int8"}]}, "ampere_h16816cudnn_256x128_ldg8_relu_exp_small_nhwc_tn_v1", "fp16"),
        ({"Inputs": [{"Format/Datatype": "Row major linear FP32"}], "Outputs": [{"Format/Datatype": "Row major linear FP32"}]},
         "ampere_fp32_icudnn_int8x4_128x128_relu_xregs_large_c32_nn_v1", "int8"),
        ({"Inputs": [{"Format/Datatype": "Four wide channel vectorized row major Int8 format"}],
          "Outputs": [{"Format/Datatype": "Row major linear FP32"}]}, "__myl_MulAdd_0x5e3f", "int8"),
        ({"Inputs": [{"Format/Datatype": "N/A due to dynamic shapes"}], "Weights": {"Type": "BFloat16"},
          "Outputs": [{"Format/Datatype": "Half(64,1:8,...)"}]}, None, "bf16"),
        ({"Inputs": [{"Format/Datatype": 7}], "Outputs": [{"Format/Datatype": "Half(64,1:8,...)"}]}, None, "fp16"),
        ({"Inputs": "not a list", "Weights": ["not", "an", "object"]}, None, None),
    ],
)
def test_layer_precision_reads_declared_then_tactic_then_inputs_then_weights_then_output(
    layer: dict[str, object], tactic: str | None, expected: str | None
) -> None:
    assert layer_precision(layer, tactic) == expected
