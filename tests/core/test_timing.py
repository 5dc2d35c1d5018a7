"""The interleaved timing harness: order, sample counts, warm-up, bad arguments; interference flags and verdicts."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.noise import NoisePolicy
from sparsedebug.core.timing import Clocks, interleaved, measure, unstable_runs
from sparsedebug.render.words.core import timing_words


def test_rounds_interleave_with_rotating_start_after_warmup() -> None:
    calls: list[str] = []
    samples = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, rounds=3, warmup=2)
    assert calls == ["a", "b"] * 2 + ["a", "b", "b", "a", "a", "b"]
    assert list(samples) == ["a", "b"]
    assert all(len(v) == 3 and all(s >= 0.0 for s in v) for v in samples.values())


def test_samples_are_milliseconds() -> None:
    import time

    samples = interleaved({"sleep": lambda: time.sleep(0.02)}, rounds=2, warmup=0)
    assert all(s >= 19.0 for s in samples["sleep"])


@pytest.mark.parametrize(("kwargs", "needle"), [({"rounds": 0}, "rounds=0"), ({"rounds": 1, "warmup": -1}, "warmup=-1")])
def test_bad_arguments(kwargs: dict, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        interleaved({"a": lambda: None}, **kwargs)
    with pytest.raises(UserError, match="no variants"):
        interleaved({}, rounds=1)


# --------------------------------------------------------------------------- noise-aware measure()



class FakeMachine:
    """A simulated process: each variant call costs its CPU time, plus whatever the script says was lost off-CPU."""

    def __init__(self, lost: Callable[[str, int], float] | None = None, switches: Callable[[str, int], int] | None = None) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.sw = 0
        self.calls: dict[str, int] = {}
        self.lost = lost or (lambda name, call: 0.0)
        self.switch_script = switches or (lambda name, call: 0)

    def clocks(self) -> Clocks:
        return Clocks(wall=lambda: self.wall, cpu=lambda: self.cpu, switches=lambda: self.sw, load=lambda: 0.5, machine=lambda: None)

    def variant(self, name: str, cpu_ms: float) -> Callable[[], None]:
        def run() -> None:
            call = self.calls.get(name, 0)
            self.calls[name] = call + 1
            self.cpu += cpu_ms / 1000.0
            self.wall += (cpu_ms + self.lost(name, call)) / 1000.0
            self.sw += self.switch_script(name, call)

        return run


def test_quiet_machine_is_stable_without_flags_or_remeasurement() -> None:
    m = FakeMachine()
    timed = measure({"a": m.variant("a", 2.0), "b": m.variant("b", 4.0)}, rounds=6, warmup=1, clocks=m.clocks(), policy=NoisePolicy())
    q = timed.quality
    assert q.status == "stable" and q.flagged_rounds == 0 and q.remeasured_rounds == 0 and q.flags == {}
    assert timed.samples == {"a": pytest.approx([2.0] * 6), "b": pytest.approx([4.0] * 6)}
    assert [v.cpu_ms for v in q.variants] == [pytest.approx([2.0] * 6), pytest.approx([4.0] * 6)]
    assert q.load_average == [0.5] * 6
    assert timed.calls == {"a": [1, 2, 3, 4, 5, 6], "b": [1, 2, 3, 4, 5, 6]}  # call 0 was the warm-up


def test_a_short_call_is_sampled_over_enough_calls_alternating_with_the_others() -> None:
    m = FakeMachine()
    ran: list[str] = []

    def logged(name: str, cpu_ms: float) -> Callable[[], None]:
        call = m.variant(name, cpu_ms)

        def run() -> None:
            ran.append(name)
            call()

        return run

    timed = measure(
        {"a": logged("a", 0.5), "b": logged("b", 1.0)}, rounds=4, warmup=1, clocks=m.clocks(), policy=NoisePolicy(), min_sample_ms=10.0
    )
    assert timed.calls_per_sample == 20 and timed.quality.calls_per_sample == 20  # the fastest (0.5 ms) x 20 = 10 ms
    assert timed.samples == {"a": pytest.approx([0.5] * 4), "b": pytest.approx([1.0] * 4)}  # each sample: its calls' mean
    assert timed.calls == {"a": [3, 23, 43, 63], "b": [3, 23, 43, 63]}  # 1 warm-up + 2 calibration calls, then 20 a sample
    first_round = ran[6:46]  # after warm-up (a b) and calibration (a b a b)
    assert first_round == ["a", "b"] * 20  # call by call, not 20 of one then 20 of the other
    assert ran[46:48] == ["b", "a"]  # the next round starts at the next variant
    assert [v.cpu_ms for v in timed.quality.variants] == [pytest.approx([0.5] * 4), pytest.approx([1.0] * 4)]


def test_a_round_of_many_calls_flags_what_disturbed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparsedebug.core import timing

    monkeypatch.setattr(timing, "scheduler_tick_ms", lambda: 4.0)
    # one call of "a" in the second round (calls 3 + 20 .. 42) loses two ticks: the whole round is re-run
    m = FakeMachine(lost=lambda name, call: 8.0 if (name, call) == ("a", 30) else 0.0, switches=lambda n, c: 1 if (n, c) == ("a", 30) else 0)
    timed = measure(
        {"a": m.variant("a", 0.5), "b": m.variant("b", 0.5)}, rounds=4, warmup=1, clocks=m.clocks(), policy=NoisePolicy(), min_sample_ms=10.0
    )
    q = timed.quality
    assert q.flagged_rounds == 1 and q.remeasured_rounds == 1 and q.status == "stable"
    assert timed.samples["a"] == pytest.approx([0.5] * 4) and timed.calls["a"][1] == 83  # replaced by the re-run round


def test_a_preempted_call_does_not_move_its_sample() -> None:
    # one of the 20 calls of "a" in the first round loses 8 ms: the sample is the median of its calls
    m = FakeMachine(lost=lambda name, call: 8.0 if (name, call) == ("a", 10) else 0.0)
    timed = measure({"a": m.variant("a", 0.5), "b": m.variant("b", 0.5)}, rounds=3, warmup=1, clocks=m.clocks(), min_sample_ms=10.0)
    assert timed.calls_per_sample == 20 and timed.samples["a"] == pytest.approx([0.5] * 3)


def test_calls_the_scheduler_took_the_cpu_from_are_left_out_of_the_median() -> None:
    # 4 calls a sample of 5 ms each; in the first round 3 of the 4 calls of "b" lose 4 ms off the CPU (a
    # competitor holding the core): a median of all four would read 9 ms, the calls that kept the CPU read 5
    m = FakeMachine(lost=lambda name, call: 4.0 if name == "b" and call in (4, 5, 6) else 0.0)
    timed = measure({"a": m.variant("a", 5.0), "b": m.variant("b", 5.0)}, rounds=3, warmup=1, clocks=m.clocks(), min_sample_ms=10.0)
    assert timed.calls_per_sample == 4 and timed.sample_calls["b"] == [4, 4, 4]
    assert timed.samples["b"] == pytest.approx([5.0] * 3) and timed.quality.preempted_calls == 3


def test_a_sample_whose_every_call_lost_the_cpu_keeps_them_all() -> None:
    # a uniform loss (every call of "b" 1 ms off the CPU, 20% of its wall time): nothing clean to prefer, the median of all
    m = FakeMachine(lost=lambda name, call: 1.0 if name == "b" else 0.0)
    timed = measure({"a": m.variant("a", 4.0), "b": m.variant("b", 4.0)}, rounds=3, warmup=1, clocks=m.clocks(), min_sample_ms=10.0)
    assert timed.samples["b"] == pytest.approx([5.0] * 3) and timed.quality.preempted_calls == 0


def test_a_short_loss_is_timer_noise_not_preemption() -> None:
    # 0.2 ms lost of 5 ms (4%, under both NoisePolicy.call_off_cpu_share and min_lost_ms): every call stays in
    m = FakeMachine(lost=lambda name, call: 0.2 if name == "b" and call % 2 else 0.0)
    timed = measure({"a": m.variant("a", 5.0), "b": m.variant("b", 5.0)}, rounds=3, warmup=1, clocks=m.clocks(), min_sample_ms=10.0)
    assert timed.quality.preempted_calls == 0 and timed.samples["b"] == pytest.approx([5.1] * 3)


def test_a_round_stops_its_passes_at_its_time_bound() -> None:
    from sparsedebug.core.timing import ROUND_BOUND

    m = FakeMachine()
    fast = m.variant("fast", 0.5)
    slow_after = {"calls": 0}

    def turns_slow() -> None:  # 0.5 ms through the warm-up and the calibration, then 50 ms a call
        slow_after["calls"] += 1
        m.variant("turns_slow", 0.5 if slow_after["calls"] <= 3 else 50.0)()

    timed = measure({"fast": fast, "turns_slow": turns_slow}, rounds=3, warmup=1, clocks=m.clocks(), policy=NoisePolicy(), min_sample_ms=10.0)
    assert timed.calls_per_sample == 20
    bound = ROUND_BOUND * 10.0 * 2  # ms a round may run
    passes = math.ceil(bound / 50.5)  # each pass: 0.5 + 50 ms; the pass that crosses the bound is the last
    assert timed.sample_calls == {"fast": [passes] * 3, "turns_slow": [passes] * 3}
    assert timed.samples["turns_slow"] == pytest.approx([50.0] * 3) and timed.samples["fast"] == pytest.approx([0.5] * 3)
    assert timed.quality.short_samples == 3 and timed.calls["fast"] == [3, 3 + passes, 3 + 2 * passes]


def test_calls_per_sample_follows_time_then_count() -> None:
    from sparsedebug.core.timing import MAX_CALLS_PER_SAMPLE, call_times_ms, calls_per_sample
    from sparsedebug.records.defaults import SAMPLE_CALLS, SAMPLE_CALLS_WITHIN_MS

    assert calls_per_sample(0.5, 0.8, 10.0) == 20  # time: 20 x 0.5 ms = 10 ms
    assert calls_per_sample(30.0, 40.0, 10.0) == SAMPLE_CALLS  # long enough, but few calls to average
    assert calls_per_sample(30.0, 100.0, 10.0) == SAMPLE_CALLS_WITHIN_MS // 100.0  # as many as the slowest fits in the stretch
    assert calls_per_sample(30.0, 300.0, 10.0) == 1  # the slowest is past the stretch in one call
    assert calls_per_sample(1e-6, 1e-6, 10.0) == MAX_CALLS_PER_SAMPLE
    m = FakeMachine()
    assert call_times_ms([("a", m.variant("a", 3.0)), ("b", m.variant("b", 2.0))], lambda: m.wall) == pytest.approx((2.0, 3.0))
    assert m.calls == {"a": 2, "b": 2}


def test_a_disturbed_round_is_flagged_and_remeasured_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparsedebug.core import timing

    monkeypatch.setattr(timing, "scheduler_tick_ms", lambda: 4.0)
    # the 3rd timed call of "a" (call index 3: one warm-up + rounds 0..2) loses two 4 ms scheduler ticks
    m = FakeMachine(lost=lambda name, call: 8.0 if (name, call) == ("a", 3) else 0.0, switches=lambda n, c: 1 if (n, c) == ("a", 3) else 0)
    timed = measure({"a": m.variant("a", 2.0), "b": m.variant("b", 2.0)}, rounds=5, warmup=1, clocks=m.clocks(), policy=NoisePolicy())
    q = timed.quality
    assert q.status == "stable" and q.flagged_rounds == 1 and q.remeasured_rounds == 1 and q.still_flagged == 0
    assert q.flags == {"off_cpu": 1, "preempted": 1, "tick_quantised": 1, "outlier": 1}
    assert timed.samples["a"] == pytest.approx([2.0] * 5)  # the disturbed round was replaced
    assert timed.calls["a"][2] == 6 and timed.calls["b"][2] == 6  # round 2 re-run after the five timed calls
    assert q.flagged_rounds > 0 and q.still_flagged == 0 and "re-measured clean" in timing_words(q)


def test_a_cpu_hog_makes_the_comparison_unstable_within_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from sparsedebug.core import timing

    monkeypatch.setattr(timing, "scheduler_tick_ms", lambda: 4.0)
    rng = np.random.default_rng(0)
    lost = {(n, c): float(rng.integers(0, 6)) * 4.0 for n in ("a", "b") for c in range(100)}
    m = FakeMachine(lost=lambda n, c: lost[(n, c)], switches=lambda n, c: 1 if lost[(n, c)] else 0)
    policy = NoisePolicy(remeasure=4)
    timed = measure({"a": m.variant("a", 1.0), "b": m.variant("b", 3.0)}, rounds=10, warmup=0, clocks=m.clocks(), policy=policy)
    q = timed.quality
    assert q.status == "unstable" and not timed.stable
    assert q.remeasured_rounds == 4 and sum(m.calls.values()) == 2 * (10 + 4)
    assert q.flags["off_cpu"] > 0 and q.flags["tick_quantised"] > 0
    assert "core.timing_spread" in [n.code for n in q.problems]
    assert "unstable:" in timing_words(q) and "spread" in timing_words(q)
    assert unstable_runs([("base", None), ("cand", q)]) == ["cand"]
    assert unstable_runs([("base", None)]) == []


def test_uniform_slowdown_keeps_ratios_and_stays_stable() -> None:
    # every call loses a third of its time: wall far above CPU everywhere, but the paired ratio holds
    m = FakeMachine(lost=lambda name, call: {"a": 1.0, "b": 2.0}[name])
    timed = measure({"a": m.variant("a", 2.0), "b": m.variant("b", 4.0)}, rounds=6, warmup=0, clocks=m.clocks(), policy=NoisePolicy())
    q = timed.quality
    assert q.flags.get("off_cpu") == 12 and q.still_flagged == 6
    assert q.status == "stable" and q.still_flagged > 0 and "ratios held" in timing_words(q)
    assert timed.samples["b"] == pytest.approx([6.0] * 6)


def test_tick_quantised_needs_whole_ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparsedebug.core import timing

    monkeypatch.setattr(timing, "scheduler_tick_ms", lambda: 4.0)
    policy = NoisePolicy()
    for lost, quantised in ((8.0, True), (6.0, False), (12.2, True)):
        m = FakeMachine(lost=lambda n, c, lost=lost: lost if c == 2 else 0.0)
        timed = measure({"a": m.variant("a", 5.0)}, rounds=5, warmup=0, clocks=m.clocks(), policy=NoisePolicy(remeasure=0))
        assert ("tick_quantised" in timed.quality.flags) is quantised, lost
    assert policy.max_spread == 1.0 and math.isfinite(policy.max_ratio_spread)


def test_measure_rejects_bad_arguments() -> None:
    with pytest.raises(UserError, match="rounds=0"):
        measure({"a": lambda: None}, rounds=0)
    with pytest.raises(UserError, match="no variants"):
        measure({}, rounds=1)


# --------------------------------------------------------------------------- sustained contention


def _contended(others: float, cores: int) -> tuple[FakeMachine, Clocks]:
    """A FakeMachine on ``cores`` cores where other processes keep ``others`` of them busy all along."""
    m = FakeMachine()
    clocks = m.clocks()
    clocks.machine = lambda: (m.cpu + others * m.wall, cores)
    return m, clocks


@pytest.mark.parametrize(
    ("others", "cores", "status"),
    [(1.0, 2, "unstable"), (0.05, 2, "stable"), (1.0, 64, "stable"), (3.0, 4, "unstable"), (0.3, 2, "stable")],
)
def test_a_competitor_holding_a_core_makes_the_comparison_unstable(others: float, cores: int, status: str) -> None:
    """No round is disturbed more than another (the flags see nothing), yet the spare cores were taken throughout."""
    m, clocks = _contended(others, cores)
    timed = measure({"a": m.variant("a", 100.0), "b": m.variant("b", 200.0)}, rounds=5, warmup=1, clocks=clocks, policy=NoisePolicy())
    assert timed.quality.flagged_rounds == 0
    assert timed.quality.status == status, timing_words(timed.quality)
    assert timed.quality.competing_cores == pytest.approx(others, abs=1e-6)
    assert timed.quality.contended_share == (1.0 if status == "unstable" else 0.0)
    if status == "unstable":
        assert "core.timing_contention" in [n.code for n in timed.quality.problems]
    assert timed.quality.contention_only == (status == "unstable")  # no round disturbed: contention is the only problem
    if status == "unstable":  # variants timed in the same rounds still compare; runs timed apart do not
        assert unstable_runs([("a", timed.quality)], same_rounds=True) == []
        assert unstable_runs([("a", timed.quality)]) == ["a"]


def test_a_burst_over_part_of_the_measurement_is_not_sustained_contention() -> None:
    """A competitor holding a core for the first 60% of the time averages 0.6 cores (above the 0.5 limit),
    but it did not last: the windows after it are quiet, and the verdict stays stable."""
    m = FakeMachine()
    clocks = m.clocks()
    end = 10 * 0.3  # 10 rounds of 300 ms

    def others_so_far() -> float:
        return min(m.wall, 0.6 * end)

    clocks.machine = lambda: (m.cpu + others_so_far(), 2)
    timed = measure({"a": m.variant("a", 100.0), "b": m.variant("b", 200.0)}, rounds=10, warmup=0, clocks=clocks, policy=NoisePolicy())
    q = timed.quality
    assert q.competing_cores == pytest.approx(0.6, abs=1e-6)
    assert q.contended_share == pytest.approx(0.6, abs=0.05)
    assert q.status == "stable", timing_words(q)
    whole = NoisePolicy(min_contended_share=0.5)  # the same burst, judged by a policy that calls 60% sustained
    m2 = FakeMachine()
    clocks2 = m2.clocks()
    clocks2.machine = lambda: (m2.cpu + min(m2.wall, 0.6 * end), 2)
    again = measure({"a": m2.variant("a", 100.0), "b": m2.variant("b", 200.0)}, rounds=10, warmup=0, clocks=clocks2, policy=whole)
    assert again.quality.status == "unstable" and "60% of the time" in timing_words(again.quality)


def test_this_process_s_own_threads_are_not_competitors() -> None:
    """Two threads of ours keep both cores busy (process CPU time twice the wall time): nobody else competes."""
    m = FakeMachine()
    clocks = m.clocks()
    clocks.cpu = lambda: 2 * m.cpu
    clocks.machine = lambda: (2 * m.cpu + 0.01 * m.wall, 2)
    timed = measure({"a": m.variant("a", 100.0), "b": m.variant("b", 200.0)}, rounds=5, warmup=1, clocks=clocks, policy=NoisePolicy())
    assert timed.quality.competing_cores == pytest.approx(0.01, abs=1e-6)
    assert timed.quality.status == "stable", timing_words(timed.quality)


def test_contention_is_not_judged_on_a_short_measurement() -> None:
    m, clocks = _contended(1.0, 2)
    timed = measure({"a": m.variant("a", 1.0)}, rounds=5, warmup=0, clocks=clocks, policy=NoisePolicy())
    assert timed.quality.competing_cores is None and timed.quality.status == "stable"


def test_machine_cpu_reads_proc_stat(tmp_path: Path) -> None:
    import os

    from sparsedebug.core.noise import machine_cpu

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 10 50 900 7 3 2 5 0 0\ncpu0 50 5 25 450 3 1 1 2 0 0\ncpu1 50 5 25 450 4 2 1 3 0 0\nintr 1\n")
    busy, cores = machine_cpu(stat) or (0.0, 0)
    assert cores == 2 and busy == pytest.approx((100 + 10 + 50 + 3 + 2 + 5) / os.sysconf("SC_CLK_TCK"))
    stat.write_text("garbage\n")
    assert machine_cpu(stat) is None
    assert machine_cpu(tmp_path / "missing") is None
