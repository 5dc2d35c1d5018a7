"""The review document: built once from a bundle, it validates against the JSON Schema `sparsedebug schema review`
prints, holds every report section and the gate verdicts, and states one speedup per run wherever it is quoted."""

from __future__ import annotations

import json

import jsonschema

from sparsedebug.records.memo import Memo
from sparsedebug.signoff.gate import evaluate
from sparsedebug.signoff.memo import build_memo, gate_memo
from sparsedebug.sources.playbook import load_playbook
from tests.conftest import invoke
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run


def _schema() -> dict[str, object]:
    result = invoke(["schema", "review"])
    assert result.exit_code == 0, result.stderr
    schema: dict[str, object] = json.loads(result.stdout)
    return schema


def test_a_built_bundle_document_validates_against_its_schema() -> None:
    base, cand, fixed = dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(5.5, fallback=True)
    doc = build_memo(make_bundle(base, cand, fixed), load_playbook())
    data = json.loads(doc.model_dump_json())
    jsonschema.validate(data, _schema())
    assert Memo.model_validate(data) == doc  # the stored document reads back as built
    report = doc.report
    assert report is not None
    assert [row.role for row in report.latency] == ["baseline", "candidate", "fixed"]
    assert [run.role for run in report.runs] == ["candidate", "fixed"]
    cand_sections = report.run("candidate")
    assert cand_sections is not None and cand_sections.gate is not None and cand_sections.layers
    assert cand_sections.fallback.fell_back == sum(1 for r in cand_sections.layers if r.fell_back) > 0
    assert doc.gate is not None and doc.gate == report.runs[-1].gate  # the judged run's gate is the memo's


def test_one_speedup_per_run_across_the_document() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5)
    doc = build_memo(make_bundle(base, cand), load_playbook())
    assert doc.report is not None
    row = next(r for r in doc.report.latency if r.role == "candidate")
    quoted = {round(f.value, 12) for f in doc.figures() if f.quantity == "speedup_p50" and f.role == "candidate"}
    gate = doc.verdict().checks[0]
    assert gate.id == "effective_speedup" and gate.figures[0].value is not None
    assert row.speedup is not None and quoted == {round(row.speedup, 12)} == {round(gate.figures[0].value, 12)}


def test_a_gate_document_validates_and_holds_its_verdict() -> None:
    base, cand = dense_run(), sparse_run(fallback=True)
    result = evaluate(base, cand)
    doc = gate_memo(result, base, cand)
    jsonschema.validate(json.loads(doc.model_dump_json()), _schema())
    assert doc.verdict() == result and doc.report is None
