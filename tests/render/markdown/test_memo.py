"""The review memo: structure, numbers from the records, and the decision rules (ship needs evidence)."""

from __future__ import annotations

import pytest

from sparsedebug.core.stats import percentiles
from sparsedebug.records.classification import Fix
from sparsedebug.records.notes import note
from sparsedebug.records.run import FallbackReason
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.render.words.gate import decision_reasons
from sparsedebug.signoff.decide import decide
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run

BOOK = load_playbook()


def test_sections_in_template_order_and_p95_p99_quoted() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    text = render_memo_detail(make_bundle(base, cand), BOOK)
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads == ["## Memo detail", "## Memo detail: symptom", "## Memo detail: mechanism", "## Memo detail: action", "## Memo detail: signoff"]
    p = percentiles(cand.outcome.latency_samples_ms)
    assert f"p50/p95/p99 {p.p50:.3f}/{p.p95:.3f}/{p.p99:.3f} ms (n=30)" in text
    speed = 5.0 / 6.5
    assert f"**{speed:.3f}x**" in text
    for label in ("Failing metric", "Workload or traffic slice", "First failing layer or stage", "Build and runtime tags",
                  "Primary mechanism", "Competing hypotheses", "Missing evidence", "Smallest reversible change",
                  "Expected movement", "Regression risk", "Required artifact", "Required owners", "Final decision"):
        assert f"**{label}**" in text, label
    for risk in ("correctness:", "quality:", "thermal:", "software compatibility:"):
        assert risk in text
    assert "<" not in text.replace("<=", "").replace("< 0.9", ""), "no template placeholders left"


def test_first_stage_and_fallback_layer_named() -> None:
    text = render_memo_detail(make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True)), BOOK)
    assert "stage **`lower`**" in text
    assert "l0.down" in text


def test_ship_with_fallback_and_quality_evidence() -> None:
    base, cand, fixed = dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(3.5)
    bundle = make_bundle(base, cand, fixed)
    decision = decide(bundle, BOOK)
    assert decision.decision == "ship", decision
    assert decision.judged_on == "fixed candidate"
    text = render_memo_detail(bundle, BOOK)
    assert "**ship**" in text
    assert "Measured movement" in text and "latency p50: 6.500 ms -> 3.500 ms" in text


def test_ship_refused_without_quality_evidence() -> None:
    bundle = make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(3.5, quality=False))
    decision = decide(bundle, BOOK)
    assert decision.decision == "bounded_rollout"
    assert any(r.code == "no_quality_evidence" for r in decision.ship_refused)
    assert "no quality evidence" in render_memo_detail(bundle, BOOK)


def test_ship_refused_without_fallback_evidence() -> None:
    fixed = sparse_run(3.5)
    fixed.lower.layers[1].reason = None  # a dense layer whose reason was not recorded
    fixed.lower.layers[1].path = fixed.lower.layers[0].path.__class__("dense")
    bundle = make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True), fixed)
    decision = decide(bundle, BOOK)
    assert decision.decision != "ship"
    assert any(r.code == "no_fallback_evidence" for r in decision.ship_refused)


def test_rollback_when_slower_and_no_fix() -> None:
    decision = decide(make_bundle(dense_run(5.0), sparse_run(6.5)), BOOK)
    assert decision.decision == "rollback"
    assert decision.judged_on == "candidate"


def test_fix_that_does_not_move_is_reported() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    bundle = make_bundle(base, cand, sparse_run(6.5, fallback=True))
    assert bundle.fix is not None and bundle.fix.moved is False
    text = render_memo_detail(bundle, BOOK)
    assert "the fix left latency p50 where it was, within noise (x1.000), against the projection (faster)" in text
    assert decide(bundle, BOOK).decision == "rollback"


def test_a_fix_that_slows_is_said_slower_and_against_the_projection() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    bundle = make_bundle(base, cand, sparse_run(9.8, fallback=True))  # the fixed run 51% slower than the candidate
    assert bundle.fix is not None
    (lat,) = [m for m in bundle.fix.movements if m.metric == "latency p50"]
    assert (lat.direction, lat.expected_direction, lat.as_expected) == ("slower", "faster", False)
    assert lat.change == pytest.approx(9.8 / 6.5, rel=0.01)
    text = render_memo_detail(bundle, BOOK)
    assert "the fix made latency p50 slower (x1.508), against the projection (faster)" in text
    assert "the opposite way to the projection" in text and "more than projected" not in text and "did NOT move" not in text


def test_a_fix_that_speeds_up_as_projected_says_so() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    bundle = make_bundle(base, cand, sparse_run(4.2))
    assert bundle.fix is not None
    (lat,) = [m for m in bundle.fix.movements if m.metric == "latency p50"]
    assert (lat.direction, lat.expected_direction, lat.as_expected) == ("faster", "faster", True)
    assert "the fix made latency p50 faster (x0.646), as projected (faster)" in render_memo_detail(bundle, BOOK)


def test_escalate_without_a_winner() -> None:
    bundle = make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True))
    assert bundle.classification is not None
    bundle = bundle.model_copy(update={"classification": bundle.classification.model_copy(update={"winner": None, "fix": None})})
    decision = decide(bundle, BOOK)
    assert decision.decision == "escalate"
    assert "Primary mechanism**: none" in render_memo_detail(bundle, BOOK)


def test_fallback_reason_matters_for_intended_dense() -> None:
    # A dense baseline has only intended-dense layers: it has fallback evidence and no fallbacks.
    base = dense_run(5.0)
    assert all(lo.reason == FallbackReason.INTENDED_DENSE for lo in base.lower.layers)
    assert decide(make_bundle(base, dense_run(5.0)), BOOK).decision == "ship"


def test_fix_that_moves_but_does_not_recover_rolls_back() -> None:
    bundle = make_bundle(dense_run(5.0), sparse_run(8.0, fallback=True), sparse_run(6.5, fallback=True))
    assert bundle.fix is not None and bundle.fix.moved is True
    decision = decide(bundle, BOOK)
    assert decision.decision == "rollback"
    assert decision.code == "worse_than_baseline"
    assert "even after the bounded fix" in decision_reasons(decision, bundle.fix)[0]


def test_quality_failure_rolls_back() -> None:
    bundle = make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(3.5, cosine=0.7))
    decision = decide(bundle, BOOK)
    assert decision.decision == "rollback"
    assert decision.code == "worse_than_baseline" and "quality_delta" in decision.failing
    assert "worse in quality" in decision_reasons(decision, bundle.fix)[0]


def test_checks_still_failing_after_the_fix_name_the_next_bounded_change() -> None:
    base, cand, fixed = dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(4.0, fallback=True)
    bundle = make_bundle(base, cand, fixed)
    assert bundle.fix is not None
    nothing = render_memo_detail(bundle, BOOK)
    assert "**Next bounded change**: none found: the fixed run still fails fallback_rate" in nothing
    nxt = Fix(kind="layer", layer="l0.down", action="pad", code="pad_shape", rule="compute.fallback_flops",
              metric="fallback_flop_share", direction="down")
    named = bundle.model_copy(update={"fix": bundle.fix.model_copy(update={"next_fix": nxt, "next_basis": note("playbook.next_by_score", winner="memory", score=0.8)})})
    text = render_memo_detail(named, BOOK)
    line = next(line for line in text.splitlines() if "**Next bounded change**" in line)
    assert "the fixed run classified again against the baseline: memory wins (score 0.80)" in line
    assert "still fails fallback_rate" in line and "pad l0.down to an aligned shape so it takes the sparse path, and re-time (rule `compute.fallback_flops`" in line
