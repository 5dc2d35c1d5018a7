"""What a lead trips on, fixed in the review document: one cause stated once, undecided checks as one thing to do,
the owner of the change by what it touches, the slowest sample where a p95 or p99 would only interpolate, and a
dense-vs-dense pair said to be one."""

from __future__ import annotations

from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.formats import render
from sparsedebug.render.memo.phrases import PLAIN, blocker_owners, reason
from sparsedebug.signoff.decide import FIX_OWNER, change_owner
from sparsedebug.signoff.memo import build_memo
from sparsedebug.signoff.memo_results import reasons, shared_cause_terms, with_shared_cause
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run

BOOK = load_playbook()
LAYER = "encoder.layer.3.output.dense"


def _check(code: str, status: str, owner: str, **terms: str) -> Claim:
    return Claim(kind="reason", code=code, items=terms.pop("items", "").split(",") if "items" in terms else [],
                 terms={"status": status, "role": "fixed", "owner": owner, "on_inconclusive": "fail", **terms})


def _pair(fallback_layer: str = LAYER, why: str = "dtype_unsupported") -> list[Claim]:
    return [_check("fallback_rate", "fail", "compiler sparsity pass owner", items=fallback_layer, why=why),
            _check("precision_drift", "fail", "accelerator architecture owner", changed=f"{LAYER}:fp16:fp32")]


def _decision() -> DecisionOutcome:
    return DecisionOutcome(decision="rollback", code="worse_than_baseline", judged_on="fixed candidate", ship_refused=[], gate=None)


def test_a_fallback_the_precision_change_causes_is_one_reason_under_one_owner() -> None:
    checks = with_shared_cause(_pair())
    assert checks[0].terms["caused_by"] == "precision_drift" and checks[0].terms["owner"] == "accelerator architecture owner"
    out = reasons(_decision(), checks, [], "fixed", BOOK, [])
    assert [r.code for r in out] == ["precision_drift"] and out[0].terms["causes"] == "fallback_rate"
    text = reason(PLAIN, out[0])
    assert text.startswith("Precision and fallback fail from one cause:") and LAYER in text and "restore fp16" in text
    assert text.endswith("Owner: the accelerator architecture owner.")
    decision = Claim(kind="decision", code="rollback", items=["fallback_rate", "precision_drift"],
                     terms={"owner.precision_drift": "accelerator architecture owner",
                            "owner.fallback_rate": "compiler sparsity pass owner", **shared_cause_terms(checks)})
    assert blocker_owners(decision) == [("dense fallback and precision, from one cause", "accelerator architecture owner")]


def test_a_fallback_on_another_layer_or_for_another_reason_stays_its_own_reason() -> None:
    for pair in (_pair(fallback_layer="encoder.layer.4.output.dense"), _pair(why="shape_not_aligned")):
        checks = with_shared_cause(pair)
        assert "caused_by" not in checks[0].terms and shared_cause_terms(checks) == {}
        assert [r.code for r in reasons(_decision(), checks, [], "fixed", BOOK, [])] == ["fallback_rate", "precision_drift"]


def test_checks_undecided_for_one_cause_are_one_reason_that_says_what_decides_them() -> None:
    checks = [_check("effective_speedup", "inconclusive", "serving performance owner", why="unstable"),
              _check("p99_latency", "inconclusive", "serving performance owner", why="unstable"),
              _check("quality_delta", "inconclusive", "model optimization lead", why="too_few")]
    out = [r for r in reasons(_decision(), checks, [], "fixed", BOOK, []) if r.code == "undecided"]
    assert [r.terms["checks"] for r in out] == ["effective_speedup,p99_latency", "quality_delta"]
    text = reason(PLAIN, out[0])
    assert text.startswith("The speed and tail latency checks cannot decide on the fixed run: other load disturbed its timings.")
    assert "Re-run it on a quiet machine" in text and "counts that as a failure" not in text


def test_the_change_is_owned_by_what_it_touches_else_by_the_mechanism() -> None:
    assert change_owner("make_contiguous", "compute") == "model_optimization_lead"  # model code, not the sparsity pass
    assert change_owner("cuda_graph", "scheduling") == "serving_performance_owner"
    assert change_owner("rule_recipe", "compute") == "compiler_sparsity_pass_owner"
    assert change_owner(None, None) is None
    assert set(FIX_OWNER.values()) <= {o.id for o in BOOK.owners}


def _row(text: str, label: str) -> list[str]:
    row = next(line for line in text.splitlines() if line.startswith(f"| {label} |"))
    return [cell.strip() for cell in row.strip("|").split("|")][1:]


def test_too_few_samples_for_a_tail_state_the_slowest_and_why_not_a_p99() -> None:
    base, cand = dense_run(5.0, n=10), sparse_run(6.5, n=10)
    md = render(build_memo(make_bundle(base, cand), BOOK), "markdown")
    cells = _row(md, "latency")
    slowest = max(base.outcome.latency_samples_ms)
    assert cells[0].startswith("p50 ") and f"slowest {slowest:.3f} ms (n=10: a p95 or p99 needs 20 samples)" in cells[0]
    assert "p99" not in cells[1].split(";")[0] and "(n=10)" in cells[1]
    many = render(build_memo(make_bundle(dense_run(5.0), sparse_run(6.5)), BOOK), "markdown")
    assert _row(many, "latency p50 / p95 / p99")[0].endswith("ms (n=30)")


def test_a_dense_pair_says_no_layer_is_meant_sparse_under_the_decision() -> None:
    md = render(build_memo(make_bundle(dense_run(5.0), dense_run(5.0)), BOOK), "markdown").splitlines()
    assert md[3].startswith("No layer of either run is meant to be sparse: a dense-vs-dense comparison")
    sparse = render(build_memo(make_bundle(dense_run(5.0), sparse_run(4.0)), BOOK), "markdown")
    assert "dense-vs-dense" not in sparse


def test_a_failing_quality_check_on_a_registered_model_points_to_the_study_that_compares_prunings() -> None:
    from sparsedebug.records.memo import Figure, FigureSource

    def figure(quantity: str, value: float) -> Figure:
        return Figure(quantity=quantity, role="fixed", value=value, unit="cosine", source=FigureSource(record="r", field="f"))

    check = Claim(kind="reason", code="quality_delta", figures=[figure("cosine", 0.8444), figure("cosine_min", 0.9)],
                  terms={"status": "fail", "owner": "model optimization lead", "model": "minilm-l6"})
    text = reason(PLAIN, check)
    assert "floor 0.9000" in text and "sparsedebug quality minilm-l6" in text
    unregistered = reason(PLAIN, check.model_copy(update={"terms": {**check.terms, "model": ""}}))
    assert "sparsedebug quality" not in unregistered and unregistered.startswith("Quality is below the guardrail")


def test_a_failing_tail_check_on_too_few_samples_states_no_p99() -> None:
    from sparsedebug.records.memo import Figure, FigureSource

    cap = Figure(quantity="p99_max_ratio", value=1.25, unit="ratio", source=FigureSource(record="gate policy", field="f"))
    ratio = Figure(quantity="p99_ratio", role="fixed", value=1.309, unit="ratio", source=FigureSource(record="r", field="f"))
    check = Claim(kind="reason", code="p99_latency", figures=[ratio, cap],
                  terms={"status": "fail", "owner": "serving performance owner", "tail": "few"})
    text = reason(PLAIN, check)
    assert text.startswith("The tail latency check fails: counted against 1.250x the baseline's slowest sample")
    assert "p99 is" not in text and "1.309" not in text
    many = reason(PLAIN, check.model_copy(update={"terms": {**check.terms, "tail": ""}}))
    assert "p99 is 1.309x the baseline's" in many
