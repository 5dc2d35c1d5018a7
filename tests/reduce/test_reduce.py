"""reduce: workload differences, variants, graph shrinking, ddmin with static and timed probes, flaky probes."""

from __future__ import annotations

from typing import Any

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.notes import Note
from sparsedebug.records.run import RunRecord
from sparsedebug.reduce.reduce import _Prober, reduce_workloads
from sparsedebug.reduce.search import Outcome
from sparsedebug.reduce.shrink import apply_changes, diff_workloads, keep_layers, scale_widths
from sparsedebug.render.words.core import change_words, reduce_verdict
from sparsedebug.render.words.locate_text import stage_text
from sparsedebug.render.words.notes import say
from sparsedebug.sources.workload.load import load_workload, revalidate
from sparsedebug.sources.workload.schema import Workload
from tests.conftest import FIXTURES
from tests.locate.test_walk import make_run
from tests.support.builders import mlp_chain


def _edit(workload: Workload, name: str, layers: dict[str, dict[str, Any]] | None = None, **fields: Any) -> Workload:
    new_layers = [layer.model_copy(update=(layers or {}).get(layer.name, {})) for layer in workload.layers]
    return revalidate(workload.model_copy(update={"name": name, "layers": new_layers, **fields}))


@pytest.fixture
def sparse_pair() -> tuple[Workload, Workload]:
    """Good: a 2:4 fp16 MLP on the H200 profile. Bad: fc1 left in fp32 (cuSPARSELt refuses it), per-call conversion, a harmless knob."""
    good = mlp_chain("good", [64, 128, 128, 64], sequence=16, sparsity="2:4", backend="h200-cusparselt", precision="fp16", repeats=5)
    bad = _edit(good, "bad", {"fc1": {"dtype": "fp32"}}, conversion="per_call", pruning=good.pruning.model_copy(update={"schedule": "gradual"}))
    return good, bad


def test_diff_lists_knobs_and_layers_and_apply_round_trips(sparse_pair: tuple[Workload, Workload]) -> None:
    good, bad = sparse_pair
    changes = diff_workloads(good, bad)
    assert [c.key for c in changes] == ["knob:conversion", "knob:pruning", "layer:fc1"]
    assert [(d.field, d.was, d.now) for d in changes[2].diffs] == [("dtype", None, "fp32")]
    assert "dtype - -> fp32" in change_words(changes[2])
    everything = apply_changes(good, bad, [c.key for c in changes])
    assert everything.conversion == "per_call" and everything.layer("fc1").dtype == "fp32"
    assert diff_workloads(everything, bad) == []
    assert diff_workloads(apply_changes(good, bad, []), good) == []
    only_knob = apply_changes(good, bad, ["knob:conversion"])
    assert only_knob.conversion == "per_call" and only_knob.layer("fc1").dtype is None


def test_added_and_removed_layers_are_changes() -> None:
    good = mlp_chain("g", [32, 32, 32, 32], sequence=8)
    bad = revalidate(good.model_copy(update={"name": "b", "layers": [layer for layer in good.layers if layer.name != "act1"]}))
    changes = diff_workloads(good, bad)
    assert [(c.key, c.change, change_words(c)) for c in changes] == [("layer:act1", "removed", "removed (activation)")]
    assert [layer.name for layer in apply_changes(good, bad, ["layer:act1"]).layers] == ["fc0", "act0", "fc1", "fc2"]
    back = diff_workloads(bad, good)
    assert [(c.key, c.change, change_words(c)) for c in back] == [("layer:act1", "added", "added (activation)")]
    assert [layer.name for layer in apply_changes(bad, good, ["layer:act1"]).layers] == ["fc0", "act0", "fc1", "act1", "fc2"]


def test_keep_layers_bypasses_dropped_layers_and_scale_widths() -> None:
    workload = mlp_chain("w", [32, 64, 64, 32], sequence=8)
    kept = keep_layers(workload, {"fc1", "fc2"})
    assert [layer.name for layer in kept.layers] == ["fc1", "fc2"]
    assert kept.input_features == 64 and kept.layers[1].inputs == ["fc1"]
    uneven = mlp_chain("u", [32, 64, 48, 32], sequence=8)
    with pytest.raises(UserError):
        keep_layers(uneven, {"fc0", "fc2"})  # fc2 expects 48 wide input, fc0 writes 64
    with pytest.raises(UserError):
        keep_layers(workload, set())
    half = scale_widths(workload, 2)
    assert [layer.shape for layer in half.layers if layer.shape] == [[32, 16], [32, 32], [16, 32]]
    with pytest.raises(UserError):
        scale_widths(workload, 8)  # 32 / 8 = 4 is below the floor


def test_reduce_isolates_the_fallback_layer_and_the_conversion_knob(sparse_pair: tuple[Workload, Workload]) -> None:
    good, bad = sparse_pair
    events: list[Note] = []
    reduction = reduce_workloads(good, bad, progress=events.append)
    result = reduction.record
    assert result.reproduced and result.target_stage == "lower"
    assert result.target_finding == "fallback:dtype_unsupported"
    assert [c.key for c in result.kept] == ["layer:fc1"]
    assert [(c.finding, [k.key for k in c.kept]) for c in result.other_causes] == [("per_call_conversion", ["knob:conversion"])]
    assert reduction.repro is not None and reduction.base is not None
    assert [layer.name for layer in reduction.repro.layers] == ["fc1"] and reduction.repro.layer("fc1").dtype == "fp32"
    assert [layer.name for layer in reduction.base.layers] == ["fc1"] and reduction.base.layer("fc1").dtype is None
    assert reduction.repro.conversion == "once", "the conversion knob is not part of this cause"
    assert result.tokens_after is not None and result.tokens_after < result.tokens_before
    assert result.probe_count == len(result.probes) <= 30
    assert result.replays == 2  # only the timed confirmation: lowering needs no timing
    assert result.confirmation is not None and result.confirmation.first_stage == "lower"
    assert result.command == "sparsedebug bisect repro.base.yaml repro.yaml"
    target = [e for e in events if e.code == "reduce.target"]
    assert [e.values["stage"] for e in target] == ["lower"]
    assert "target: first divergence at lower" in say(target[0])


def test_reduce_keeps_both_changes_of_an_interaction() -> None:
    # Per-call conversion only diverges when some layer is sparse: the two changes only reproduce together.
    good = mlp_chain("good", [64, 128, 64], sequence=16, backend="h200-cusparselt", precision="fp16", repeats=5)
    bad = _edit(good, "bad", {"fc1": {"sparsity": "2:4"}}, conversion="per_call", seed=3)
    reduction = reduce_workloads(good, bad)
    result = reduction.record
    assert result.target_finding == "per_call_conversion"
    assert sorted(c.key for c in result.kept) == ["knob:conversion", "layer:fc1"]


def test_reduce_on_a_timed_kernel_regression(monkeypatch: pytest.MonkeyPatch) -> None:
    # Timed probes are synthesised (no timing is asserted in unit tests): a layer on the per-row 2:4
    # kernel takes 3x its time; every other layer keeps its time, with noise.
    def fake_timed_run(self: _Prober, workload: Workload, base_dir: object, repeats: int) -> RunRecord:
        self.replays += 1
        slow = {layer.name: 3.0 for layer in workload.layers if layer.sparsity == "2:4"}
        return make_run(workload.name, iterations=repeats, seed=self.replays, layers=[layer.name for layer in workload.layers], scale=slow)

    monkeypatch.setattr(_Prober, "timed_run", fake_timed_run)
    good = mlp_chain("good", [64, 128, 128, 64], sequence=16, sparsity="64:2:4", repeats=7)
    bad = _edit(good, "bad", {"fc1": {"sparsity": "2:4"}}, threads=1, pruning=good.pruning.model_copy(update={"schedule": "gradual"}))
    reduction = reduce_workloads(good, bad, probe_repeats=7)
    result = reduction.record
    assert result.target_stage == "kernel" and result.target_finding == "slower:fc1"
    assert [c.key for c in result.kept] == ["layer:fc1"]
    assert reduction.repro is not None and [layer.name for layer in reduction.repro.layers] == ["fc1"]
    assert all(p.mode == "timed" for p in result.probes)
    assert result.replays == 2 + 2 * result.probe_count + 2  # initial pair, two per probe, the confirmation pair
    assert result.confirmation is not None and result.confirmation.first_stage == "kernel"


def test_harmless_difference_cannot_be_reproduced(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_timed_run(self: _Prober, workload: Workload, base_dir: object, repeats: int) -> RunRecord:
        self.replays += 1
        return make_run(workload.name, iterations=repeats, seed=self.replays, layers=[layer.name for layer in workload.layers])

    monkeypatch.setattr(_Prober, "timed_run", fake_timed_run)
    good = mlp_chain("good", [32, 64, 32], sequence=8, repeats=5)
    bad = _edit(good, "bad", pruning=good.pruning.model_copy(update={"schedule": "gradual"}))
    reduction = reduce_workloads(good, bad, max_probes=4)
    result = reduction.record
    assert not result.reproduced and reduction.repro is None and result.kept == []
    assert result.outcome == "not_reproduced" and reduce_verdict(result).startswith("cannot reproduce a regression")
    assert result.replays == 4  # measured twice (5 and 10 repeats), baseline and candidate each time
    assert reduce_workloads(good, good).record.outcome == "nothing_to_reduce"


def test_undecided_probe_is_re_measured_with_more_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def fake_timed_run(self: _Prober, workload: Workload, base_dir: object, repeats: int) -> RunRecord:
        calls.append(repeats)
        # 3 samples per run cannot decide anything; 2*3 = 6 can (a 3x overhead grows latency by half).
        n = repeats
        if workload.name == "base":
            return make_run("base", iterations=n, seed=len(calls), layers=["a.attn"])
        return make_run("cand", iterations=n, seed=len(calls), layers=["a.attn"], overhead_ms=3.0)

    monkeypatch.setattr(_Prober, "timed_run", fake_timed_run)
    prober = _Prober(3, 10, None, (None, None), 0.05, 1.10)
    w = mlp_chain("base", [8, 8], sequence=8)
    outcome = prober.probe("changes", "x", w, w.model_copy(update={"name": "cand"}), "schedule", None)
    assert calls == [3, 3, 6, 6]
    assert outcome is Outcome.FAIL
    assert prober.flaky == 1 and prober.log[0].flaky


def test_replay_fixture_regression_bisects_to_lower_with_the_fallback_named() -> None:
    # Static probes (weights, pruning, lowering; no timing) of the real replay fixtures.
    prober = _Prober(3, 10, None, (None, None), 0.05, 1.10)
    dense = prober.static_run(load_workload(FIXTURES / "workloads" / "llama_dense.yaml"), None)
    regressed = prober.static_run(load_workload(FIXTURES / "workloads" / "llama_2of4_regressed.yaml"), None)
    result = bisect_runs(dense, regressed)
    assert result.first_stage == "lower"
    lower = result.stage("lower")
    assert lower.layers[0].kind == "fallback" and lower.layers[0].layer == "layers.1.mlp.down_proj"
    assert lower.layers[0].reason == "dtype_unsupported"
    assert "dense fallback: layers.1.mlp.down_proj (dtype_unsupported)" in stage_text(lower)
    assert "per call conversion on 13 layer(s)" in stage_text(lower)
    assert result.stage("graph").status == "expected"
