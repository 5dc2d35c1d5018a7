"""The H200 target cost model: measured points reproduced, provenance, host and GPU apart, validation targets."""

from __future__ import annotations

import pytest

from sparsedebug.render.words.notes import say, say_all
from sparsedebug.sources.target.data import load_calibration
from sparsedebug.sources.target.model import LinearCall, OpCall, TargetModel, target_model
from sparsedebug.sources.target.project import break_even, predict, project_workload
from sparsedebug.sources.target.validate import forward_checks, held_out, leave_one_out, summary
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
    assert "targets.sparse_kernel_model" in [n.code for n in layer.sparse.gpu.notes] and "2:4 kernel model" in say_all(layer.sparse.gpu.notes)


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
    assert fp32.dense.gpu_ms > 5 * half.dense.gpu_ms and "datasheet" in say_all(fp32.dense.gpu.notes)
    int8 = model.linear(LinearCall("x", 4096, 4096, 2048, "int8", "sparse"), "eager")
    assert int8.basis == "unavailable" and int8.dense is None and "no int8 rows" in say_all(int8.notes)
    cutlass = target_model("h200-cutlass")
    assert cutlass is not None
    layer = cutlass.linear(LinearCall("x", 4096, 4096, 2048, "fp16", "sparse"), "eager")
    assert layer.sparse is None and layer.path == "dense" and "compute capability 8.x" in say_all(layer.notes)
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
        assert even.ranges[0].first == 1 and even.ranges[-1].last == even.searched_up_to == 8192
        assert all(a.last + 1 == b.first for a, b in zip(even.ranges, even.ranges[1:], strict=False))
        assert even.ranges[0].verdict == "sparse loses" and even.loses_up_to is not None and even.loses_up_to > 16, (out, k)
        if even.tokens_from is not None:
            win = model.linear(LinearCall("x", out, k, even.tokens_from, "fp16", "sparse"), "eager")
            before = model.linear(LinearCall("x", out, k, even.tokens_from - 1, "fp16", "sparse"), "eager")
            assert win.verdict == "sparse wins" and before.verdict != "sparse wins"
            assert win.speedup_low is not None and win.speedup_low > 1.0
    big = break_even(model, 28672, 8192, "fp16", "eager")
    assert big.tokens_from is not None and big.tokens_from < 8192 and big.basis == "interpolated"
    assert break_even(model, 4096, 4096, "fp16", "eager").tokens_from is None  # the host cost: never shown to pay off


@pytest.mark.parametrize("tokens", [16, 128])
@pytest.mark.parametrize("shape", [(11008, 4096), (4096, 11008), (14336, 4096), (4096, 14336), (28672, 8192)])
def test_cuda_graph_at_few_tokens_never_claims_a_win(model: TargetModel, shape: tuple[int, int], tokens: int) -> None:
    layer = model.linear(LinearCall("x", *shape, tokens, "fp16", "sparse"), "cuda_graph")
    assert layer.verdict in ("sparse loses", "uncertain here"), (shape, tokens, layer.speedup_low, layer.speedup_high)
    if layer.verdict == "uncertain here":
        assert layer.measure is not None and layer.measure.values["launch"] == "cuda_graph"
        assert f"{shape[0]}x{shape[1]} at {tokens} tokens, cuda graph" in say(layer.measure)
    assert layer.sparse is not None and layer.sparse.basis == "extrapolated"  # no GPU-only 2:4 time below 2048 tokens


@pytest.mark.parametrize("shape", [(11008, 4096), (28672, 8192)])
@pytest.mark.parametrize("launch", ["eager", "cuda_graph"])
def test_measured_large_token_wins_are_claimed(model: TargetModel, shape: tuple[int, int], launch: str) -> None:
    layer = model.linear(LinearCall("x", *shape, 8192, "fp16", "sparse"), launch)  # type: ignore[arg-type]
    assert layer.verdict == "sparse wins" and layer.speedup_low is not None and layer.speedup_low > 1.0
    assert layer.speedup is not None and 1.3 <= layer.speedup <= 1.5  # the measured 1.38x and 1.42x per-call p50 ratios


def test_the_sparse_kernel_is_its_own_model_with_a_tile_minimum(model: TargetModel) -> None:
    sparse = model.sparse_model
    assert sparse is not None and (sparse.tile.m, sparse.tile.n, sparse.tile.ctas) == (128, 256, 132)
    assert "tilesize128x256x64" in sparse.tile.label and "sm_count" in sparse.tile.label
    # below one tile of tokens the sparse time stays at one wave: it does not shrink with tokens as dense does
    assert sparse.at(11008, 4096, 1).ms == sparse.at(11008, 4096, 256).ms
    assert sparse.at(11008, 4096, 16).efficiency < 0.05
    # the ratio to dense is not constant: it depends on the tiles the problem fills
    ratios = {t: model.sparse_gpu(11008, 4096, t, "float16").ms / model.dense_gpu(11008, 4096, t, "float16").ms for t in (16, 2048)}  # type: ignore[union-attr]
    assert ratios[16] > 1.0 > ratios[2048]
    # intervals widen away from measured points
    near, far = model.sparse_gpu(11008, 4096, 2048, "float16"), model.sparse_gpu(11008, 4096, 16, "float16")
    assert near is not None and far is not None and far.high / far.low > 3 * near.high / near.low


def test_cuda_graph_break_even_is_never_from_one_token(model: TargetModel) -> None:
    for out, k in [*MEASURED, (576, 1536), (14336, 4096)]:
        even = break_even(model, out, k, "fp16", "cuda_graph")
        assert even.tokens_from is None or even.tokens_from > 256, (out, k, even.notes)
        assert even.ranges[0].verdict != "sparse wins"
        if even.uncertain_tokens is not None:
            assert even.measure is not None and "cuda graph" in say(even.measure)


def test_held_out_shapes_and_decades_cover_80_to_95_percent() -> None:
    result = held_out("h200-cusparselt")
    assert {p.grouping for p in result.points} == {"shape", "token decade"}
    assert {p.path for p in result.points} == {"dense", "sparse"}
    coverage = sum(p.covered for p in result.points) / len(result.points)
    assert 0.80 <= coverage <= 0.95, coverage
    assert any(u[0] == "sparse" and u[1] == "token decade" for u in result.untestable)


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


def test_whole_forward_speedup_carries_an_interval_and_a_verdict() -> None:
    workload = load_workload(FIXTURES / "targets" / "h200_llama_sparse_mlp.yaml")
    graph = project_workload(workload, launch="cuda_graph")
    assert graph is not None
    forward = graph[2]
    assert forward.speedup is not None and forward.speedup_low is not None and forward.speedup_high is not None
    assert forward.speedup_low <= forward.speedup <= forward.speedup_high
    assert forward.verdict == "sparse wins"  # measured: 5.61 ms against 6.56 ms dense at 2,048 tokens
    few = predict(backend="h200-cusparselt", tokens=[128], workload=workload, launch="cuda_graph").results[0].forward
    assert few.verdict in ("sparse loses", "uncertain here")


def test_break_even_is_facts_and_render_words_it(model: TargetModel) -> None:
    from sparsedebug.render.words.target import break_even_note

    even = break_even(model, 4096, 4096, "fp16", "eager")
    assert not even.notes  # the record holds ranges, launch and crossing; no sentence
    words = break_even_note(even)
    assert words.startswith("tokens: 2:4 loses 1-") and "(eager;" in words
    for r in even.ranges:
        assert str(r.first) in words and str(r.last) in words
    if even.tokens_from is None and even.central_crossing is not None:
        assert f"crosses 1.0 at {even.central_crossing} tokens" in words


def test_a_forward_without_figures_names_its_missing_layers(model: TargetModel) -> None:
    from sparsedebug.render.terminal.predict import forward_line
    from sparsedebug.sources.target.project import project_calls

    calls = [LinearCall(f"q{i}", 4096, 4096, 2048, "int8", "sparse") for i in range(4)]
    calls.append(LinearCall("up", 4096, 4096, 2048, "fp16", "dense"))
    _, forward = project_calls(model, calls, "eager")
    assert forward.dense is None and forward.missing_layers == ["q0", "q1", "q2", "q3"]
    assert forward_line(forward).endswith("n/a: 4 layer(s) have no figure (q0, q1, q2, ...)")
