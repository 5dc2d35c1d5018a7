"""JUnit XML of the gate parses, counts right, and has one testcase per threshold."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sparsedebug.records.gate import GatePolicy
from sparsedebug.render.junit import junit_xml
from sparsedebug.signoff.gate import evaluate
from sparsedebug.signoff.memo import gate_memo
from tests.support.synth import dense_run, sparse_run


def test_failing_gate_as_junit() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True, quality=False)
    root = ET.fromstring(junit_xml(gate_memo(evaluate(base, cand), base, cand)))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "effective_speedup",
        "p99_latency",
        "quality_delta",
        "fallback_rate",
        "precision_drift",
    ]
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
    assert failed == ["effective_speedup", "p99_latency", "fallback_rate"]
    assert skipped == ["quality_delta"]
    assert suite.get("tests") == "5" and suite.get("failures") == "3" and suite.get("skipped") == "1"
    assert root.get("failures") == "3"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props == {"baseline": "dense", "candidate": "sparse_fallback",
                     "speedup_p50": "speedup over the baseline (p50), candidate run: 0.769x (measured clock)"}
    fb = cases[3].find("failure")
    assert fb is not None and "l0.down" in (fb.get("message") or "")


def test_passing_gate_has_no_failures_and_escapes_text() -> None:
    base = dense_run()
    base.name = 'dense <main> & "old"'
    cand = sparse_run()
    text = junit_xml(gate_memo(evaluate(base, cand, GatePolicy(precision_drift=None)), base, cand))
    root = ET.fromstring(text)
    assert root.get("tests") == "4" and root.get("failures") == "0"
    assert {p.get("value") for p in root.iter("property")} >= {'dense <main> & "old"'}
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
