"""`playbook run --power` on the H200 trace pair: energy per side from each run's own window, in the memo and report.

The logs are generated (``tests/support/powerlogs``) around the traces' absolute windows (their
``baseTimeNanoseconds``): one covering both runs finely enough to measure every iteration, one an hour
away from both; and the shared H200 nvidia-smi log, which covers neither trace.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import pytest

from sparsedebug.records.energy import EnergyReport
from sparsedebug.records.run import RunRecord
from sparsedebug.sources.importers.power import CAPTURE_COMMANDS
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.powerlogs import write_smi_power_log

H200 = FIXTURES / "h200"
DENSE, SPARSE = H200 / "trace_dense_T2048.json.gz", H200 / "trace_sparse_mlp_T2048.json.gz"
PERIOD_S = 0.001


@cache
def _runs() -> tuple[RunRecord, RunRecord]:
    from sparsedebug.sources.importers.trace.importer import import_trace

    return import_trace(DENSE), import_trace(SPARSE)


def _watts(path: Path, shift_s: float = 0.0) -> tuple[float, list[float], list[bool]]:
    """Start, per-sample board power and busy flags of :func:`_log`'s log."""
    runs = _runs()
    windows = [w for run in runs for w in run.source.iteration_windows]
    start = min(w.start_utc_s for w in windows) - 0.5 + shift_s
    count = int((max(w.end_utc_s for w in windows) + 0.5 + shift_s - start) / PERIOD_S)
    times = [start + k * PERIOD_S for k in range(count)]
    busy = [any(w.start_utc_s - 0.002 <= t - shift_s <= w.end_utc_s for w in windows) for t in times]
    # busy board power varies sample to sample (so the reading changes every period); idle sits near 80 W
    watts = [(450.0 + 60.0 * math.sin(k / 3.0)) if on else 80.0 + 0.5 * math.sin(k) for k, on in enumerate(busy)]
    return start, watts, busy


def _log(path: Path, shift_s: float = 0.0, utc_offset_h: float = 0.0) -> Path:
    """A log every millisecond from 0.5 s before the first run to 0.5 s after the second, idle outside the runs."""
    start, watts, busy = _watts(path, shift_s)
    return write_smi_power_log(path, start, PERIOD_S, watts, idle=[not b for b in busy], utc_offset_h=utc_offset_h)


def _reference_joules(start: float, watts: list[float], a: float, b: float) -> float:
    """fp64 reference: each sample's power over the overlap of [t_k, t_k + period) with [a, b]."""
    total = 0.0
    for k, w in enumerate(watts):
        t0 = start + k * PERIOD_S
        total += w * max(0.0, min(b, t0 + PERIOD_S) - max(a, t0))
    return total


def _walk(tmp_path: Path, *extra: str) -> tuple[str, str, EnergyReport, str]:
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(DENSE), "--candidate", str(SPARSE), "--no-reduce", "-o", str(out), "--tables", *extra])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    energy = EnergyReport.model_validate(json.loads((out / "energy.json").read_text()))
    report = (out / "report.md").read_text()
    return report[report.index("## Memo detail"):], report, energy, result.stdout  # the memo's detail is in report.md


def test_a_log_covering_both_runs_gives_joules_per_token_per_side(tmp_path: Path) -> None:
    log = _log(tmp_path / "power.csv", utc_offset_h=2.0)
    memo, report, energy, stdout = _walk(tmp_path, "--power", str(log), "--smi-utc-offset", "2")
    assert energy.log_option == "--power" and energy.schema_version >= 1
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "board power, not wall power" in line and "measured for baseline and candidate" in line
    runs = dict(zip(("baseline", "candidate"), _runs(), strict=True))
    start, watts, _busy = _watts(log)
    for role, run in runs.items():
        side = energy.side(role)
        assert side is not None and side.status == "measured" and side.over == "iterations"
        assert side.joules_per_token is not None and side.joules_per_token.n == len(run.outcome.latency_samples_ms)
        # each iteration's energy is the generated power integrated over its own window (timestamps are kept to 1 ms)
        for window, energy_of in zip(run.source.iteration_windows, side.windows, strict=True):
            ref = _reference_joules(start, watts, window.start_utc_s, window.end_utc_s)
            assert energy_of.joules == pytest.approx(ref, rel=0.02)
        assert side.idle_power_w is not None and 79.0 < side.idle_power_w < 81.0
        assert side.power_limit_w == 700.0 and side.sm_clock_mhz == 1980.0
        assert 390.0 <= (side.mean_power_w or 0.0) <= 510.0
        per_forward = sorted(w.joules or 0.0 for w in side.windows)
        assert side.joules_per_forward is not None and side.joules_per_forward.p50 == pytest.approx(per_forward[len(per_forward) // 2])
        assert side.joules_per_token.p50 == pytest.approx(side.joules_per_forward.p50 / 2048)
        assert side.joules_per_token.low is not None and side.joules_per_token.confidence == 0.75  # the range of 3 iterations
        assert f"{side.joules_per_token.p50:.4g} J/token p50 (75% interval {side.joules_per_token.low:.4g} to" in memo
        assert f"{side.joules_per_token.p50:.4g}" in stdout
    assert "## Energy (perf-per-watt)" in report and "J/token p50" in report
    assert "fig-energy-svg" in (tmp_path / "bundle" / "report.html").read_text()
    table = (tmp_path / "bundle" / "memo.md").read_text().splitlines()
    row = [c.strip() for c in next(x for x in table if x.startswith("| energy")).strip("|").split("|")][1:]
    for cell, role in zip(row, ("baseline", "candidate"), strict=True):  # the memo's results table, each run's own window
        side = energy.side(role)
        assert side is not None and side.joules_per_token is not None and side.mean_power_w is not None
        assert cell == f"{side.joules_per_token.p50:.4g} J per token at {side.mean_power_w:.0f} W"


def test_the_shared_h200_log_does_not_cover_the_shared_traces(tmp_path: Path) -> None:
    memo, _report, energy, _ = _walk(tmp_path, "--smi", str(H200 / "nvidia_smi_short.csv"), "--smi-utc-offset", "0")
    assert energy.log_option == "--smi"
    assert {s.status for s in energy.sides} <= {"not_covered", "too_short"}
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "not measured" in line and CAPTURE_COMMANDS[0].command in line and "J/token p50" not in memo


def test_windows_shorter_than_the_log_period_are_too_short(tmp_path: Path) -> None:
    runs = _runs()
    start = min(r.source.iteration_windows[0].start_utc_s for r in runs) - 1.0
    watts = [300.0 + 20.0 * math.sin(k) for k in range(12)]
    log = write_smi_power_log(tmp_path / "coarse.csv", start, 0.25, watts)
    memo, _report, energy, _ = _walk(tmp_path, "--power", str(log), "--smi-utc-offset", "0")
    assert [s.status for s in energy.sides] == ["too_short", "too_short"]
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "the windows are too short to measure" in line and "250 ms" in line


def test_a_log_covering_neither_run_names_the_capture_command(tmp_path: Path) -> None:
    log = _log(tmp_path / "later.csv", shift_s=3600.0)
    memo, report, energy, _ = _walk(tmp_path, "--power", str(log), "--smi-utc-offset", "0")
    assert [s.status for s in energy.sides] == ["not_covered", "not_covered"]
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "the energy evidence is missing" in line and CAPTURE_COMMANDS[0].command in line
    assert all(c.command in report for c in CAPTURE_COMMANDS)


def test_a_missing_power_file_is_refused_before_any_work(tmp_path: Path) -> None:
    result = invoke(["playbook", "run", "--baseline", str(DENSE), "--candidate", str(SPARSE), "-o", str(tmp_path / "b"),
                     "--power", str(tmp_path / "absent.csv")])
    assert_clean_error(result, 2, "absent.csv", "--power")
    assert not (tmp_path / "b").exists()


def test_an_energy_counter_is_used_by_its_difference(tmp_path: Path) -> None:
    start, watts, busy = _watts(tmp_path / "unused.csv")
    log = write_smi_power_log(tmp_path / "counter.csv", start, PERIOD_S, watts, idle=[not b for b in busy],
                              energy_start_mj=2.0**32 - 42_000, energy_wrap_mj=2.0**32)  # wraps 42 J in: inside the first iteration
    _memo, _report, energy, _ = _walk(tmp_path, "--power", str(log), "--smi-utc-offset", "0")
    for role, run in zip(("baseline", "candidate"), _runs(), strict=True):
        side = energy.side(role)
        assert side is not None and side.status == "measured" and side.channel == "total_energy_consumption"
        assert {w.method for w in side.windows} == {"counter_difference"}
        if role == "baseline":
            assert [e.code for e in side.windows[0].events] == ["sources.counter.wrapped"], side.windows[0].events
        for window, energy_of in zip(run.source.iteration_windows, side.windows, strict=True):
            # the counter at sample k holds the energy of every interval before it: the same integral as the power's
            ref = _reference_joules(start, watts, window.start_utc_s, window.end_utc_s)
            assert energy_of.joules == pytest.approx(ref, rel=0.02)


def test_the_fixed_re_run_gets_a_measured_perf_per_watt_movement(tmp_path: Path) -> None:
    from sparsedebug.sources.importers.trace.importer import import_trace

    fixed_trace = H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"
    fixed = import_trace(fixed_trace)
    first = _log(tmp_path / "first.csv")
    # the CUDA-graph trace ran two minutes later: a second segment of the same log around it, at 300 W
    w0, w1 = fixed.source.iteration_windows[0].start_utc_s - 0.2, fixed.source.iteration_windows[-1].end_utc_s + 0.2
    second = write_smi_power_log(tmp_path / "second.csv", w0, PERIOD_S, [300.0 + 30.0 * math.sin(k / 3.0) for k in range(int((w1 - w0) / PERIOD_S))])
    log = tmp_path / "power.csv"
    log.write_text(first.read_text() + "".join(second.read_text().splitlines(keepends=True)[1:]))
    memo, _report, energy, _ = _walk(tmp_path, "--power", str(log), "--smi-utc-offset", "0", "--fixed", str(fixed_trace))
    cand, after = energy.side("candidate"), energy.side("fixed")
    assert cand is not None and after is not None and after.status == "measured" and after.joules_per_forward is not None
    assert cand.joules_per_forward is not None
    assert after.tokens_per_joule is None  # a CUDA-graph replay records no op shapes: no token count
    line = next(x for x in memo.splitlines() if x.startswith("  - perf-per-watt:"))
    assert f"candidate {cand.joules_per_forward.p50:.4g} J/forward p50" in line and f"fixed {after.joules_per_forward.p50:.4g} J/forward p50" in line
    assert "board power, not wall power" in line and "records no tokens per forward" in line
    expected = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert cand.mean_power_w is not None
    lat = json.loads((tmp_path / "bundle" / "fix.json").read_text())["movements"][0]
    assert lat["metric"] == "latency p50" and lat["expected_after"] is not None
    assert f"after the fix {cand.mean_power_w * lat['expected_after'] / 1e3:.4g} J/forward" in expected and "expected (estimate:" in expected


def test_a_log_in_utc_plus_two_without_an_offset_is_placed_by_the_one_real_offset_that_covers_both(tmp_path: Path) -> None:
    log = _log(tmp_path / "power.csv", utc_offset_h=2.0)
    _memo, _report, energy, _ = _walk(tmp_path, "--power", str(log))  # no --smi-utc-offset, no fingerprint offset
    assert [s.status for s in energy.sides] == ["measured", "measured"]
    from sparsedebug.playbook.energy import power_log
    from sparsedebug.sources.evidence import EvidencePaths

    placed, option = power_log(EvidencePaths(power=log), _runs())
    assert option == "--power" and placed is not None
    assert placed.utc_offset_h == 2.0 and placed.utc_offset_source == "searched"
