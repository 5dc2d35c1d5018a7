"""Every templated claim in the memo and the report stands on a fired rule or a stored figure.

Walks bundles built from the real H200 traces and their variations (a backend change from a
layout change, a move onto fp32, a clean CUDA-graph win, a run against itself) and checks each
claim against the records it came from.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparsedebug.records.classification import Classification
from sparsedebug.render.markdown.deployment import render_report
from sparsedebug.render.markdown.memo import render_memo
from sparsedebug.signoff.metrics import baseline_dense_pairs
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.importers.trace.importer import import_trace
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle

ROOT = Path(__file__).resolve().parents[3]
H200 = ROOT / "fixtures" / "h200"
TRACES = ROOT / "fixtures" / "traces"
PAIRS = {
    "layout": (H200 / "trace_dense_T2048.json.gz", TRACES / "h200_dense_sdpa_efficient_noncontig.json.gz"),
    "fp32": (H200 / "trace_dense_T2048.json.gz", TRACES / "h200_dense_sdpa_math_fp32.json.gz"),
    "unannotated_fp32": (TRACES / "h200_dense_unannotated.json.gz", TRACES / "h200_dense_unannotated_sdpa_math_fp32.json.gz"),
    "eager_sparse": (H200 / "trace_dense_T2048.json.gz", H200 / "trace_sparse_mlp_T2048.json.gz"),
    "cudagraph_win": (H200 / "trace_dense_T2048_cudagraph.json.gz", H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"),
    "self": (H200 / "trace_dense_T2048.json.gz", H200 / "trace_dense_T2048.json.gz"),
}


@pytest.fixture(scope="module")
def bundles() -> dict[str, LoadedBundle]:
    return {name: make_bundle(import_trace(b), import_trace(c)) for name, (b, c) in PAIRS.items()}


def _fired(cls: Classification | None, rule: str) -> bool:
    return cls is not None and any(e.rule == rule and e.fired for e in cls.evidence)


@pytest.mark.parametrize("name", list(PAIRS))
def test_every_claim_has_its_record(bundles: dict[str, LoadedBundle], name: str) -> None:
    bundle = bundles[name]
    memo, report = render_memo(bundle, load_playbook()), render_report(bundle)
    cls = bundle.classification
    for text in (memo, report):
        if not _fired(cls, "scheduling.tail_spread"):
            assert "wide p99" not in text
        if not _fired(cls, "thermal.latency_drift"):
            assert "drifts upward" not in text
        if bundle.fix is None or not bundle.fix.applied:
            assert "did not move" not in text.lower()
        if baseline_dense_pairs(bundle.candidate, bundle.baseline):
            assert "no paired dense samples" not in text
    carried = re.findall(r"mechanism (\w+) carries (-?[\d.]+) ms of the ([+-][\d.]+) ms change", memo)
    if cls is not None and cls.ranked_by == "attribution":
        assert cls.attribution is not None and cls.winner is not None
        share = cls.attribution.share_of(cls.winner)
        assert share is not None
        assert carried == [(cls.winner.value, f"{share.ms:.3f}", f"{cls.attribution.delta_ms:+.3f}")]
        assert cls.scores[0].mechanism == cls.winner
    else:
        assert carried == []


def test_a_clean_win_is_a_bounded_rollout_naming_the_missing_quality_evidence(bundles: dict[str, LoadedBundle]) -> None:
    decision = bundles["cudagraph_win"].decision
    assert decision is not None and decision.decision == "bounded_rollout"
    reason = decision.reasons[0]
    assert "measured win" in reason and "quality evidence is missing" in reason and "capture" in reason


def test_an_unapplied_fix_escalates_saying_it_was_not_applied(bundles: dict[str, LoadedBundle]) -> None:
    decision = bundles["layout"].decision
    assert decision is not None
    assert all("did not move" not in r for r in decision.reasons)


def test_kernel_speedup_is_paired_with_the_baselines_dense_kernels(bundles: dict[str, LoadedBundle]) -> None:
    bundle = bundles["eager_sparse"]
    pairs = baseline_dense_pairs(bundle.candidate, bundle.baseline)
    assert pairs, "the sparse MLP layers ran dense in the baseline"
    report = render_report(bundle)
    expected = sum(p[1] for p in pairs) / sum(p[2] for p in pairs)
    assert f"sparse kernel speedup: {expected:.3f}x (measured on {len(pairs)} sparse layer(s) against the same layers" in report
