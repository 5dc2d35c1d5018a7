"""The walk's energy step around replays: RAPL read around each replay when readable, and said plainly when not."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.core import rapl
from sparsedebug.playbook.energy import Meter
from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.deployment import render_report
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.signoff.energy import energy_report
from sparsedebug.sources.playbook import load_playbook
from tests.conftest import FIXTURES
from tests.support.bundles import make_bundle


def _replay_of(run: RunRecord) -> RunRecord:
    return run.model_copy(update={"source": run.source.model_copy(update={"kind": "replay", "window": None, "iteration_windows": []})})


@pytest.fixture(scope="module")
def runs() -> tuple[RunRecord, RunRecord]:
    from sparsedebug.sources.importers.trace.importer import import_trace

    return (_replay_of(import_trace(FIXTURES / "h200" / "trace_dense_T2048.json.gz")),
            _replay_of(import_trace(FIXTURES / "h200" / "trace_sparse_mlp_T2048.json.gz")))


def test_a_readable_rapl_counter_is_read_around_a_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         runs: tuple[RunRecord, RunRecord]) -> None:
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "energy_uj").write_text("1000000\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    (zone / "name").write_text("package-0\n")
    monkeypatch.setattr(rapl, "POWERCAP", tmp_path)

    def replay() -> RunRecord:
        (zone / "energy_uj").write_text("13500000\n")  # 12.5 J during the replay
        return runs[0]

    meter = Meter()
    assert meter.run("baseline", replay) is runs[0]
    readings = meter.rapl
    reading = readings["baseline"]
    assert reading.joules == pytest.approx(12.5) and not reading.wrapped

    report = energy_report([("baseline", runs[0]), ("candidate", runs[1])], None, rapl=readings, rapl_readable=True)
    bundle = make_bundle(*runs).model_copy(update={"energy": report})
    memo, text = render_memo_detail(bundle, load_playbook()), render_report(bundle)
    assert "CPU package (RAPL" in memo and "12.5 J over the whole replay" in memo and "not the GPU" in memo
    assert "J/token p50" not in memo and "12.5 J over the whole replay" in text


def test_without_rapl_the_memo_says_this_machine_has_no_energy_reading(tmp_path: Path, runs: tuple[RunRecord, RunRecord]) -> None:
    assert rapl.start(tmp_path) is None
    report = energy_report([("baseline", runs[0]), ("candidate", runs[1])], None)
    assert report.machine == "no_reading" and report.capture == []  # these replays model no GPU: nothing to capture
    memo = render_memo_detail(make_bundle(*runs).model_copy(update={"energy": report}), load_playbook())
    line = next(x for x in memo.splitlines() if "Perf-per-watt" in x)
    assert "this machine has no energy reading" in line
