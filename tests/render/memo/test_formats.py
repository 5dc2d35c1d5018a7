"""The memo formats: one registry, every format a renderer of the one model, and the claims check on their text."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from sparsedebug.records.memo import Memo
from sparsedebug.render.memo import formats as registry
from sparsedebug.render.memo.claims import check_claims, lead_problems
from sparsedebug.render.memo.formats import MemoFormat, formats, register, render
from sparsedebug.signoff.gate import evaluate
from sparsedebug.signoff.memo import build_memo, gate_memo
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run

BOOK = load_playbook()


def _memo(fixed: bool = True) -> Memo:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    fix = sparse_run(5.5, fallback=True) if fixed else None
    return build_memo(make_bundle(base, cand, fix), BOOK)


@pytest.mark.parametrize("name", ["markdown", "terminal", "github"])
def test_every_text_format_passes_the_claims_check(name: str) -> None:
    memo = _memo()
    text = render(memo, name)
    assert text.strip()
    assert check_claims(text, memo) == []


def test_json_format_is_the_model_and_validates_against_its_schema() -> None:
    memo = _memo()
    data = json.loads(render(memo, "json"))
    assert Memo.model_validate(data) == memo
    schema = Memo.model_json_schema()
    assert set(schema["required"]) <= set(data)
    assert data["decision"]["code"] in ("ship", "bounded_rollout", "rollback", "escalate")


def test_a_registered_throwaway_format_renders_a_bundle_with_no_other_edit() -> None:
    @register
    class Headline(MemoFormat):
        name: ClassVar[str] = "headline-only"
        help: ClassVar[str] = "the decision code"

        def format(self, memo: Memo) -> str:
            return f"{memo.decision.code}: {len(memo.reasons)}"

    try:
        memo = _memo()
        assert "headline-only" in formats()
        assert render(memo, "headline-only") == f"{memo.decision.code}: {len(memo.reasons)}"
    finally:
        registry._REGISTRY.pop("headline-only")


def test_planted_figure_fails_the_claims_check() -> None:
    memo = _memo()
    text = render(memo, "markdown")
    speed = next(f for f in memo.figures() if f.quantity == "speedup_p50" and f.role == "candidate")
    printed = f"{speed.value:.3f}x"
    assert printed in text
    planted = text.replace(printed, f"{speed.value + 0.123:.3f}x", 1)
    problems = check_claims(planted, memo)
    assert any("no figure behind" in p for p in problems), problems


def test_planted_stock_phrase_fails_the_claims_check() -> None:
    memo = _memo()
    text = render(memo, "markdown") + "\nThe GPU is waiting on the host between launches.\n"
    assert any("waiting on the host" in p for p in check_claims(text, memo))


def test_planted_score_in_an_attribution_ranking_fails() -> None:
    memo = _memo()
    assert memo.hypothesis is not None
    if memo.hypothesis.primary.terms.get("ranked_by") != "attribution":
        pytest.skip("this bundle ranks by rule score")
    text = render(memo, "markdown") + "\nscheduling scores higher than compute.\n"
    assert any("rule score" in p for p in check_claims(text, memo))


def test_two_values_for_one_quantity_in_the_model_fail() -> None:
    memo = _memo()
    first = memo.symptom.failing_metric[0] if memo.symptom else None
    assert first is not None and first.figures
    changed = first.figures[0].model_copy(update={"value": first.figures[0].value * 2})
    broken = memo.model_copy(deep=True)
    assert broken.symptom is not None
    broken.symptom.failing_metric[0].figures.append(changed)
    assert any("two values" in p for p in check_claims(render(memo, "markdown"), broken))


def test_gate_memo_github_summary_lists_every_check() -> None:
    base, cand = dense_run(), sparse_run(fallback=True)
    result = evaluate(base, cand)
    memo = gate_memo(result, base, cand)
    text = render(memo, "github")
    assert all(f"`{c.id}`" in text for c in result.checks)
    assert check_claims(text, memo) == []


def test_memo_md_is_one_page_decision_first() -> None:
    text = render(_memo(), "markdown")
    lines = text.splitlines()
    assert len(lines) <= 70 and len(text.encode()) <= 8192 and max(len(line) for line in lines) <= 300
    assert lines[2].startswith("Decision: **")
    heads = [line for line in lines if line.startswith("## ")]
    assert heads == ["## 1. Symptom", "## 2. Mechanism hypothesis", "## 3. Proposed action", "## 4. Signoff"]
    assert lead_problems(text) == []  # lines, sentences and table rows within their limits; no codes


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    import re

    text = heading.lstrip("#").strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def test_every_figure_of_the_previous_layout_is_in_the_report_at_a_linked_anchor() -> None:
    import re

    from sparsedebug.render.markdown.memo import render_full_report, render_memo_detail

    base, cand, fix = dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(5.5, fallback=True)
    bundle = make_bundle(base, cand, fix)
    memo = build_memo(bundle, BOOK)
    report = render_full_report(bundle, BOOK)
    anchors = {_slug(line) for line in report.splitlines() if line.startswith("#")}
    linked = {target.split("#", 1)[1] for target in memo.detail.values()}
    assert linked <= anchors, linked - anchors
    numbers = set(re.findall(r"\d+\.\d+", render_memo_detail(bundle, BOOK)))
    assert numbers and all(n in report for n in numbers)
    memo_text = render(memo, "markdown")
    assert all(f"({target})" in memo_text for target in memo.detail.values())
