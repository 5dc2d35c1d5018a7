"""Interleaved replay sessions (replay_pair): the two workloads share rounds, the order is recorded as it ran,
and bisect and the gate compare such a pair round by round, so drift common to both sides does not alarm."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sparsedebug.core import timing
from sparsedebug.locate.reference import SESSION_NOTE, machine_drift, session_block
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.gate import GatePolicy, P99Policy
from sparsedebug.records.notes import note
from sparsedebug.records.run import RunRecord
from sparsedebug.render.words.locate_text import verdict_text
from sparsedebug.signoff.gate import evaluate
from sparsedebug.sources.replay import replay as replay_module
from sparsedebug.sources.replay.replay import alternating, replay_pair
from sparsedebug.sources.workload.load import load_workload, parse_workload
from tests.sources.replay.model_workloads import candidate_fields, model_workload, tiny_models

ROOT = Path(__file__).resolve().parents[3]
PLANTED = ROOT / "fixtures/workloads/planted/base.yaml"
POLICY = GatePolicy(p99_latency=P99Policy(use_budget=False))


def test_alternating_puts_each_side_after_its_own_reference_and_swaps_every_round() -> None:
    names = ["baseline", "candidate", "baseline:dense", "candidate:dense"]
    assert alternating(0, names) == ["baseline:dense", "baseline", "candidate:dense", "candidate"]
    assert alternating(1, names) == ["candidate:dense", "candidate", "baseline:dense", "baseline"]
    assert alternating(2, ["baseline", "candidate"]) == ["baseline", "candidate"]
    assert alternating(3, ["baseline", "candidate"]) == ["candidate", "baseline"]
    assert alternating(1, ["baseline", "baseline:dense"]) == ["baseline:dense", "baseline"]


def test_the_harness_records_the_order_it_ran() -> None:
    ran: list[str] = []
    variants = {name: (lambda n=name: ran.append(n)) for name in ("baseline", "candidate", "baseline:dense", "candidate:dense")}
    log: list[list[str]] = []
    timing.interleaved(variants, rounds=4, warmup=1, log=log, order=alternating)
    assert [name for names in log for name in names] == ran[4:]  # after the warm-up round
    timed = timing.measure(variants, rounds=4, warmup=0, order=alternating)
    assert timed.order == [alternating(i, list(variants)) for i in range(4)]
    with pytest.raises(ValueError, match="not a permutation"):
        timing.interleaved(variants, rounds=1, order=lambda i, names: names[:1])


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Wrap the driver's harness so every timed call of the whole forwards is logged as it runs."""
    calls: list[list[str]] = []
    real = timing.measure

    def measure(variants: Mapping[str, Callable[[], object]], rounds: int, warmup: int = 1, **kwargs: Any) -> timing.Timed:
        log: list[str] = []
        calls.append(log)
        wrapped = {name: (lambda n=name, f=func: (log.append(n), f())) for name, func in variants.items()}
        return real(wrapped, rounds, warmup, **kwargs)

    monkeypatch.setattr(replay_module, "measure", measure)
    return calls


def _passes(executed: list[str], order: list[list[str]], number: int) -> bool:
    """Whether ``executed`` is each round's recorded order run in whole passes, one to ``number`` of them: a round
    the harness cut short on a loaded machine (``core.timing._run_round``'s bound) runs fewer passes, so the
    count of passes depends on the machine's load and only its range and the order within each pass are checked."""
    at = 0
    for names in order:
        passes = 0
        while passes < number and executed[at : at + len(names)] == names:
            at += len(names)
            passes += 1
        if passes == 0:
            return False
    return at == len(executed)


def _check_session(base: RunRecord, cand: RunRecord, executed: list[str], warmup: int) -> None:
    assert base.session is not None and cand.session is not None
    assert base.session.id == cand.session.id and (base.session.role, cand.session.role) == ("baseline", "candidate")
    assert session_block(base, cand) == 1 and session_block(cand, base) == 1
    order = [entry.split(",") for entry in base.session.forward_order]
    assert len(order) == len(base.outcome.latency_samples_ms) == len(cand.outcome.latency_samples_ms)
    timing_quality = base.outcome.timing
    assert timing_quality is not None
    number = timing_quality.calls_per_sample
    assert number >= 1
    if timing_quality.remeasured_rounds == 0:  # the recorded order is the order the calls ran, after warm-up and calibration
        calibration = timing.CALIBRATION_CALLS * 4  # core.timing.call_times_ms times each of the four variants
        assert _passes(executed[4 * warmup + calibration :], order, number)
    firsts = [next(n for n in names if ":" not in n) for names in order]
    assert firsts == [("baseline", "candidate")[i % 2] for i in range(len(order))]
    for names in order:
        assert names.index(f"{names[1]}:dense") == names.index(names[1]) - 1  # each side right after its own reference
    layers = {layer.name for layer in base.kernel.layers} & {layer.name for layer in cand.kernel.layers}
    assert set(base.session.kernel_order) == layers
    for rounds in base.session.kernel_order.values():
        firsts = [next(n for n in entry.split(",") if ":" not in n) for entry in rounds]
        assert firsts == [("baseline", "candidate")[i % 2] for i in range(len(rounds))]


def test_replay_pair_interleaves_a_declared_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    workload = load_workload(PLANTED).model_copy(update={"threads": 1, "repeats": 6})
    base, cand = replay_pair(workload, workload, base_path=PLANTED, cand_path=PLANTED)
    assert len(calls) == 1  # one measurement of the whole forwards for both sides
    _check_session(base, cand, calls[0], workload.warmup)
    result = bisect_runs(base, cand)
    compared = [m.comparison for stage in result.stages for m in stage.metrics]
    assert compared and all(c.paired for c in compared)
    assert result.reference == SESSION_NOTE


def test_replay_pair_interleaves_a_checkpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _spy(monkeypatch)
    tiny = tiny_models(tmp_path)
    dense = parse_workload(model_workload(tiny["bert"], tiny["text"], repeats=4), "w.yaml")
    sparse = parse_workload(model_workload(tiny["bert"], tiny["text"], **candidate_fields(repeats=4)), "w.yaml")
    base, cand = replay_pair(dense, sparse)
    _check_session(base, cand, calls[0], max(dense.warmup, sparse.warmup))
    assert base.name == dense.name and cand.name == sparse.name


def test_different_threads_are_replayed_apart_without_a_session() -> None:
    workload = load_workload(PLANTED).model_copy(update={"repeats": 3})
    base, cand = replay_pair(workload.model_copy(update={"threads": 1}), workload.model_copy(update={"threads": 2}))
    assert base.session is None and cand.session is None
    assert session_block(base, cand) is None


def _drifted(run: RunRecord, drift: np.ndarray) -> RunRecord:
    """``run`` with round ``i`` of every per-round series, and of every layer's calls, multiplied by ``drift[i]``."""
    def scale(values: list[float] | None) -> list[float] | None:
        if values is None:
            return None
        per = max(1, len(values) // len(drift))
        return [v * float(drift[min(i // per, len(drift) - 1)]) for i, v in enumerate(values)]

    kernel = [k.model_copy(update={"samples_ms": scale(k.samples_ms), "dense_samples_ms": scale(k.dense_samples_ms)}) for k in run.kernel.layers]
    idle = {name: scale(v) or [] for name, v in run.schedule.layer_idle_samples_ms.items()}
    return run.model_copy(update={
        "kernel": run.kernel.model_copy(update={"layers": kernel}),
        "schedule": run.schedule.model_copy(update={
            "span_samples_ms": scale(run.schedule.span_samples_ms), "busy_samples_ms": scale(run.schedule.busy_samples_ms),
            "layer_idle_samples_ms": idle,
        }),
        "outcome": run.outcome.model_copy(update={
            "latency_samples_ms": scale(run.outcome.latency_samples_ms),
            "dense_baseline_samples_ms": scale(run.outcome.dense_baseline_samples_ms),
        }),
    })


def test_a_drift_common_to_both_sides_does_not_alarm() -> None:
    workload = load_workload(PLANTED).model_copy(update={"threads": 1})
    base, cand = replay_pair(workload, workload, base_path=PLANTED, cand_path=PLANTED)
    # deterministic A/A: the candidate's rounds are the baseline's within 1% (so the test cannot flake on this machine)
    noise = np.random.default_rng(0).uniform(0.99, 1.01, len(base.outcome.latency_samples_ms))
    twin = _drifted(base, noise).model_copy(update={"name": cand.name, "session": cand.session})
    drift = np.where(np.arange(len(noise)) < len(noise) // 2, 1.0, 1.8) * np.linspace(1.0, 1.4, len(noise))
    b, c = _drifted(base, drift), _drifted(twin, drift)
    result = bisect_runs(b, c)
    assert result.state == "no_regression", verdict_text(result)
    gate = evaluate(b, c, POLICY)
    assert all(check.status == "pass" for check in gate.checks if check.id in ("effective_speedup", "p99_latency")), gate.checks
    assert machine_drift(b, c).kernel_band is None
    # the same candidate 20% slower in every round, under the same drift, is caught
    slow = _drifted(c, np.full(len(noise), 1.2))
    assert bisect_runs(b, slow).state == "divergence"
    assert next(ch for ch in evaluate(b, slow, POLICY).checks if ch.id == "effective_speedup").status == "fail"


def test_sustained_contention_alone_does_not_stop_a_session_comparison() -> None:
    """A competitor holding a core throughout slowed both sides of every round alike: a session's pair still compares,
    two runs timed apart stay inconclusive."""
    workload = load_workload(PLANTED).model_copy(update={"threads": 1})
    base, cand = replay_pair(workload, workload, base_path=PLANTED, cand_path=PLANTED)
    noise = np.random.default_rng(1).uniform(0.99, 1.01, len(base.outcome.latency_samples_ms))
    twin = _drifted(base, noise).model_copy(update={"name": cand.name, "session": cand.session})
    assert base.outcome.timing is not None
    contended = base.outcome.timing.model_copy(update={
        "status": "unstable", "contention_only": True,
        "reason": "unstable: other processes kept 1.9 of 2 cores busy throughout (this process used 1.0): sustained contention",
    })
    b = base.model_copy(update={"outcome": base.outcome.model_copy(update={"timing": contended})})
    c = twin.model_copy(update={"outcome": twin.outcome.model_copy(update={"timing": contended})})
    assert bisect_runs(b, c).state == "no_regression"
    assert {ch.status for ch in evaluate(b, c, POLICY).checks if ch.id in ("effective_speedup", "p99_latency")} == {"pass"}
    apart = (b.model_copy(update={"session": None}), c.model_copy(update={"session": None}))
    assert bisect_runs(*apart).state == "undecided"
    assert {ch.status for ch in evaluate(*apart, POLICY).checks if ch.id in ("effective_speedup", "p99_latency")} == {"inconclusive"}
    spread = contended.model_copy(update={"contention_only": False, "ratio_settled": False})
    c_spread = c.model_copy(update={"outcome": c.outcome.model_copy(update={"timing": spread})})
    assert bisect_runs(b, c_spread).state == "undecided"


def test_a_session_whose_ratio_settled_compares_despite_spread() -> None:
    """Raw times spread beyond the harness' bound (a busy runner), but the per-round ratio settled: compared."""
    workload = load_workload(PLANTED).model_copy(update={"threads": 1})
    base, cand = replay_pair(workload, workload, base_path=PLANTED, cand_path=PLANTED)
    assert base.outcome.timing is not None and base.outcome.timing.ratio_settled is not None
    spread = base.outcome.timing.model_copy(update={
        "status": "unstable", "contention_only": False, "ratio_settled": True,
        "problems": [note("core.timing_spread", variant="baseline", spread=1.4, limit=1.0)],
    })
    b, c = (run.model_copy(update={"outcome": run.outcome.model_copy(update={"timing": spread})}) for run in (base, cand))
    assert bisect_runs(b, c).stage("outcome").status in ("same", "divergent", "improved")
    assert {ch.status for ch in evaluate(b, c, POLICY).checks if ch.id == "effective_speedup"} <= {"pass", "fail"}
    unsettled = spread.model_copy(update={"ratio_settled": False})
    ub, uc = (run.model_copy(update={"outcome": run.outcome.model_copy(update={"timing": unsettled})}) for run in (base, cand))
    assert next(ch for ch in evaluate(ub, uc, POLICY).checks if ch.id == "effective_speedup").status == "inconclusive"
