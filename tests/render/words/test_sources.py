"""Every note code the importers write has a phrase, and the phrases read their values."""

from __future__ import annotations

import ast
from pathlib import Path

import sparsedebug
from sparsedebug.records.note_codes import declared
from sparsedebug.records.notes import NoteValue, note
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.sources import PHRASES

# A value of the right kind for every value name a sources note carries.
SAMPLE: dict[str, NoteValue] = {
    "device": "0", "classes": ["sparse_gemm", "elementwise"], "source": "nvidia-smi", "start_utc_s": 1.7e9, "end_utc_s": 1.7e9 + 2.0, "log_start_utc_s": 1.7e9 - 5.0,
    "log_end_utc_s": 1.7e9 + 1.0, "covered_s": 1.0, "window_s": 2.0, "min_periods": 3, "field": "power.draw",
    "period_s": 1.0, "update_period_s": 0.1, "averaging_s": 1.0, "part_time_sampled": True, "share": 0.3, "needed": 0.75,
    "line_before": 31, "line_after": 32, "label": "forward", "line": 3, "unit": 44, "units": 12, "units_per_iteration": 4,
    "p": 0.01, "count": 3, "layer": "fc1", "file": "gpu.csv", "samples": 4, "seconds": 0.25, "log_first_s": 1.7e9 - 5.0,
    "log_last_s": 1.7e9 + 1.0,
}


def _emitted() -> dict[str, set[str]]:
    """Every ``note("sources...", k=...)`` call outside render/: code -> the value names it passes."""
    root = Path(sparsedebug.__file__).parent
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] in ("render", "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "note" and node.args
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("sources.")):
                found.setdefault(str(node.args[0].value), set()).update(k.arg for k in node.keywords if k.arg)
    return found


def test_every_emitted_sources_note_has_a_phrase_that_reads_its_values() -> None:
    emitted = _emitted()
    assert emitted, "no sources notes found"
    for code, names in emitted.items():
        assert code in PHRASES, code
        text = say(note(code, **{k: SAMPLE[k] for k in names}))
        assert text and "{" not in text, (code, text)


def test_every_phrase_renders_with_sample_values() -> None:
    for code in PHRASES:
        assert say(note(code, **{k: v for k, v in SAMPLE.items() if k in declared()[code].model_fields})), code


def test_window_words_read_as_before() -> None:
    assert say(note("sources.counter.restarted", line_before=31, line_after=32)) == (
        "the counter restarted between lines 31 and 32 (driver reload?): that interval counts from the restart, a lower bound")
    few = say(note("sources.window.few_periods", window_s=0.045, min_periods=3, field="power.draw", period_s=1.0,
                   update_period_s=0.1, averaging_s=1.0, part_time_sampled=True))
    assert few.startswith("the run's window of 45.0 ms spans fewer than 3 update periods of power.draw (1000 ms: "
                          "the log's interval between changes is 100 ms, each reading averages 1 s): too short to measure; on A100")


def test_clock_log_window_words_say_how_the_log_was_placed() -> None:
    taken = note("sources.smi_window.samples", file="gpu.csv", samples=2, start_utc_s=0.0, seconds=1.5)
    assert say(taken) == "gpu.csv: 2 sample(s) in the run's window from 1970-01-01 00:00:00.000 UTC, 1.500 s"
    taken.values.update(offset_h=-5.0, offset_from="fingerprint", fingerprint_created="2026-12-01T10:00:00Z")
    assert say(taken).endswith("; its timestamps read as UTC-5 h (the fingerprint of 2026-12-01T10:00:00Z)")
    unplaced = note("sources.smi_window.no_utc_offset", file="gpu.csv", offset_searched=True, runs=2, tried=38,
                    aligned=[1.0, 2.0], log_first_s=0.0, log_last_s=60.0)
    assert say(unplaced).endswith("; no fingerprint records the machine's UTC offset either; 2 of the 38 real UTC offsets "
                                  "(UTC+1 h, UTC+2 h) each place both runs' windows inside the log: ambiguous, so none is "
                                  "taken (pass --smi-utc-offset)")
    unplaced.values["aligned"] = []
    assert say(unplaced).endswith("none of the 38 real UTC offsets places both runs' windows inside the log "
                                  "(its clock reads 1970-01-01 00:00:00 to 1970-01-01 00:01:00)")
    empty = note("sources.smi_window.empty", file="gpu.csv", start_utc_s=0.0, log_first_s=3600.0, log_last_s=7200.0)
    assert say(empty) == "gpu.csv: no sample inside the run's window from 1970-01-01 00:00:00.000 UTC (log covers 01:00:00 to 02:00:00 UTC)"


def test_every_channel_the_importers_make_has_scope_words_and_a_note() -> None:
    from sparsedebug.render.words.sources_power import SCOPE_WORDS, channel_note
    from sparsedebug.sources.importers.power import load_power_log
    from tests.conftest import FIXTURES

    logs = [load_power_log(FIXTURES / name) for name in (
        "h200/nvidia_smi_short.csv", "artifacts/power_codecarbon_emissions.csv", "artifacts/power_dcgm_metrics.prom",
        "artifacts/power_zeus.csv")]
    channels = [c for log in logs for c in log.channels]
    assert {c.source for c in channels} == {"nvidia-smi", "codecarbon", "dcgm", "zeus"}
    for channel in channels:
        assert channel.scope in SCOPE_WORDS and channel_note(channel), channel


def test_every_capture_command_says_what_it_records() -> None:
    from sparsedebug.render.words.sources_power import CAPTURE_RECORDS
    from sparsedebug.sources.importers.power import CAPTURE_COMMANDS

    assert all(CAPTURE_RECORDS.get(c.source) for c in CAPTURE_COMMANDS)
