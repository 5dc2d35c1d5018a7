"""Energy per side from each run's own window: per iteration, over windows, over the run; estimates apart."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from sparsedebug.core.tails import quantile_bounds
from sparsedebug.records.notes import note
from sparsedebug.records.power import PowerChannel, WindowEnergy
from sparsedebug.records.run import RunRecord, TimeWindow
from sparsedebug.render.words.signoff import estimate_basis, side_note
from sparsedebug.signoff.energy import side_energy, summarise, target_estimate
from tests.conftest import FIXTURES

CHANNEL = PowerChannel(source="nvidia-smi", field="power.draw.instant", quantity="power_instant", unit="W",
                       scope="gpu_board_power", update_period_s=0.001)


@cache
def _trace(name: str) -> RunRecord:
    from sparsedebug.sources.importers.trace.importer import import_trace

    return import_trace(FIXTURES / "h200" / name)


def _constant(watts: float, shortest_s: float = 0.0, calls: list[TimeWindow] | None = None):  # noqa: ANN202
    """A fake log of constant board power: measures any window at least ``shortest_s`` long."""

    def measure(window: TimeWindow | None) -> WindowEnergy:
        assert window is not None
        if calls is not None:
            calls.append(window)
        seconds = window.end_utc_s - window.start_utc_s
        if seconds < shortest_s:
            return WindowEnergy(file="log.csv", channel=CHANNEL, status="too_short", start_utc_s=window.start_utc_s,
                                end_utc_s=window.end_utc_s,
                                why=note("sources.window.few_periods", window_s=seconds, min_periods=1, field="power.draw.instant",
                                         period_s=shortest_s, update_period_s=shortest_s, averaging_s=None, part_time_sampled=False))
        return WindowEnergy(file="log.csv", channel=CHANNEL, status="measured", method="integrated_power", start_utc_s=window.start_utc_s,
                            end_utc_s=window.end_utc_s, joules=watts * seconds, mean_power_w=watts, readings=5, idle_power_w=80.0,
                            power_limit_w=700.0, sm_clock_mhz=1980.0)
    return measure


def test_per_iteration_figures_match_power_times_latency() -> None:
    run = _trace("trace_sparse_mlp_T2048.json.gz")
    side = side_energy("candidate", run, _constant(400.0))
    assert side.status == "measured" and side.over == "iterations"
    expected = [400.0 * ms / 1e3 for ms in run.outcome.latency_samples_ms]
    assert side.joules_per_forward is not None and side.joules_per_token is not None and side.tokens_per_joule is not None
    assert side.joules_per_forward.p50 == pytest.approx(float(np.median(expected)), rel=1e-5)  # absolute epoch seconds keep ~0.2 us
    assert side.joules_per_token.p50 == pytest.approx(float(np.median(expected)) / 2048, rel=1e-5)  # absolute epoch seconds keep ~0.2 us
    assert side.tokens_per_joule.p50 == pytest.approx(2048 / float(np.median(expected)), rel=1e-5)  # absolute epoch seconds keep ~0.2 us
    # 3 iterations bound no 95% median interval: their range is a 75% one (1 - 2 * 0.5**3)
    assert side.joules_per_forward.n == 3 and side.joules_per_forward.confidence == 0.75
    assert (side.joules_per_forward.low, side.joules_per_forward.high) == (pytest.approx(min(expected), rel=1e-5), pytest.approx(max(expected), rel=1e-5))
    assert (side.idle_power_w, side.power_limit_w, side.sm_clock_mhz) == (80.0, 700.0, 1980.0)


def test_too_short_iterations_fall_back_to_the_whole_run() -> None:
    run = _trace("trace_dense_T2048.json.gz")
    calls: list[TimeWindow] = []
    side = side_energy("baseline", run, _constant(300.0, shortest_s=0.015, calls=calls))
    assert side.status == "measured" and side.over == "run_window" and side.forwards_per_window == 3
    total = sum(run.outcome.latency_samples_ms) / 1e3
    assert side.joules_per_forward is not None
    assert side.joules_per_forward.p50 == pytest.approx(300.0 * total / 3, rel=1e-5)
    assert len(calls) == 4  # three iterations tried, then the span of all three


def test_a_window_the_log_cannot_measure_keeps_its_reason() -> None:
    side = side_energy("baseline", _trace("trace_dense_T2048.json.gz"), _constant(300.0, shortest_s=1.0))
    assert side.status == "too_short" and side.joules_per_forward is None and "(1000 ms:" in side_note(side)


def test_windows_of_consecutive_iterations_give_an_interval() -> None:
    run = _trace("trace_dense_T2048.json.gz")
    base = run.source.iteration_windows[0]
    windows = [TimeWindow(start_utc_s=base.start_utc_s + k, end_utc_s=base.start_utc_s + k + 0.01 * (1 + k % 3), source="test")
               for k in range(16)]
    many = run.model_copy(update={"source": run.source.model_copy(update={"iteration_windows": windows})})
    side = side_energy("baseline", many, _constant(250.0, shortest_s=0.015))
    assert side.over == "windows" and side.forwards_per_window == 2 and len(side.windows) == 8
    per_forward = [250.0 * (windows[2 * g + 1].end_utc_s - windows[2 * g].start_utc_s) / 2 for g in range(8)]
    assert side.joules_per_forward is not None
    assert side.joules_per_forward.p50 == pytest.approx(float(np.median(per_forward)))
    assert side.joules_per_forward.low is not None and side.joules_per_forward.high is not None
    assert side.joules_per_forward.low <= side.joules_per_forward.p50 <= side.joules_per_forward.high


def test_summarise_uses_the_median_order_statistic_interval() -> None:
    values = [float(v) for v in range(1, 21)]
    s = summarise(values, "J/token")
    bounds = quantile_bounds(values, 0.5, 0.025)
    assert (s.p50, s.low, s.high, s.n) == (10.5, bounds.low, bounds.high, 20)
    assert s.low is not None and s.high is not None and s.low < 10.5 < s.high
    one = summarise([2.0], "J/token")
    assert (one.p50, one.low, one.high) == (2.0, None, None)
    few = summarise([3.0, 1.0, 2.0, 5.0], "J/token")
    assert (few.p50, few.low, few.high, few.confidence) == (2.5, 1.0, 5.0, 0.875)


def test_a_replay_has_no_window_to_measure() -> None:
    run = _trace("trace_dense_T2048.json.gz")
    replay = run.model_copy(update={"source": run.source.model_copy(update={"kind": "replay", "window": None, "iteration_windows": []})})
    side = side_energy("baseline", replay, _constant(300.0))
    assert side.status == "no_window" and side.replayed and "a replay on this machine" in side_note(side)


def test_no_log_is_said() -> None:
    side = side_energy("candidate", _trace("trace_dense_T2048.json.gz"), None)
    assert side.status == "no_log" and side.joules_per_forward is None


def test_target_estimate_is_projected_forward_times_load_power() -> None:
    from sparsedebug.sources.replay.replay import replay
    from sparsedebug.sources.target.power import board_power_under_load
    from sparsedebug.sources.workload.load import load_workload

    run = replay(load_workload(FIXTURES / "workloads" / "llama_2of4.yaml"), repeats=3)
    est = target_estimate(run)
    power = board_power_under_load("h200")
    assert est is not None and power is not None and run.target is not None and run.target.forward.candidate is not None
    assert est.joules_per_forward == pytest.approx(run.target.forward.candidate.total_ms / 1e3 * power.median_w)
    assert est.launch == run.target.launch and est.power_basis == power.basis and estimate_basis(est).startswith("estimate:")


def test_board_power_under_load_reads_the_shared_log() -> None:
    from sparsedebug.sources.target.power import board_power_under_load

    power = board_power_under_load("h200")
    assert power is not None
    rows = [line.split(", ") for line in (FIXTURES / "h200" / "nvidia_smi_short.csv").read_text().splitlines()[1:]]
    busy = [float(r[4].split()[0]) for r in rows if float(r[5].split()[0]) >= 50]
    assert power.samples == len(busy) and power.median_w == pytest.approx(float(np.median(busy)))
    assert (power.low_w, power.high_w, power.limit_w) == (min(busy), max(busy), 700.0)
    assert len(power.basis.lines) == len(busy) and power.basis.file == "nvidia_smi_short.csv" and power.basis.min_utilization_pct == 50
