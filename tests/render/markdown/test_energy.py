"""Energy in the memo, the report, the page and the terminal: measured per side, estimates apart, missing named."""

from __future__ import annotations

from functools import cache

from sparsedebug.records.energy import EnergyReport
from sparsedebug.records.notes import note
from sparsedebug.records.power import PowerChannel, WindowEnergy
from sparsedebug.records.run import RunRecord, TimeWindow
from sparsedebug.render.markdown.deployment import render_report
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.signoff.energy import side_energy
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.playbook import load_playbook
from tests.conftest import FIXTURES
from tests.render.markdown.test_claims import energy_estimates_labelled, energy_figures, energy_missing_named
from tests.support.bundles import make_bundle

CHANNEL = PowerChannel(source="nvidia-smi", field="power.draw.instant", quantity="power_instant", unit="W",
                       scope="gpu_board_power", update_period_s=0.001)
CAPTURE = "nvidia-smi --query-gpu=timestamp,index,power.draw.instant --format=csv -lms 20 -f power.csv"


def _measure(watts: float, shortest_s: float = 0.0):  # noqa: ANN202
    def measure(window: TimeWindow | None) -> WindowEnergy:
        assert window is not None
        seconds = window.end_utc_s - window.start_utc_s
        if seconds < shortest_s:
            return WindowEnergy(file="power.csv", channel=CHANNEL, status="too_short",
                                why=note("sources.window.few_periods", window_s=seconds, min_periods=3, field="power.draw.instant",
                                         period_s=0.25, update_period_s=0.25, averaging_s=None, part_time_sampled=False))
        return WindowEnergy(file="power.csv", channel=CHANNEL, status="measured", method="integrated_power", joules=watts * seconds,
                            mean_power_w=watts, readings=4, idle_power_w=81.5, power_limit_w=700.0, sm_clock_mhz=1980.0,
                            clock_reasons=["sw_power_cap"])
    return measure


def claim_problems(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """The energy claims checks (the other checks run on every bundle a walk writes; these runs are imported in place)."""
    return [p for check in (energy_figures, energy_estimates_labelled, energy_missing_named) for p in check(bundle, memo, report)]


@cache
def _runs() -> tuple[RunRecord, RunRecord]:
    from sparsedebug.sources.importers.trace.importer import import_trace

    return (import_trace(FIXTURES / "h200" / "trace_dense_T2048.json.gz"), import_trace(FIXTURES / "h200" / "trace_sparse_mlp_T2048.json.gz"))


def _bundle(base_w: float, cand_w: float, shortest_s: float = 0.0) -> LoadedBundle:
    base, cand = _runs()
    sides = [side_energy("baseline", base, _measure(base_w, shortest_s)), side_energy("candidate", cand, _measure(cand_w, shortest_s))]
    missing = any(s.status != "measured" for s in sides)
    report = EnergyReport(log="power.csv", log_option="--power", log_source="nvidia-smi", sides=sides,
                          machine="imported", capture=[CAPTURE] if missing else [])
    return make_bundle(base, cand).model_copy(update={"energy": report})


def test_measured_sides_give_the_perf_per_watt_line_and_the_section() -> None:
    bundle = _bundle(420.0, 380.0)
    memo, report = render_memo_detail(bundle, load_playbook()), render_report(bundle)
    assert claim_problems(bundle, memo, report) == []
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "board power, not wall power" in line and "measured for baseline and candidate" in line
    energy = bundle.energy
    assert energy is not None
    for role in ("baseline", "candidate"):
        side = energy.side(role)
        assert side is not None and side.joules_per_token is not None
        assert f"{side.joules_per_token.p50:.4g} J/token p50" in memo
    assert "## Energy (perf-per-watt)" in report and "idle power 81.5 W (apart" in memo
    assert "SM clock 1980 MHz, clock event reasons active: sw_power_cap" in memo


def test_too_short_windows_are_said_with_the_capture_command() -> None:
    bundle = _bundle(420.0, 380.0, shortest_s=1.0)
    memo, report = render_memo_detail(bundle, load_playbook()), render_report(bundle)
    assert claim_problems(bundle, memo, report) == []
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "not measured" in line and "window too short to measure" in line and CAPTURE in line
    assert "J/token p50" not in memo and CAPTURE in report


def test_the_claims_checks_catch_an_unmeasured_or_unlabelled_energy_figure() -> None:
    bundle = _bundle(420.0, 380.0, shortest_s=1.0)
    memo, report = render_memo_detail(bundle, load_playbook()), render_report(bundle)
    bad = memo + "\n- candidate `x`: 0.123 J/token p50 over 3 iterations.\n- the fixed run would use 4.2 J/forward on the target.\n"
    problems = " | ".join(claim_problems(bundle, bad, report))
    assert "without a measured window energy" in problems and "neither a measured p50 nor labelled estimate" in problems
    measured = _bundle(420.0, 380.0)
    cand = measured.energy.side("candidate") if measured.energy else None
    assert cand is not None and cand.joules_per_token is not None
    wrong = render_memo_detail(measured, load_playbook()).replace(f"{cand.joules_per_token.p50:.4g} J/token p50", "9.999 J/token p50")
    assert "is not its record's p50" in " | ".join(claim_problems(measured, wrong, render_report(measured)))


def test_a_replay_without_rapl_says_this_machine_has_no_energy_reading() -> None:
    bundle = _bundle(420.0, 380.0)
    base, cand = _runs()
    replay = cand.model_copy(update={"source": cand.source.model_copy(update={"kind": "replay", "window": None, "iteration_windows": []})})
    side = side_energy("candidate", replay, None)
    energy = EnergyReport(sides=[side_energy("baseline", base, None), side], machine="no_reading")
    memo = render_memo_detail(bundle.model_copy(update={"energy": energy}), load_playbook())
    assert "no absolute time window (a replay on this machine)" in memo
    report = render_report(bundle.model_copy(update={"energy": energy}))
    assert "This machine has no energy reading" in report
