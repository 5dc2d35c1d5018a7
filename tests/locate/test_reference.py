"""Two replays on one machine state: the machine's drift between them is not a finding, a real change still is."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sparsedebug.core.stats import compare_samples, median
from sparsedebug.locate.reference import machine_drift
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.run import RunRecord
from sparsedebug.render.words.locate_text import reference_text, verdict_text
from sparsedebug.signoff.gate import evaluate
from tests.support.synth import L, make_run


def _noisy(center: float, seed: int, n: int = 20) -> list[float]:
    """Lognormal jitter (5%) around ``center`` with one preempted round: a quiet machine's samples."""
    rng = np.random.default_rng(seed)
    values = center * rng.lognormal(0.0, 0.05, n)
    values[seed % n] *= 6.0
    return [float(v) for v in values]


@pytest.fixture(scope="module")
def measured() -> RunRecord:
    """A replay-shaped record (two linear layers with paired dense references, one activation), numbers chosen here."""
    run = make_run(
        "planted", [L("fc0", intended="2:4", path="sparse", time_ms=0.4, dense_ms=0.5), L("act0", op="activation", time_ms=0.05),
                    L("fc1", intended="2:4", path="sparse", time_ms=0.3, dense_ms=0.45)], 1.0, n=20,
    )
    layers = [
        layer.model_copy(update={
            "samples_ms": _noisy(median(layer.samples_ms), 11 + i),
            "dense_samples_ms": _noisy(median(layer.dense_samples_ms), 21 + i) if layer.dense_samples_ms else None,
        })
        for i, layer in enumerate(run.kernel.layers)
    ]
    span = _noisy(1.0, 31)
    schedule = run.schedule.model_copy(update={"span_samples_ms": span, "busy_samples_ms": [x * 0.8 for x in span],
                                               "layer_idle_samples_ms": {"fc0": _noisy(0.02, 41), "fc1": _noisy(0.02, 42)}})
    outcome = run.outcome.model_copy(update={"latency_samples_ms": span, "dense_baseline_samples_ms": _noisy(1.3, 51)})
    return run.model_copy(update={"kernel": run.kernel.model_copy(update={"layers": layers}), "schedule": schedule, "outcome": outcome})


def _wobble(r: int) -> float:
    return 1.0 + 0.06 * math.sin(1.7 * r)


def _drifted(run: RunRecord, machine: float, *, layer_factor: dict[str, float] | None = None, forward_extra: float = 1.0) -> RunRecord:
    """``run`` as a machine ``machine`` times slower would have timed it, round by round (dense references too).

    ``layer_factor`` slows a layer's chosen path beyond that; ``forward_extra`` the forward beyond that.
    """
    layers = []
    for layer in run.kernel.layers:
        extra = (layer_factor or {}).get(layer.name, 1.0)
        update: dict[str, object] = {"samples_ms": [x * machine * _wobble(r) * extra for r, x in enumerate(layer.samples_ms)]}
        if layer.dense_samples_ms is not None:
            update["dense_samples_ms"] = [x * machine * _wobble(r) for r, x in enumerate(layer.dense_samples_ms)]
        layers.append(layer.model_copy(update=update))

    def fwd(values: list[float], extra: float = 1.0) -> list[float]:
        return [x * machine * _wobble(r + 3) * extra for r, x in enumerate(values)]

    schedule = run.schedule.model_copy(update={
        "span_samples_ms": fwd(run.schedule.span_samples_ms, forward_extra),
        "busy_samples_ms": fwd(run.schedule.busy_samples_ms, forward_extra),
        "layer_idle_samples_ms": {k: fwd(v) for k, v in run.schedule.layer_idle_samples_ms.items()},
    })
    outcome = run.outcome.model_copy(update={
        "latency_samples_ms": fwd(run.outcome.latency_samples_ms, forward_extra),
        "dense_baseline_samples_ms": fwd(run.outcome.dense_baseline_samples_ms or []),
    })
    return run.model_copy(update={
        "kernel": run.kernel.model_copy(update={"layers": layers}), "schedule": schedule, "outcome": outcome,
    })


def test_a_slower_machine_alone_is_no_difference(measured: RunRecord) -> None:
    slow = _drifted(measured, 1.4)
    raw = compare_samples(measured.outcome.latency_samples_ms, slow.outcome.latency_samples_ms)
    assert raw.direction == "slower"  # compared raw, the machine's drift looks like a regression
    result = bisect_runs(measured, slow)
    assert result.state == "no_regression", verdict_text(result)
    assert result.reference is not None and "the shared dense forward ran x1." in (reference_text(result) or "")
    gate = {check.id: check for check in evaluate(measured, slow).checks}
    assert gate["effective_speedup"].status == "pass" and gate["p99_latency"].status == "pass"
    drift = machine_drift(measured, slow)
    assert drift.forward_factor == pytest.approx(1.4, rel=0.1)
    assert drift.referenced == sorted(layer.name for layer in measured.graph.layers if layer.op == "linear")
    assert drift.kernel_band is not None and drift.kernel_band[0] == 1.0 and drift.kernel_band[1] == pytest.approx(1.4, rel=0.1)


def test_a_real_change_still_shows_on_a_drifted_machine(measured: RunRecord) -> None:
    target = next(layer.name for layer in measured.graph.layers if layer.op == "linear")
    worse = _drifted(measured, 0.8, layer_factor={target: 1.8}, forward_extra=1.5)
    result = bisect_runs(measured, worse)
    assert result.state == "divergence" and result.first_stage == "kernel", verdict_text(result)
    assert [f.layer for f in result.stage("kernel").layers if f.regression] == [target]
    assert {c.id: c.status for c in evaluate(measured, worse).checks}["effective_speedup"] == "fail"


def test_a_layer_counts_only_beyond_the_drift(measured: RunRecord) -> None:
    other = next(layer.name for layer in measured.graph.layers if layer.op != "linear")
    within = bisect_runs(measured, _drifted(measured, 1.3, layer_factor={other: 1.0 / 1.3 * 1.2}))
    assert not [f for f in within.stage("kernel").layers if f.regression]
    beyond = bisect_runs(measured, _drifted(measured, 1.3, layer_factor={other: 3.0}))
    assert [f.layer for f in beyond.stage("kernel").layers if f.regression] == [other]


def test_different_references_give_no_band(measured: RunRecord) -> None:
    threads = measured.model_copy(update={"schedule": measured.schedule.model_copy(update={"threads": 64})})
    drift = machine_drift(measured, threads)
    assert not drift.referenced and drift.kernel_band is None and drift.forward_factor is None and drift.facts is None


def test_a_reference_that_collapsed_never_makes_a_regression(measured: RunRecord) -> None:
    """Threaded BLAS preempted in one replay only: its dense reference is 100x slower there; nothing else is."""
    slowed_ref = measured.model_copy(update={"outcome": measured.outcome.model_copy(update={
        "dense_baseline_samples_ms": [x * 100 for x in measured.outcome.dense_baseline_samples_ms or []]})})
    result = bisect_runs(slowed_ref, measured)  # the candidate looks 100x *faster* than the machine allowed: no finding
    assert result.state == "no_regression", verdict_text(result)
    result = bisect_runs(measured, slowed_ref)
    assert result.state == "no_regression", verdict_text(result)
    gate = {c.id: c.status for c in evaluate(measured, slowed_ref).checks}
    assert gate["effective_speedup"] == "pass" and gate["p99_latency"] == "pass"


def test_a_drifted_pair_through_the_cli(measured: RunRecord, tmp_path: Path) -> None:
    """bisect and gate on two saved records of one workload, the second timed by a machine 1.35x slower."""
    import json

    from sparsedebug.core.io import save_record
    from tests.conftest import invoke

    save_record(measured, tmp_path / "a.json")
    save_record(_drifted(measured, 1.35), tmp_path / "b.json")
    bisect = invoke(["bisect", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"])
    assert bisect.exit_code == 0, bisect.stderr
    assert json.loads(bisect.stdout)["state"] == "no_regression"
    gate = invoke(["gate", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"])
    checks = {c["id"]: c for c in json.loads(gate.stdout)["checks"]}
    assert checks["effective_speedup"]["status"] == "pass" and checks["p99_latency"]["status"] == "pass"
    assert "locate.drift.bands" in [n["code"] for n in checks["effective_speedup"]["basis"]]
