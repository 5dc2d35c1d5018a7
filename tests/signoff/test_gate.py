"""The gate's checks on synthetic records: each threshold passes and fails where it should."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparsedebug.core.errors import UserError
from sparsedebug.records.gate import GatePolicy
from sparsedebug.render.memo.formats import render
from sparsedebug.render.words.gate import detail_words, measured_words
from sparsedebug.signoff.gate import evaluate, load_policy
from sparsedebug.signoff.memo import gate_memo
from tests.support.synth import L, dense_run, make_run, sparse_run, spread

REPO = Path(__file__).resolve().parents[2]


def _status(result: object, check_id: str) -> str:
    checks = {c.id: c for c in result.checks}  # type: ignore[attr-defined]
    return checks[check_id].status


def test_clean_sparse_candidate_passes_every_check() -> None:
    result = evaluate(dense_run(5.0), sparse_run(3.5))
    assert result.passed
    assert [c.status for c in result.checks] == ["pass"] * 5
    speed = result.checks[0]
    assert speed.figures[0].quantity == "speedup_p50" and speed.figures[0].value == pytest.approx(5.0 / 3.5, rel=1e-3)
    assert measured_words(speed).startswith("speedup 1.429x")


def test_significant_slowdown_fails_and_noise_does_not() -> None:
    slow = evaluate(dense_run(5.0), sparse_run(6.0))
    assert _status(slow, "effective_speedup") == "fail"
    test = slow.checks[0].test
    assert test is not None and test.significant and test.persistent and test.ratio is not None and test.ratio > 1.05
    # 2% slower: under the asv factor 1.05, so within noise.
    noise = evaluate(dense_run(5.0), sparse_run(5.1))
    assert _status(noise, "effective_speedup") == "pass"
    assert noise.checks[0].test is not None and not noise.checks[0].test.significant
    assert "within noise of 1x" in detail_words(noise.checks[0])


def test_overlapping_samples_are_not_a_finding() -> None:
    base = make_run("a", [L("x")], 5.0)
    # Same centre, much wider spread: ratio of medians 1.0, never significant.
    cand = make_run("b", [L("x")], 5.0)
    cand.outcome.latency_samples_ms = spread(5.0, 30, 0.4)
    pol = GatePolicy(effective_speedup={"min": 1.02}, p99_latency=None)
    assert _status(evaluate(base, cand, pol), "effective_speedup") == "pass"


def test_too_few_samples_are_inconclusive_whatever_the_ratio() -> None:
    # issue 53: one rule (core.judgement): fewer than 6 samples a side judge nothing, slower, faster or separated
    for n in (1, 2, 3, 5):
        for cand_ms in (11.0, 4.2, 1.0):
            result = evaluate(dense_run(5.0, n=n), sparse_run(cand_ms, n=n))
            check = result.checks[0]
            assert check.status == "inconclusive" and check.test is not None and check.test.kind == "too_few"
            assert check.test.needed == 6 and check.test.judgement == "inconclusive" and check.test.p is None
            assert "6 a side needed" in detail_words(check)
            assert _status(result, "p99_latency") == "inconclusive"
            assert not result.passed
    warn = evaluate(dense_run(5.0, n=2), sparse_run(6.0, n=2),
                    GatePolicy(effective_speedup={"on_inconclusive": "warn"}, p99_latency={"on_inconclusive": "warn"}))
    assert warn.checks[0].status == "inconclusive" and warn.passed and warn.inconclusive


def test_six_samples_a_side_decide_two_sided() -> None:
    result = evaluate(dense_run(5.0, n=6), sparse_run(11.0, n=6))
    check = result.checks[0]
    assert check.status == "fail" and check.test is not None and check.test.kind == "rank" and check.test.judgement == "loss"
    assert check.test.p is not None and check.test.p < 0.05
    faster = evaluate(dense_run(5.0, n=6), sparse_run(1.0, n=6))
    assert _status(faster, "effective_speedup") == "pass" and faster.checks[0].test is not None
    assert faster.checks[0].test.judgement == "win" and _status(faster, "p99_latency") == "pass"


def test_fifteen_times_slower_with_an_outlier_fails() -> None:
    # 15x slower, one baseline outlier: the shift persists without it (separated)
    base, cand = dense_run(5.0, n=7), sparse_run(75.0, n=6)
    base.outcome.latency_samples_ms = [5.0, 5.1, 5.05, 5.02, 4.98, 5.07, 60.0]
    result = evaluate(base, cand)
    assert _status(result, "effective_speedup") == "fail", detail_words(result.checks[0])
    assert not result.passed


def test_demanding_a_sparse_win() -> None:
    pol = GatePolicy(effective_speedup={"min": 1.8})
    result = evaluate(dense_run(5.0), sparse_run(3.5), pol)
    assert _status(result, "effective_speedup") == "fail"


def test_p99_ratio_and_budget() -> None:
    base = dense_run(5.0)
    cand = sparse_run(3.5)
    # A few preempted rounds are noise: the p99 of the samples is over 1.25x, but 3 of 30
    # samples above the baseline's worst happen by chance with p=0.12.
    samples = list(cand.outcome.latency_samples_ms)
    cand.outcome.latency_samples_ms = samples[:-3] + [20.0, 21.0, 22.0]
    noise = evaluate(base, cand)
    assert _status(noise, "p99_latency") == "pass"
    within = [n for n in noise.checks[1].basis if n.code == "gate.p99_within_noise"]
    assert within and within[0].values["over"] == 3 and within[0].values["samples"] == 30
    assert "within noise: 3 of 30 candidate samples above 1.25x" in detail_words(noise.checks[1])
    # A tail that is there round after round is not (6 of 30: p=0.0088).
    cand.outcome.latency_samples_ms = samples[:-6] + [20.0, 21.0, 22.0, 20.5, 21.5, 22.5]
    result = evaluate(base, cand)
    assert _status(result, "p99_latency") == "fail"
    codes = [n.code for n in result.checks[1].basis]
    assert "gate.p99_exceeds" in codes and "gate.percentiles" in codes
    assert "p99 ratio" in detail_words(result.checks[1]) and "p50/p95/p99" in detail_words(result.checks[1])
    cand2 = sparse_run(3.5)
    cand2.outcome.budget_ms = 3.0
    budget = evaluate(base, cand2)
    assert _status(budget, "p99_latency") == "fail"
    assert [n.values["budget_ms"] for n in budget.checks[1].basis if n.code.startswith("gate.budget")] == [3.0]
    assert "over the 3 ms budget" in detail_words(budget.checks[1])
    off = evaluate(base, cand2, GatePolicy(p99_latency={"use_budget": False}))
    assert _status(off, "p99_latency") == "pass"


def test_quality_guardrails() -> None:
    bad = evaluate(dense_run(), sparse_run(cosine=0.8))
    assert _status(bad, "quality_delta") == "fail"
    cosine = bad.checks[2].figures[0]
    assert (cosine.quantity, cosine.value, cosine.limit, cosine.direction) == ("cosine", 0.8, 0.9, "at_least")
    assert "cosine 0.8000 < 0.9" in detail_words(bad.checks[2])
    missing = evaluate(dense_run(), sparse_run(quality=False))
    assert _status(missing, "quality_delta") == "skipped"
    assert missing.passed
    strict = evaluate(dense_run(), sparse_run(quality=False), GatePolicy(missing_evidence="fail"))
    assert not strict.passed


def test_accuracy_drop() -> None:
    cand = sparse_run()
    assert cand.outcome.quality is not None
    cand.outcome.quality.accuracy = 0.70
    cand.outcome.quality.dense_accuracy = 0.75
    result = evaluate(dense_run(), cand)
    assert _status(result, "quality_delta") == "fail"
    drop = next(f for f in result.checks[2].figures if f.quantity == "accuracy_drop")
    assert drop.value == pytest.approx(0.05) and drop.limit == 0.01
    assert "accuracy drop 0.0500 > 0.01" in detail_words(result.checks[2])


def test_fallback_rate_names_layer_and_reason() -> None:
    result = evaluate(dense_run(), sparse_run(fallback=True))
    check = {c.id: c for c in result.checks}["fallback_rate"]
    assert check.status == "fail"
    figure = check.figures[0]
    assert (figure.value, figure.count, figure.of) == (0.5, 1, 2)
    assert measured_words(check).startswith("fallback rate 50.0% (1/2)")
    layers = next(n for n in check.basis if n.code == "gate.fallback_layers")
    assert layers.values["layers"] == ["l0.down"] and "shape_not_aligned x1" in str(layers.values["reasons"])
    lenient = evaluate(dense_run(), sparse_run(fallback=True), GatePolicy(fallback_rate={"max_rate": 0.5}))
    assert _status(lenient, "fallback_rate") == "pass"
    dense_vs_dense = evaluate(dense_run(), dense_run())
    nothing = {c.id: c for c in dense_vs_dense.checks}["fallback_rate"]
    assert [n.code for n in nothing.basis] == ["gate.nothing_meant_sparse"]
    assert "no layer of the candidate is meant to be sparse" in detail_words(nothing)


def test_precision_tolerance_by_mode_and_precision_change() -> None:
    drift = evaluate(dense_run(), sparse_run(rel_err=1e-3))
    assert _status(drift, "precision_drift") == "fail"
    fp16_ok = evaluate(dense_run(), sparse_run(rel_err=1e-3, precision="fp16"))
    check = {c.id: c for c in fp16_ok.checks}["precision_drift"]
    assert check.status == "fail"  # fp32 -> fp16 on the sparse layers is a precision change
    changed = next(n for n in check.basis if n.code == "gate.precision_changed")
    assert "l0.up fp32 -> fp16" in changed.values["changes"]  # type: ignore[operator]
    assert "l0.up fp32 -> fp16" in detail_words(check)
    allowed = evaluate(
        dense_run(), sparse_run(rel_err=1e-3, precision="fp16"), GatePolicy(precision_drift={"allow_precision_change": True})
    )
    assert _status(allowed, "precision_drift") == "pass"


def test_disabled_check_is_absent() -> None:
    result = evaluate(dense_run(), sparse_run(fallback=True), GatePolicy(fallback_rate=None))
    assert "fallback_rate" not in [c.id for c in result.checks]
    assert result.passed


def test_default_policy_file_equals_code_defaults() -> None:
    assert load_policy(REPO / "playbooks" / "gate-default.yaml") == GatePolicy()
    assert load_policy(None) == GatePolicy()


def test_policy_errors_name_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text(yaml.safe_dump({"fallback_rate": {"max_rate": 2}, "p99_latency": {"maxratio": 1}}))
    with pytest.raises(UserError) as exc:
        load_policy(bad)
    text = str(exc.value)
    assert f"{bad}: fallback_rate.max_rate:" in text
    assert f"{bad}: p99_latency.maxratio: unknown field" in text


def test_empty_policy_file_is_an_error_not_the_defaults(tmp_path: Path) -> None:
    for text in ("", "# only a comment\n", "\n\n"):
        empty = tmp_path / "p.yaml"
        empty.write_text(text)
        with pytest.raises(UserError, match="p.yaml: empty policy file"):
            load_policy(empty)
    assert load_policy(None) == GatePolicy()


def test_summary_is_the_github_format_of_the_gate_memo() -> None:
    base, cand = dense_run(), sparse_run(fallback=True)
    text = render(gate_memo(evaluate(base, cand), base, cand), "github")
    assert text.startswith("## sparsedebug gate: FAILED")
    assert "| check | result | measured | threshold |" in text
    assert text.count("| FAIL |") == 1
    assert "| `fallback_rate` | FAIL | fallback rate 50.0% (1/2) |" in text
    assert "layers meant to be sparse run dense; the fallback check fails." in text
