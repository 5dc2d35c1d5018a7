"""Thermal only from clock evidence inside each run's own window, as a difference between the two windows.

The H200 eager traces ran at 23:40:34.6 (dense) and 23:40:35.0 UTC (sparse); the logs here are
written around them: hot over the candidate only, covering both, covering neither, in local time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparsedebug.classify.score import classify_run
from sparsedebug.records.classification import Classification
from sparsedebug.records.run import RunRecord
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.sources.evidence import EvidencePaths, load_evidence
from sparsedebug.sources.importers.nvidia_smi import load_smi, samples_in_window
from sparsedebug.sources.importers.trace.importer import import_trace

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "h200"
HEADER = "timestamp, clocks.current.sm [MHz], power.draw [W], utilization.gpu [%], clocks_event_reasons.active"


def _log(path: Path, start: datetime, seconds: float, hot: list[tuple[datetime, datetime]], offset_h: float = 0.0,
         period_ms: int = 250) -> Path:
    """A log every ``period_ms`` from ``start`` (UTC) written in local time ``offset_h``: 1980 MHz busy, 1365 MHz and
    thermal slowdown inside ``hot``."""
    lines = [HEADER]
    for k in range(int(seconds * 1000 / period_ms)):
        t = start + timedelta(milliseconds=period_ms * k)
        is_hot = any(a - timedelta(milliseconds=period_ms) < t <= b for a, b in hot)
        clock, mask = (1365, "0x0000000000000020") if is_hot else (1980, "0x0000000000000000")
        local = t + timedelta(hours=offset_h)
        lines.append(f"{local:%Y/%m/%d %H:%M:%S}.{local.microsecond // 1000:03d}, {clock} MHz, 650.00 W, 100 %, {mask}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _utc(run: RunRecord) -> tuple[datetime, datetime]:
    window = run.source.window
    assert window is not None
    return datetime.fromtimestamp(window.start_utc_s, UTC), datetime.fromtimestamp(window.end_utc_s, UTC)


@pytest.fixture(scope="module")
def runs() -> tuple[RunRecord, RunRecord]:
    return import_trace(H200 / "trace_dense_T2048.json.gz"), import_trace(H200 / "trace_sparse_mlp_T2048.json.gz")


def _classify(cand: RunRecord, base: RunRecord, log: Path, offset: float | None) -> Classification:
    evidence = load_evidence(EvidencePaths(smi=log, smi_utc_offset_h=offset))
    return classify_run(cand, baseline=base, evidence=evidence)


def _thermal(cls: Classification) -> dict[str, tuple[bool, str]]:
    return {e.rule: (e.fired, evidence_words(e)) for e in cls.evidence if e.rule in ("thermal.throttle_time", "thermal.clock_drop")}


def test_trace_window_is_absolute_utc(runs: tuple[RunRecord, RunRecord]) -> None:
    start, end = _utc(runs[0])
    assert f"{start:%Y-%m-%d %H:%M:%S}" == "2026-11-29 23:40:34" and (end - start).total_seconds() < 1


def test_hot_candidate_window_against_a_cool_baseline_window_is_thermal(runs: tuple[RunRecord, RunRecord], tmp_path: Path) -> None:
    base, cand = runs
    start = _utc(base)[0] - timedelta(seconds=2)
    log = _log(tmp_path / "smi.csv", start, 5, hot=[_utc(cand)])
    fired = _thermal(_classify(cand, base, log, 0.0))
    assert all(f for f, _ in fired.values()), fired
    reversed_pair = _thermal(_classify(base, cand, log, 0.0))
    assert not any(f for f, _ in reversed_pair.values()), reversed_pair
    against_itself = _thermal(_classify(cand, cand, log, 0.0))
    assert not any(f for f, _ in against_itself.values()) and all("same" in d for _, d in against_itself.values())


def test_a_log_in_local_time_aligns_with_its_offset_only(runs: tuple[RunRecord, RunRecord], tmp_path: Path) -> None:
    base, cand = runs
    log = _log(tmp_path / "local.csv", _utc(base)[0] - timedelta(seconds=2), 5, hot=[_utc(cand)], offset_h=2.0)
    assert all(f for f, _ in _thermal(_classify(cand, base, log, 2.0)).values())
    shifted = _thermal(_classify(cand, base, log, 0.0))  # read as UTC, the log lies two hours off both runs
    assert not any(f for f, _ in shifted.values()) and all("no sample inside" in d for _, d in shifted.values())


def test_a_log_covering_one_run_only_or_neither_gives_no_thermal_verdict(runs: tuple[RunRecord, RunRecord], tmp_path: Path) -> None:
    base, cand = runs
    only_cand = _log(tmp_path / "cand.csv", _utc(cand)[0] - timedelta(milliseconds=100), 1, hot=[_utc(cand)])
    assert not samples_in_window(load_smi(only_cand), base.source.window, 0.0).samples
    one = _classify(cand, base, only_cand, 0.0)
    assert not any(f for f, _ in _thermal(one).values())
    assert one.winner is not None and one.winner.value != "thermal"
    neither = _classify(cand, base, H200 / "nvidia_smi_short.csv", 0.0)
    assert not any(f for f, _ in _thermal(neither).values())
    assert all("no sample inside" in d for _, d in _thermal(neither).values())


def test_the_utc_offset_comes_from_the_runs_fingerprint_unless_the_option_overrides(
    runs: tuple[RunRecord, RunRecord], tmp_path: Path
) -> None:
    from sparsedebug.freeze.fingerprint import collect

    base, cand = runs
    log = _log(tmp_path / "local.csv", _utc(base)[0] - timedelta(seconds=2), 5, hot=[_utc(cand)], offset_h=2.0)
    frozen = collect()
    assert frozen.utc_offset_h is not None  # freeze records the machine's offset
    at_plus_two = frozen.model_copy(update={"utc_offset_h": 2.0})
    base2, cand2 = (r.model_copy(update={"fingerprint": at_plus_two}) for r in (base, cand))
    from_fingerprint = _thermal(_classify(cand2, base2, log, None))
    assert all(f for f, _ in from_fingerprint.values()), from_fingerprint
    assert all("UTC+2 h (the fingerprint of" in d for _, d in from_fingerprint.values())
    overridden = _thermal(_classify(cand2, base2, log, 0.0))  # the option wins: read as UTC, the log misses both runs
    assert not any(f for f, _ in overridden.values()) and all("no sample inside" in d for _, d in overridden.values())
    no_offset = frozen.model_copy(update={"utc_offset_h": None})
    base3, cand3 = (r.model_copy(update={"fingerprint": no_offset}) for r in (base, cand))
    searched = _thermal(_classify(cand3, base3, log, None))  # neither: the one real offset that covers both runs
    assert all(f for f, _ in searched.values()) and all("UTC+2 h (the one real UTC offset" in d for _, d in searched.values())


def test_without_an_offset_the_one_real_offset_that_covers_both_runs_is_used(runs: tuple[RunRecord, RunRecord], tmp_path: Path) -> None:
    """A log written in UTC+2 (or UTC+5:45, Nepal) and no offset given, none recorded: the search over the real UTC
    offsets finds the only one under which the log holds both runs' windows, and says it took it."""
    base, cand = runs
    for offset in (2.0, 5.75, -3.5):
        log = _log(tmp_path / f"local{offset}.csv", _utc(base)[0] - timedelta(seconds=2), 5, hot=[_utc(cand)], offset_h=offset)
        result = _classify(cand, base, log, None)
        thermal = _thermal(result)
        assert thermal and all(f for f, _ in thermal.values()), (offset, thermal)
        assert all(f"UTC{offset:+g} h (the one real UTC offset under which the log covers every run's window)" in d
                   for _, d in thermal.values())
        assert next(s for s in result.scores if s.mechanism.value == "thermal").score > 0
        assert str(log) in result.inputs


def test_a_day_long_log_fits_many_offsets_and_is_said_to_be_ambiguous(runs: tuple[RunRecord, RunRecord], tmp_path: Path) -> None:
    base, cand = runs
    log = _log(tmp_path / "day.csv", _utc(base)[0] - timedelta(hours=12), 24 * 3600, hot=[_utc(cand)], period_ms=60_000)
    thermal = _thermal(_classify(cand, base, log, None))
    assert thermal and not any(f for f, _ in thermal.values())
    assert all("cannot be aligned" in d and "ambiguous" in d and "pass --smi-utc-offset" in d for _, d in thermal.values()), thermal


def test_a_log_no_real_offset_places_over_both_runs_says_so(runs: tuple[RunRecord, RunRecord], tmp_path: Path) -> None:
    base, cand = runs
    log = _log(tmp_path / "late.csv", _utc(cand)[1] + timedelta(minutes=7), 5, hot=[], offset_h=1.0)  # 7 min after both
    thermal = _thermal(_classify(cand, base, log, None))
    assert all(not f and "none of the 39 real UTC offsets places both runs' windows inside the log" in d for f, d in thermal.values())
