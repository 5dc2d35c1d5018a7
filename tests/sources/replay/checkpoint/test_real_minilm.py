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
