"""Adding a figure to every output is one entry in the review document's headline plus its words: a test adds one
and finds it, at one value, in memo.md, the terminal summary, the JSON, the step summary, report.md, report.html, the
terminal bundle summary, and the gate's table, JUnit file and summary."""

from __future__ import annotations

import pytest
from rich.console import Console

from sparsedebug.records.memo import Figure, FigureSource
from sparsedebug.render.html.bundle import render_bundle_html
from sparsedebug.render.junit import junit_xml
from sparsedebug.render.markdown.memo import render_full_report
from sparsedebug.render.memo.claims import check_claims
from sparsedebug.render.memo.formats import render
from sparsedebug.render.terminal.bundle import bundle_summary
from sparsedebug.render.terminal.gate import gate_table
from sparsedebug.render.words import figures as words
from sparsedebug.signoff.gate import evaluate
from sparsedebug.signoff.memo import gate_memo
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run

ADDED = Figure(quantity="test_added", role="candidate", value=0.123456, unit="ms", clock="measured",
               source=FigureSource(record="candidate.run.json", field="a field the test names"))
SHOWN = "a figure the test added, candidate run: 0.123 ms (measured clock)"


def _text(renderable: object) -> str:
    console = Console(width=400, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.fixture(autouse=True)
def _words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(words.HEADLINE_WORDS, "test_added", "a figure the test added")


def test_a_figure_added_to_the_bundle_document_is_in_every_bundle_output() -> None:
    bundle = make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(5.5, fallback=True))
    assert bundle.memo is not None and [f.quantity for f in bundle.memo.headline] == ["speedup_p50"]
    doc = bundle.memo.model_copy(update={"headline": [*bundle.memo.headline, ADDED]})
    bundle = bundle.model_copy(update={"memo": doc})
    book = load_playbook()
    outputs = {name: render(doc, name) for name in ("markdown", "terminal", "github")}
    outputs |= {"report.md": render_full_report(bundle, book), "report.html": render_bundle_html(bundle, book),
                "terminal summary": _text(bundle_summary(bundle, book))}
    for name, text in outputs.items():
        assert SHOWN in text, name
    assert '"test_added"' in render(doc, "json")
    for name in ("markdown", "terminal", "github"):
        assert check_claims(outputs[name], doc) == [], name


def test_a_figure_added_to_the_gate_document_is_in_every_gate_output() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5)
    doc = gate_memo(evaluate(base, cand), base, cand)
    speedup = doc.headline[0]
    assert speedup.quantity == "speedup_p50" and speedup == doc.checks[0].figure("speedup_p50")
    doc = doc.model_copy(update={"headline": [*doc.headline, ADDED]})
    for name, text in {"table": _text(gate_table(doc)), "junit": junit_xml(doc), "summary": render(doc, "github")}.items():
        assert SHOWN in text, name
        assert words.headline(speedup) in text, name  # the speedup at one value and precision in all three
