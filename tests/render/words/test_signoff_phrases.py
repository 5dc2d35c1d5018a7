"""Every note the signoff and playbook code can write has a phrase, and every signoff phrase renders (issue 39)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from sparsedebug.records.equal_latency import equal_latency_values
from sparsedebug.records.notes import Note, NoteValue, note
from sparsedebug.records.run import EqualLatencyQuality, QualityDelta
from sparsedebug.render.words.notes import phrases, say
from sparsedebug.render.words.signoff import PHRASES

ROOT = Path(__file__).resolve().parents[3] / "sparsedebug"
SOURCES = [*sorted((ROOT / "signoff").glob("*.py")), *sorted((ROOT / "playbook").glob("*.py"))]
CODE = re.compile(r'note\(\s*"([a-z_]+\.[a-z_]+)"')

# Values for the phrases that are functions (templates are filled from their own fields).
SAMPLES: dict[str, dict[str, NoteValue]] = {
    "signoff.speedup_own_pairs": {"layers": 3, "converting": 1},
    "signoff.speedup_no_pairs": {"baseline": True},
    "movement.fix_removes": {"p50_ms": 6.0, "removes_ms": 1.5, "basis": "conversion_time", "layers": 2},
    "movement.saving_past_forward": {"p50_ms": 6.0, "saving_ms": 9.5, "basis": "conversion_time"},
    "movement.conversion": {"p50_ms": 6.0, "layers": 2, "cost_ms": 1.5, "growth_ms": 2.0, "reach_ms": 4.0},
    "movement.layer_to_sparse": {"p50_ms": 6.0, "layer": "l0.down", "dense_ms": 2.0, "speedup": 1.6, "saved_ms": 0.75,
                                 "source": "signoff.speedup_own_pairs", "source_layers": 2, "source_converting": 0},
    "movement.schedule_overhead": {"p50_ms": 6.0, "overhead_ms": 3.4, "keep_ms": 0.8, "baseline": True},
    "stack.tactic": {"profile_note": "the builder times both"},
    "stack.measured": {"measured_at": ["2.11.0"], "version": "2.9.1"},
    "stack.limit_applies": {"profile_note": "2:4 removed", "removed_in": "torchao", "known": True, "since": "0.15", "before": None,
                            "boundary": None, "measured_at": []},
    "stack.limit_range": {"profile_note": "MLP not lowered", "known": False, "since": None, "before": None,
                          "boundary": "until 2026-08-08", "measured_at": []},
    "stack.limit_unknown": {"profile_note": "MLP not lowered", "version": None, "known": False, "since": None, "before": None,
                            "boundary": None, "measured_at": []},
    "stack.version_outside": {"title": "cuSPARSELt", "version": "0.5", "known": True, "since": "0.6", "before": None,
                              "boundary": None, "measured_at": ["0.6.3"]},
    "playbook.located": {"state": "diverged", "first_stage": None},
    "playbook.classified": {"winner": "memory"},
    "playbook.reduced": {"file": "reduce.json", "reproducer": "reproducer.yaml"},
    "playbook.no_trace_repro": {"state": "diverged", "stage": "kernel"},
    "playbook.trace_repro": {"layer": "layers.0.self_attn.sdpa", "stage": "lower", "finding": "path_changed",
                             "files": ["repro.py"], "targets": 4},
    "playbook.fix_needs_rerun": {"kind": "trace", "rule": "compute.fallback_time", "action": "exclude_layer"},
    "playbook.fixed_given": {"path": "fixed.json", "kind": "run record"},
    "playbook.replay_fixed_pair": {"file": "fixed.yaml"},
    "playbook.replay_fixed": {"file": "fixed.yaml"},
    "playbook.fixed_drifted": {"drift": 1.08, "judgement": "loss"},
    "playbook.rerun_moved": {"direction": "faster", "change": 0.82, "moved": True},
    "playbook.next_by_attribution": {"winner": "memory", "ms": 1.2, "delta_ms": 2.5, "share": 0.48},
    "playbook.energy_machine": {"machine": "no_reading"},
    "playbook.energy_unmeasured": {"roles": ["baseline", "candidate"], "statuses": ["no_window", "no_log"]},
    "playbook.removed_stale": {"entry": ".b.partial-12", "partial": True, "pid": 12},
}


def equal_latency_sample() -> EqualLatencyQuality:
    """A narrowed dense model timed at the sparse run's latency, losing on quality."""
    return EqualLatencyQuality(
        narrowed_ffn_fraction=0.25, narrowed_latency_ms=27.2, candidate_latency_ms=28.1, latency_matched=True,
        narrowed=QualityDelta(cosine=0.79, rel_err=0.2), candidate=QualityDelta(cosine=0.76, rel_err=0.2), sparsity_wins=False,
    )


def _filled(template: str) -> dict[str, NoteValue]:
    return {name: 1.5 for name in re.findall(r"{(\w+)", template)}


def _sample(code: str) -> dict[str, NoteValue]:
    if code == "signoff.equal_latency":
        return equal_latency_values(equal_latency_sample())
    phrase = PHRASES[code]
    return SAMPLES[code] if callable(phrase) else _filled(phrase)


def test_every_note_the_signoff_and_playbook_code_writes_has_a_phrase() -> None:
    written = {code for path in SOURCES for code in CODE.findall(path.read_text())}
    assert written, "no note codes found: the pattern no longer matches the code"
    assert written <= set(phrases()), sorted(written - set(phrases()))


@pytest.mark.parametrize("code", sorted(PHRASES))
def test_every_signoff_phrase_renders(code: str) -> None:
    text = say(Note(code=code, values=_sample(code)))
    assert text and "{" not in text


def test_conditional_phrases_word_both_branches() -> None:
    assert say(note("signoff.speedup_no_pairs", baseline=False)).endswith("and no baseline to pair them with")
    assert say(note("playbook.located", state="diverged", first_stage="kernel")) == "diverged: first stage kernel"
    assert say(note("playbook.rerun_moved", direction=None, change=None, moved=False)) == "fixed p50 moved: False"
    unit: Mapping[str, NoteValue] = {**SAMPLES["movement.conversion"], "growth_ms": None, "reach_ms": None}
    assert "could reach" not in say(Note(code="movement.conversion", values=dict(unit)))
    assert say(note("stack.limit_unknown", profile_note="x", version=None, known=True, since="1.0", before="2.0",
                    boundary=None, measured_at=[])) == "x; >= 1.0, < 2.0: cannot tell for an unstated version"
