"""bisect_runs on synthetic run records (every stage, intent, noise, small n) and on the real H200 traces."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sparsedebug.locate.common import group_key
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.run import (
    FallbackReason,
    GraphLayer,
    GraphStage,
    KernelClass,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    QualityDelta,
    RunRecord,
    RunSource,
    ScheduleStage,
)
from sparsedebug.render.words.locate_text import finding_text, verdict_text
from sparsedebug.sources.detect import load_run
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"

LAYERS = ["layers.0.attn", "layers.0.mlp.up", "layers.0.mlp.down", "layers.1.attn", "layers.1.mlp.up", "layers.1.mlp.down"]


def _layer_spec(name: str) -> dict[str, Any]:
    if name.endswith("attn"):
        return {"op": OpKind.ATTENTION, "ms": 1.0, "cls": KernelClass.ATTENTION}
    return {"op": OpKind.LINEAR, "ms": 2.0, "cls": KernelClass.DENSE_TC_GEMM}


def make_run(
    name: str,
    *,
    iterations: int = 20,
    seed: int = 0,
    noise: float = 0.02,
    intended: dict[str, str] | None = None,
    path: dict[str, tuple[KernelPath, FallbackReason | None, KernelClass]] | None = None,
    scale: dict[str, float] | None = None,
    overhead_ms: float = 0.5,
    idle: dict[str, float] | None = None,
    layers: list[str] | None = None,
    conversions: dict[str, int] | None = None,
    rel_err: dict[str, float] | None = None,
    cosine: float | None = None,
    latency_outlier: float | None = None,
) -> RunRecord:
    """A run whose per-layer samples are lognormal around a known time; latency = busy + overhead."""
    rng = np.random.default_rng(seed)
    names = layers or LAYERS
    intended = intended or {}
    path = path or {}
    scale = scale or {}
    graph, lower, kernel = [], [], []
    per_iter = np.zeros(iterations)
    for n in names:
        spec = _layer_spec(n)
        graph.append(GraphLayer(name=n, op=spec["op"], weight_shape=[64, 64] if spec["op"] is OpKind.LINEAR else None, dtype="fp16", intended=intended.get(n, "dense")))
        p, reason, cls = path.get(n, (KernelPath.DENSE, FallbackReason.INTENDED_DENSE, spec["cls"]))
        lower.append(LowerLayer(name=n, path=p, reason=reason, kernel_class=cls, kernels=[f"k_{n}"], conversions_per_call=(conversions or {}).get(n, 0)))
        samples = spec["ms"] * scale.get(n, 1.0) * rng.lognormal(0.0, noise, iterations)
        per_iter += samples
        kernel.append(KernelLayer(name=n, samples_ms=[float(x) for x in samples], precision="fp16", rel_err=(rel_err or {}).get(n)))
    over = overhead_ms * rng.lognormal(0.0, noise, iterations)
    if idle:
        over = over + sum(idle.values())
    span = per_iter + over
    latency = span.copy()
    if latency_outlier is not None:
        latency[0] *= latency_outlier
    idle_samples = {n: [float(x) for x in (idle or {}).get(n, 0.01) * rng.lognormal(0.0, noise, iterations)] for n in names}
    return RunRecord(
        name=name,
        source=RunSource(kind="replay"),
        graph=GraphStage(layers=graph, tokens=128),
        lower=LowerStage(backend="test", layers=lower),
        kernel=KernelStage(layers=kernel),
        schedule=ScheduleStage(
            span_samples_ms=[float(x) for x in span],
            busy_samples_ms=[float(x) for x in per_iter],
            layer_idle_samples_ms=idle_samples if idle is not None else {},
        ),
        outcome=OutcomeStage(latency_samples_ms=[float(x) for x in latency], quality=QualityDelta(cosine=cosine, rel_err=0.0) if cosine is not None else None),
    )


PathSpec = tuple[KernelPath, FallbackReason | None, KernelClass]
SPARSE: PathSpec = (KernelPath.SPARSE, None, KernelClass.SPARSE_GEMM)
MLP = [n for n in LAYERS if ".mlp." in n]


def test_group_key() -> None:
    assert group_key("layers.12.mlp.down_proj") == "layers.{i}.mlp.down_proj"
    assert group_key("norm") == "norm"


def test_same_run_twice_is_no_regression() -> None:
    result = bisect_runs(make_run("a", seed=1), make_run("b", seed=2))
    assert result.state == "no_regression" and result.first_stage is None
    assert [s.status for s in result.stages] == ["same"] * 5
    assert result.outcome is not None and result.outcome.enough_samples


def test_intended_sparse_speedup_is_expected_and_improves() -> None:
    cand = make_run("sparse", seed=2, intended={n: "2:4" for n in MLP}, path={n: SPARSE for n in MLP}, scale={n: 0.6 for n in MLP})
    result = bisect_runs(make_run("dense", seed=1), cand)
    assert result.state == "no_regression"
    statuses = {s.stage: s.status for s in result.stages}
    assert statuses == {"graph": "expected", "lower": "expected", "kernel": "improved", "schedule": "same", "outcome": "improved"}
    assert "outcome improved" in verdict_text(result)
    assert all(f.intended for f in result.stage("kernel").layers)


def test_declared_sparse_fallback_bisects_to_lower_and_names_the_layer() -> None:
    fallback = "layers.1.mlp.down"
    path: dict[str, PathSpec] = {n: SPARSE for n in MLP if n != fallback}
    path[fallback] = (KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED, KernelClass.DENSE_TC_GEMM)
    scale = {n: 0.6 for n in MLP if n != fallback}
    scale[fallback] = 3.0  # the fallback also pays a dense conversion path
    cand = make_run("regressed", seed=2, intended={n: "2:4" for n in MLP}, path=path, scale=scale)
    result = bisect_runs(make_run("dense", seed=1), cand)
    assert result.state == "divergence" and result.first_stage == "lower"
    lower = result.stage("lower")
    assert [f.layer for f in lower.layers if f.regression] == [fallback]
    assert "shape_not_aligned" in finding_text(lower.layers[0])
    assert result.layers[0].layer == fallback and result.layers[0].involved
    kernel = result.stage("kernel")
    slow = [f for f in kernel.layers if f.kind == "slower"]
    assert [f.layer for f in slow] == [fallback] and "follows from lowering" in finding_text(slow[0])
    assert "kernel" in result.explains and "outcome" in result.explains
    assert result.effect is not None and result.effect.direction == "slower"


def test_neighbour_path_change_without_intent_is_a_lower_divergence() -> None:
    cand = make_run("c", seed=2, path={"layers.0.attn": (KernelPath.DENSE, FallbackReason.OBSERVED_DENSE, KernelClass.FP32_GEMM)})
    result = bisect_runs(make_run("b", seed=1), cand)
    assert result.first_stage == "lower"
    finding = result.stage("lower").layers[0]
    assert finding.kind == "path_changed" and finding.layer == "layers.0.attn"
    assert "fp32_gemm" in finding_text(finding)


def test_per_call_conversion_is_a_lower_divergence() -> None:
    cand = make_run("c", seed=2, intended={n: "2:4" for n in MLP}, path={n: SPARSE for n in MLP}, conversions={"layers.0.mlp.up": 1})
    result = bisect_runs(make_run("b", seed=1), cand)
    assert result.first_stage == "lower"
    assert [f.kind for f in result.stage("lower").layers if f.regression] == ["per_call_conversion"]


def test_per_call_conversion_counts_once_in_the_layer_contribution() -> None:
    # A per-call conversion is host work in the gap before the layer's compute, never in its kernel
    # samples (records.run): the ranking counts it once, as the layer's idle time.
    up = "layers.0.mlp.up"
    cand = make_run(
        "c", seed=2, intended={n: "2:4" for n in MLP}, path={n: SPARSE for n in MLP}, conversions={up: 1},
        idle={up: 2.0}, noise=0.0,
    )
    next(lo for lo in cand.lower.layers if lo.name == up).conversion_ms = 2.0
    result = bisect_runs(make_run("b", seed=1, noise=0.0, idle={}), cand)
    row = next(r for r in result.layers if r.layer == up)
    assert row.kernel_ms == pytest.approx(0.0)
    assert row.idle_ms == pytest.approx(1.99)  # the 2 ms gap holds the conversion, against the baseline's 0.01 ms
    assert row.contribution_ms == pytest.approx(1.99)


def test_graph_change_comes_first() -> None:
    cand = make_run("c", seed=2, layers=LAYERS[:-1])
    result = bisect_runs(make_run("b", seed=1), cand)
    assert result.first_stage == "graph"
    assert [(f.layer, f.kind) for f in result.stage("graph").layers] == [("layers.1.mlp.down", "removed")]


def test_kernel_slowdown_of_an_unchanged_layer() -> None:
    cand = make_run("c", seed=2, scale={"layers.1.attn": 1.5})
    result = bisect_runs(make_run("b", seed=1), cand)
    assert result.first_stage == "kernel"
    finding = [f for f in result.stage("kernel").layers if f.regression][0]
    assert finding.layer == "layers.1.attn"
    assert finding.comparison is not None and finding.comparison.ci_low is not None and finding.comparison.ci_low > 1.3
    assert result.layers[0].layer == "layers.1.attn"


def test_one_percent_kernel_shift_is_not_a_finding() -> None:
    cand = make_run("c", seed=2, noise=0.001, scale={"layers.1.attn": 1.01})
    result = bisect_runs(make_run("b", seed=1, noise=0.001), cand)
    assert result.state == "no_regression"


def test_schedule_overhead_growth_bisects_to_schedule() -> None:
    cand = make_run("c", seed=2, overhead_ms=4.0)
    result = bisect_runs(make_run("b", seed=1), cand)
    assert result.first_stage == "schedule"
    assert result.effect_metric == "overhead_ms"
    assert result.explains == ["outcome"]


def test_one_outlier_iteration_is_not_persistent() -> None:
    cand = make_run("c", seed=2, latency_outlier=5.0)
    result = bisect_runs(make_run("b", seed=1), cand)
    assert result.state == "no_regression"


def test_too_few_iterations_is_undecided_not_guessed() -> None:
    base = make_run("b", seed=1, iterations=3, layers=["embed.attn"])
    cand = make_run("c", seed=2, iterations=3, layers=["embed.attn"], overhead_ms=5.0)
    result = bisect_runs(base, cand)
    assert result.state == "undecided" and result.first_stage is None
    assert "too few samples" in verdict_text(result)


def test_pooled_idle_samples_decide_schedule_on_three_iterations() -> None:
    waits = {n: 1.0 for n in MLP}
    base = make_run("b", seed=1, iterations=3, idle={})
    cand = make_run("c", seed=2, iterations=3, idle=waits)
    result = bisect_runs(base, cand)
    assert result.first_stage == "schedule"
    schedule = result.stage("schedule")
    assert {f.layer for f in schedule.layers if f.regression} == {"layers.{i}.mlp.up", "layers.{i}.mlp.down"}
    assert all(f.comparison is not None and f.comparison.n_base == 6 for f in schedule.layers if f.regression)
    assert result.outcome is not None and not result.outcome.enough_samples


def test_quality_guardrail_and_precision() -> None:
    cand = make_run("c", seed=2, cosine=0.90)
    assert bisect_runs(make_run("b", seed=1), cand).state == "no_regression"
    guarded = bisect_runs(make_run("b", seed=1), cand, min_cosine=0.95)
    assert guarded.first_stage == "outcome"
    drift = make_run("c", seed=2, rel_err={"layers.0.mlp.up": 0.2})
    result = bisect_runs(make_run("b", seed=1, rel_err={"layers.0.mlp.up": 1e-3}), drift)
    assert result.first_stage == "kernel"
    assert [f.kind for f in result.stage("kernel").layers if f.regression] == ["precision"]


# --------------------------------------------------------------------------- real H200 traces


@pytest.fixture(scope="module")
def traces() -> dict[str, RunRecord]:
    names = ["trace_dense_T2048", "trace_sparse_mlp_T2048", "trace_dense_T2048_cudagraph", "trace_sparse_mlp_T2048_cudagraph"]
    return {n: load_run(H200 / f"{n}.json.gz") for n in names}


def test_eager_sparse_mlp_trace_bisects_to_schedule(traces: dict[str, RunRecord]) -> None:
    result = bisect_runs(traces["trace_dense_T2048"], traces["trace_sparse_mlp_T2048"])
    assert result.state == "divergence" and result.first_stage == "schedule"
    assert result.stage("lower").status == "expected"
    assert result.stage("kernel").status == "improved"  # the kernels got faster
    faster = {f.layer for f in result.stage("kernel").layers if f.kind == "faster"}
    assert {"layers.{i}.mlp.gate_proj", "layers.{i}.mlp.up_proj", "layers.{i}.mlp.down_proj"} <= faster
    waiting = {f.layer for f in result.stage("schedule").layers if f.regression}
    assert {"layers.{i}.mlp.gate_proj", "layers.{i}.mlp.up_proj", "layers.{i}.mlp.down_proj"} <= waiting
    assert result.explains == ["outcome"]
    assert result.outcome is not None and result.outcome.ratio > 1.8 and not result.outcome.enough_samples
    top = [r.layer for r in result.layers[:12]]
    assert all(".mlp." in name for name in top[:8])
    assert result.accounted_share is not None and 0.7 < result.accounted_share < 1.2


def test_cuda_graph_pair_is_no_regression_with_improvement(traces: dict[str, RunRecord]) -> None:
    result = bisect_runs(traces["trace_dense_T2048_cudagraph"], traces["trace_sparse_mlp_T2048_cudagraph"])
    # 3 iterations a side: the outcome is too few to judge by the one rule, whatever its ratio
    assert result.state == "undecided" and result.first_stage is None
    assert result.stage("lower").status == "expected" and result.stage("outcome").status == "undecided"
    assert result.outcome is not None and 0.8 < result.outcome.ratio < 0.9 and result.outcome.needed == 6
    assert "too few to judge the whole forward (6 a side needed" in verdict_text(result)


def test_imported_layer_idle_shows_the_known_host_overhead(traces: dict[str, RunRecord]) -> None:
    sparse = traces["trace_sparse_mlp_T2048"].schedule.layer_idle_samples_ms
    dense = traces["trace_dense_T2048"].schedule.layer_idle_samples_ms
    assert len(sparse["layers.1.mlp.up_proj"]) == 3
    assert 0.3 < float(np.median(sparse["layers.1.mlp.up_proj"])) < 0.7  # about 0.5 ms host work per sparse call
    assert float(np.median(dense["layers.1.mlp.up_proj"])) < 0.05
    assert "layers.1.mlp.up_proj" not in traces["trace_dense_T2048_cudagraph"].schedule.layer_idle_samples_ms


def test_many_noisy_layers_do_not_manufacture_a_kernel_finding() -> None:
    # 40 unchanged layers with 20% noise: without the correction for the number of layers tested,
    # nearly every pair would flag some layer; with it, at most about alpha of the pairs may.
    layers = [f"layers.{i}.attn" for i in range(40)]
    flagged = 0
    for seed in range(20):
        base = make_run("b", seed=2 * seed, noise=0.2, iterations=10, layers=layers)
        cand = make_run("c", seed=2 * seed + 1, noise=0.2, iterations=10, layers=layers)
        flagged += bisect_runs(base, cand).stage("kernel").status == "divergent"
    assert flagged <= 3
