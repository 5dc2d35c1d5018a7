"""Replays keep both clocks: this machine (measured) and the target (projected); budgets on the target; noise."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sparsedebug.core import timing
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.gate import GatePolicy
from sparsedebug.records.run import KernelPath, RunRecord
from sparsedebug.render.words.locate_text import stage_text
from sparsedebug.signoff.gate import evaluate
from sparsedebug.sources.replay import replay as replay_module
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS
from sparsedebug.sources.replay.replay import plan, replay
from sparsedebug.sources.replay.synthetic.narrow import narrowed_workload, target_match
from sparsedebug.sources.target.project import project_workload, target_clock
from sparsedebug.sources.workload.load import load_workload
from sparsedebug.sources.workload.schema import Workload
from tests.conftest import FIXTURES
from tests.support.builders import llama_stack


def _tiny(**fields: object) -> Workload:
    base: dict[str, object] = {
        "blocks": 1, "hidden": 64, "ffn": 96, "heads": 4, "sequence": 16, "repeats": 3, "warmup": 1,
        "backend": "h200-cusparselt", "precision": "fp16", "sparsity": "2:4",
    }
    base.update(fields)
    return llama_stack("tiny", **base)  # type: ignore[arg-type]


def test_gpu_profile_replay_records_the_target_clock_per_layer_and_forward() -> None:
    record = replay(_tiny())
    target = record.target
    assert target is not None and target.clock == "target" and target.backend == "h200-cusparselt" and target.launch == "eager"
    assert [layer.name for layer in target.layers] == [layer.name for layer in record.graph.layers]
    fwd = target.forward
    assert fwd.dense is not None and fwd.candidate is not None and fwd.speedup == pytest.approx(fwd.dense.total_ms / fwd.candidate.total_ms)
    assert record.outcome.effective_speedup is not None  # this machine's clock, alongside
    # tiny shapes, eager: every sparse layer pays the per-call host cost and is flagged, with both numbers
    flagged = [lo for lo in record.lower.layers if lo.slower_on_target is not None]
    sparse = [lo for lo in record.lower.layers if lo.path is KernelPath.SPARSE]
    assert flagged == sparse and len(sparse) == 7
    flag = flagged[0].slower_on_target
    assert flag is not None and flag.reason == "slower_than_dense" and flag.sparse_ms > flag.dense_ms > 0
    assert flagged[0].path is KernelPath.SPARSE and flagged[0].reason is None  # still sparse: the flag is not a fallback


def test_cpu_profile_has_no_target_and_budgets_on_this_machine() -> None:
    record = replay(_tiny(backend="cpu-numpy"))
    assert record.target is None
    assert all(lo.slower_on_target is None for lo in record.lower.layers)
    eq = record.outcome.equal_latency
    assert eq is not None and eq.clock == "this_machine" and eq.cross_check is None


def test_two_identical_replays_give_identical_equal_latency_results() -> None:
    workload = _tiny(launch="cuda_graph")
    first, second = replay(workload), replay(workload)
    a, b = first.outcome.equal_latency, second.outcome.equal_latency
    assert a is not None and b is not None and a.clock == "target"
    assert a.model_dump(exclude={"cross_check"}) == b.model_dump(exclude={"cross_check"})
    assert a.cross_check is not None and a.cross_check.clock == "this_machine"
    # under a CUDA graph the sparse candidate is projected faster: the dense model is narrowed, but this tiny model is
    # launch-bound on the H200, so no narrowing reaches the candidate and sparsity wins on speed
    assert first.target is not None and first.target.forward.speedup is not None and first.target.forward.speedup > 1.0
    assert a.candidate_latency_ms == pytest.approx(first.target.forward.candidate.total_ms)  # type: ignore[union-attr]
    assert a.latency_matched is False and a.narrowed_ffn_fraction == 15 / 16 and a.sparsity_wins
    assert a.narrowed_latency_ms > a.candidate_latency_ms


def test_the_target_budget_narrows_a_gpu_sized_model_until_it_matches() -> None:
    workload = load_workload(FIXTURES / "targets" / "h200_llama_sparse_mlp.yaml").model_copy(update={"launch": "cuda_graph"})
    clock = target_clock(workload)
    assert clock is not None and clock.forward.candidate is not None and clock.forward.dense is not None
    assert clock.forward.dense.total_ms > clock.forward.candidate.total_ms  # 2:4 pays off under a CUDA graph
    match = target_match(workload, clock)
    assert match is not None and match.reached and 0 < match.step < FRACTION_STEPS
    assert match.narrowed_ms <= match.candidate_ms == clock.forward.candidate.total_ms
    wider = project_workload(narrowed_workload(workload, (match.step - 1) / FRACTION_STEPS), paths={})
    assert wider is not None and wider[2].dense is not None and wider[2].dense.total_ms > match.candidate_ms
    assert target_match(workload, clock) == match  # deterministic


def test_narrowed_workload_matches_the_narrowed_weights() -> None:
    workload = _tiny()
    narrowed = narrowed_workload(workload, 0.5)
    shapes = {layer.name: layer.shape for layer in narrowed.layers if layer.op == "linear"}
    assert shapes["layers.0.mlp.gate_proj"] == [48, 64] and shapes["layers.0.mlp.down_proj"] == [64, 48]
    full = project_workload(workload, paths={})
    half = project_workload(narrowed, paths={})
    assert full is not None and half is not None
    assert half[2].dense is not None and full[2].dense is not None and half[2].dense.gpu_ms < full[2].dense.gpu_ms


def test_plan_flags_slower_than_dense_without_timing() -> None:
    _, lower = plan(_tiny())
    assert sum(1 for lo in lower.layers if lo.slower_on_target is not None) == 7


REAL_CLOCKS = timing.Clocks


class _Hog:
    """This machine under a CPU hog: the wall clock loses a random whole number of 4 ms ticks at every reading."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(3)
        self.stolen = 0.0

    def wall(self) -> float:
        self.stolen += float(self.rng.integers(0, 4)) * 0.004
        return time.perf_counter() + self.stolen


@pytest.mark.noisy
def test_a_replay_under_a_cpu_hog_is_unstable_and_gate_and_bisect_say_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    hog = _Hog()
    # one call per sample: over many calls alternating in one sample (records.defaults.MIN_SAMPLE_MS), ticks lost at
    # random readings average out and the per-round ratios hold (rightly stable); the single-call path is the one
    # whose samples such a clock spreads
    monkeypatch.setattr(replay_module, "MIN_SAMPLE_MS", 0.0)
    monkeypatch.setattr(timing, "scheduler_tick_ms", lambda: 4.0)
    monkeypatch.setattr(timing, "Clocks", lambda: REAL_CLOCKS(wall=hog.wall))
    workload = _tiny(backend="cpu-numpy", repeats=8)
    record = replay(workload)
    quality = record.outcome.timing
    assert quality is not None and quality.status == "unstable" and quality.remeasured_rounds == 8
    assert record.outcome.effective_speedup is None  # not reported
    calm = RunRecord.model_validate(record.model_dump() | {"outcome": record.outcome.model_dump() | {"timing": None}})
    gate = evaluate(calm, record)
    checks = {c.id: c.status for c in gate.checks}
    assert checks["effective_speedup"] == "inconclusive" and checks["p99_latency"] == "inconclusive"
    # issue 25: inconclusive is neither a pass nor a failure of the check; by default (on_inconclusive: fail) it fails
    # the gate, under warn it does not
    assert not gate.passed and gate.inconclusive and all(c.fails_gate for c in gate.checks if c.status == "inconclusive")
    warn = GatePolicy(effective_speedup={"on_inconclusive": "warn"}, p99_latency={"on_inconclusive": "warn"})
    assert evaluate(calm, record, warn).passed
    result = bisect_runs(calm, record)
    timed = {s.stage: s for s in result.stages if s.stage in ("kernel", "schedule", "outcome")}
    assert all(s.status == "undecided" and "timings unstable" in stage_text(s) for s in timed.values())
    assert result.state in ("undecided", "divergence") and (result.first_stage in (None, "graph", "lower"))
