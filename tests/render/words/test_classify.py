"""Every note the classify code writes has words, and so does every capture, rule recipe and fix action."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

import sparsedebug
from sparsedebug.classify.context import Capture, capture
from sparsedebug.classify.rules import RULES
from sparsedebug.classify.score import classify_evidence
from sparsedebug.records.classification import Evidence, Fix, FixAction, MissingEvidence
from sparsedebug.records.notes import Note, NoteValue, note
from sparsedebug.records.run import RunSource
from sparsedebug.render.words.classify import PHRASES, RULE_FIX
from sparsedebug.render.words.classify_records import evidence_words, fix_phrase
from sparsedebug.render.words.mechanisms_records import fix_words
from sparsedebug.render.words.notes import say
from tests.classify.test_precision import raised_to_fp32
from tests.classify.test_score import make_run

CLASSIFY = Path(sparsedebug.__file__).parent / "classify"

# One set of values per note code, as the classify code writes them (None where a figure may be missing).
EXAMPLES: dict[str, list[dict[str, NoteValue]]] = {
    "classify.capture": [{"what": c.value} for c in Capture],
    "classify.no_roofline": [{"gpu_known": True}, {"gpu_known": False}],
    "classify.not_recorded": [
        {"what": "sparse_bytes"}, {"what": "tokens"}, {"what": "layer_work"}, {"what": "layer_work", "side": "run_or_baseline"},
        {"what": "graph_bytes"}, {"what": "class_time"}, {"what": "rel_err"}, {"what": "rel_err", "side": "baseline"},
        {"what": "precision_or_k"}, {"what": "quality"}, {"what": "quality", "side": "baseline"},
    ],
    "classify.no_baseline": [{"compares": c} for c in ("bytes_moved", "precision", "rel_err", "quality")],
    "classify.no_sparse_layer": [{"counts": "metadata"}],
    "classify.metadata_bytes": [{"metadata_bytes": 10, "value_bytes": 40, "layers": 2, "worst": "fc1", "worst_ratio": 0.3}],
    "classify.no_gathers": [{"imported": True}, {"imported": False}],
    "classify.gather_bytes": [{"gathered_bytes": 1e6, "dense_bytes": 2e5, "layers": 2, "worst": "fc1", "intended": "4:2:4",
                               "worst_ratio": 5.0}],
    "classify.bytes_growth": [{"bytes": 2e6, "base_bytes": 1e6, "worst": "fc1", "worst_base_bytes": 1e5, "worst_bytes": 3e5}],
    "classify.no_conversion": [{}],
    "classify.conversion_bytes": [{"conversion_bytes": 1e6, "layers": 2, "forward_bytes": 1e6}],
    "classify.low_intensity": [{"below": 1, "layers": 2, "ridge": 12.0, "device": "H200", "roofline": "peak_table",
                                "intensity_min": 1.0, "intensity_max": 30.0}],
    "classify.copies_in_layers": [{}],
    "classify.copy_time": [{"copy_ms": 0.1, "total_ms": 1.0}],
    "classify.ncu_not_applicable": [{}],
    "classify.ncu_metric_missing": [{"report": "k.csv", "section": s, "kernel": "sm90"} for s in
                                    ("SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis")],
    "classify.latency_bound": [{"below_pct": 60.0}],
    "classify.no_ncu_report": [{}],
    "classify.ncu_no_sparse_gemm": [{"report": None}, {"report": "k.csv"}],
    "classify.ncu_kernel": [{"kernel": "sm90", "duration_us": 10.0, "sm_pct": 30.0, "mem_pct": None, "spill_requests": 0.0}],
    "classify.precision_changes": [{"layers": [], "how": [], "cause_layer": None},
                                   {"layers": [f"l{i}" for i in range(8)], "how": ["fp16 -> fp32"] * 8, "cause_layer": "l0",
                                    "cause_codes": ["dtype_change"], "cause_tensors": ["query"], "cause_was": ["fp16"], "cause_now": ["fp32"]}],
    "classify.rel_err_growth": [{"worst": "fc1", "base_rel_err": 1e-4, "rel_err": None, "layers": 2}],
    "classify.rel_err_bound": [{"worst": "fc1", "rel_err": 1e-2, "bound": 1e-3, "precision": "fp16", "accumulation": "fp32"}],
    "classify.cosine_drop": [{"base_cosine": 0.99, "cosine": 0.95}],
    "classify.intent_differs": [{}],
    "classify.no_quality_verdict": [{}],
    "classify.quality_verdicts": [{"checks": ["quality"], "status": ["fail"], "detail": ["cosine 0.9"]}],
    "classify.not_finite": [{"value": "nan"}],
}


def written_codes() -> set[str]:
    """Every ``classify.*`` note code the classify package writes."""
    found: set[str] = set()
    for path in CLASSIFY.glob("*.py"):
        found |= set(re.findall(r'note\(\s*"(classify\.[a-z_]+)"', path.read_text()))
    return found


def test_every_written_code_has_a_phrase_and_an_example() -> None:
    codes = written_codes()
    assert codes, "no classify note found: the scan is broken"
    assert codes <= set(PHRASES), codes - set(PHRASES)
    assert set(PHRASES) == set(EXAMPLES), set(PHRASES) ^ set(EXAMPLES)


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_every_phrase_renders_its_examples(code: str) -> None:
    for values in EXAMPLES[code]:
        text = say(Note(code=code, values=values))
        assert text and "{" not in text and "None" not in text, (code, text)


def test_every_capture_is_worded() -> None:
    for what in Capture:
        assert say(capture(what)).strip()


def test_every_rule_has_a_suggested_test_and_no_stale_one() -> None:
    assert set(RULE_FIX) == {rule.id for rule in RULES}


def test_every_fix_action_is_worded() -> None:
    for code in typing.get_args(FixAction):
        fix = Fix(kind="advice", code=code, rule="memory.metadata_bytes", value=16, layer="fc1", was=4, names_layer="fc1",
                  layer_role="changed", metric="m", direction="down")
        text = fix_words(fix)
        assert text and "None" not in text, code
    assert "V from 4 to 16 (all sparse layers)" in fix_phrase("block_size", "memory.gather_traffic", value=16, was=4)
    assert fix_words(Fix(kind="advice", rule="thermal.clock_drop", metric="m", direction="up", code="rule_recipe")) == RULE_FIX[
        "thermal.clock_drop"
    ]


def _rendered(evidence: list[Evidence], missing: list[MissingEvidence]) -> list[str]:
    return [evidence_words(e) for e in evidence] + [say(m.reason) + say(m.capture) for m in missing]


def test_classifications_render_every_line() -> None:
    imported = make_run()
    imported.source = RunSource(kind="torch_trace")
    base, cand = raised_to_fp32("l1")
    for result in (classify_evidence(make_run()), classify_evidence(imported), classify_evidence(cand, baseline=base)):
        assert all(text and "code=" not in text for text in _rendered(result.evidence, result.missing_evidence))
        if result.fix is not None:
            assert "None" not in fix_words(result.fix)
    assert note("classify.no_ncu_report").code in PHRASES
