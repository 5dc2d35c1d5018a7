"""The H200 target cost model: measured points reproduced, provenance, host and GPU apart, validation targets."""

from __future__ import annotations

import pytest

from sparsedebug.sources.target.data import load_calibration
from sparsedebug.sources.target.model import LinearCall, OpCall, TargetModel, target_model
from sparsedebug.sources.target.project import break_even, predict, project_workload
from sparsedebug.sources.target.validate import forward_checks, leave_one_out, summary
from sparsedebug.sources.workload.load import load_workload
from tests.conftest import FIXTURES

MEASURED = [(4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192), (28672, 8192)]


@pytest.fixture(scope="module")
def model() -> TargetModel:
    found = target_model("h200-cusparselt")
    assert found is not None
    return found


def _row(out: int, k: int, tokens: int, dtype: str = "float16") -> object:
    cal = load_calibration("h200")
    return next(r for r in cal.gemm if (r.out, r.k, r.tokens, r.dtype, r.backend) == (out, k, tokens, dtype, "cusparselt"))


def test_calibration_reads_every_source() -> None:
    cal = load_calibration("h200")
    timed = [r for r in cal.gemm if r.dense_ms is not None and r.sparse_ms is not None]
    errors = [r for r in cal.gemm if r.error]
    assert len(timed) == 50 and len(errors) == 25 and all(r.backend == "cutlass" for r in errors)
    assert {p.label.split(" ", 1)[0] for p in cal.kernels} >= {"ncu_dense_vs_sparse_11008x4096x2048.csv", "trace_dense_T2048.json.gz"}
    assert set(cal.rates) == {"norm", "attention", "pointwise"}
    assert set(cal.gaps) == {"eager", "cuda_graph"} and cal.graph_launch is not None and cal.host_between is not None
    assert [(f[0].launch, f[2]) for f in cal.forwards][2:] == [("cuda_graph", 6.56), ("cuda_graph", 5.61)]


def test_eager_loses_at_16_tokens_on_every_measured_shape(model: TargetModel) -> None:
    for out, k in MEASURED:
        layer = model.linear(LinearCall("x", out, k, 16, "fp16", "sparse"), "eager")
        assert layer.speedup is not None and layer.speedup < 1.0, (out, k, layer.speedup)
        assert layer.sparse is not None and layer.sparse.host_ms > layer.sparse.gpu_ms  # the fixed host cost, not the kernel
        assert layer.sparse.basis == "measured" and any("gemm[" in s for s in layer.sparse.host.sources)


@pytest.mark.parametrize("shape", [(11008, 4096), (8192, 8192), (28672, 8192)])
def test_wins_at_8192_tokens_on_the_large_shapes_with_provenance(model: TargetModel, shape: tuple[int, int]) -> None:
    layer = model.linear(LinearCall("x", *shape, 8192, "fp16", "sparse"), "eager")
    assert layer.speedup is not None and layer.speedup > 1.2
    assert layer.basis in ("measured", "interpolated")
    assert layer.sparse is not None and layer.dense is not None
    assert any(f"{shape[0]}x{shape[1]} T=8192" in s for s in layer.dense.gpu.sources)
    assert layer.sparse.gpu.note is not None and "ratio" in layer.sparse.gpu.note


def test_measured_points_are_reproduced_and_host_and_gpu_never_added(model: TargetModel) -> None:
    row = _row(11008, 4096, 8192)
    layer = model.linear(LinearCall("x", 11008, 4096, 8192, "fp16", "sparse"), "eager")
    assert layer.dense is not None and layer.dense.gpu_ms == pytest.approx(row.dense_ms)  # type: ignore[attr-defined]
    assert layer.dense.gpu.basis == "measured"
    for path in (layer.dense, layer.sparse):
        assert path is not None and path.per_call_ms == pytest.approx(max(path.host_ms, path.gpu_ms))
    graph = model.linear(LinearCall("x", 11008, 4096, 8192, "fp16", "sparse"), "cuda_graph")
    assert graph.sparse is not None and graph.sparse.host_ms == 0.0 and graph.sparse.per_call_ms == graph.sparse.gpu_ms


def test_small_and_unmeasured_shapes_are_extrapolated(model: TargetModel) -> None:
    tiny = model.linear(LinearCall("x", 512, 512, 128, "fp16", "sparse"), "cuda_graph")
    assert tiny.basis == "extrapolated"
    between = model.linear(LinearCall("x", 5504, 4096, 2048, "bf16", "dense"), "eager")
    assert between.dense is not None and between.dense.gpu.basis == "interpolated"
    assert between.path == "dense"


def test_fp32_is_extrapolated_int8_unavailable_and_cutlass_has_no_sparse_path(model: TargetModel) -> None:
    fp32 = model.linear(LinearCall("x", 4096, 4096, 2048, "fp32", "dense"), "eager")
    half = model.linear(LinearCall("x", 4096, 4096, 2048, "fp16", "dense"), "eager")
    assert fp32.basis == "extrapolated" and fp32.dense is not None and half.dense is not None
    assert fp32.dense.gpu_ms > 5 * half.dense.gpu_ms and "datasheet" in (fp32.dense.gpu.note or "")
    int8 = model.linear(LinearCall("x", 4096, 4096, 2048, "int8", "sparse"), "eager")
    assert int8.basis == "unavailable" and int8.dense is None and "no int8 rows" in (int8.note or "")
    cutlass = target_model("h200-cutlass")
    assert cutlass is not None
    layer = cutlass.linear(LinearCall("x", 4096, 4096, 2048, "fp16", "sparse"), "eager")
    assert layer.sparse is None and layer.path == "dense" and "compute capability 8.x" in (layer.note or "")
    assert target_model("cpu-numpy") is None


def test_non_linear_ops_are_estimates_from_trace_rates(model: TargetModel) -> None:
    norm = model.op(OpCall("n", "norm", 2048, "fp16", bytes=2 * 2 * 4096 * 2048 + 2 * 4096, flops=4.0 * 4096 * 2048), "eager")
    assert norm.basis == "estimate" and norm.dense is not None
    assert norm.dense.gpu_ms == pytest.approx(0.1017, rel=0.05)  # the traced norm kernels per call
    assert "trace_dense_T2048.json.gz" in norm.dense.gpu.sources[0]
    graph = model.op(OpCall("n", "norm", 2048, "fp16", bytes=2 * 2 * 4096 * 2048, flops=0.0), "cuda_graph")
    assert graph.dense is not None and graph.dense.host_ms == 0.0


def test_break_even_on_the_measured_shapes(model: TargetModel) -> None:
    for out, k in MEASURED:
        even = break_even(model, out, k, "fp16", "eager")
        assert even.tokens_from is not None and even.tokens_from > 16, (out, k)
        lose = model.linear(LinearCall("x", out, k, even.tokens_from - 1, "fp16", "sparse"), "eager")
        win = model.linear(LinearCall("x", out, k, even.tokens_from, "fp16", "sparse"), "eager")
        assert lose.speedup is not None and win.speedup is not None and lose.speedup <= 1.0 < win.speedup
    big = break_even(model, 28672, 8192, "fp16", "eager")
    assert big.tokens_from is not None and big.tokens_from < 8192 and big.basis == "interpolated"


def test_leave_one_out_median_error_within_15_percent() -> None:
    errors = leave_one_out("h200-cusparselt")
    assert len({e.row for e in errors}) == 50 and len(errors) == 100
    med, worst = summary(errors)
    assert med <= 0.15
    assert worst.error >= med and worst.measured_ms > 0


def test_whole_forwards_dense_and_cuda_graph_within_25_percent() -> None:
    checks = {(c.workload, c.launch): c for c in forward_checks("h200-cusparselt")}
    assert len(checks) == 4
    for key in (("h200_llama_dense", "eager"), ("h200_llama_dense", "cuda_graph"), ("h200_llama_sparse_mlp", "cuda_graph")):
        error = checks[key].error
        assert error is not None and error <= 0.25, (key, error)
    eager_sparse = checks[("h200_llama_sparse_mlp", "eager")]
    # host-bound: projected well above dense but below the measured p50 (see the report)
    assert eager_sparse.projected_ms is not None and eager_sparse.projected_ms > 1.5 * checks[("h200_llama_dense", "eager")].measured_ms


def test_workload_projection_and_predict_are_deterministic() -> None:
    workload = load_workload(FIXTURES / "targets" / "h200_llama_sparse_mlp.yaml")
    first = project_workload(workload)
    second = project_workload(workload)
    assert first is not None and second is not None and first[2] == second[2] and first[1] == second[1]
    _, layers, forward = first
    assert sum(1 for layer in layers if layer.path == "sparse") == 12
    assert forward.dense is not None and forward.candidate is not None and forward.speedup is not None and forward.speedup < 1.0
    report = predict(backend="h200-cusparselt", tokens=[16, 8192], workload=workload)
    assert [r.tokens for r in report.results] == [16, 8192]
    assert {tuple(b.shape) for b in report.break_even} == {(4096, 4096), (11008, 4096), (4096, 11008)}


def test_per_call_conversion_is_the_median_of_the_nearest_shape_scaled_by_size(model: TargetModel) -> None:
    """The projection uses the median over the nearest measured shape's rows, scaled by weight size for other shapes
    (conversion streams the weight once), so a tiny layer is not charged a 4096x4096 conversion."""
    import statistics

    rows = [r for r in model.cal.gemm if r.backend == model.backend and r.dtype == "float16" and r.convert_ms is not None]
    at = [float(r.convert_ms) for r in rows if (r.out, r.k) == (4096, 4096) and r.convert_ms is not None]
    value, note = model._conversion(4096, 4096, "float16") or (None, "")
    assert value == pytest.approx(statistics.median(at)) and "median" in note
    half, half_note = model._conversion(2048, 4096, "float16") or (None, "")
    assert half == pytest.approx(value / 2) and "scaled by weight size" in half_note
