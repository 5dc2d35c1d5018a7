"""The one rule (core.judgement): its verdicts, and gate, bisect and the decision agreeing on every sample count."""

from __future__ import annotations

import numpy as np
import pytest

from sparsedebug.core.judgement import DEFAULT_RULE, judge, judgement_of, needed_samples, short_of
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.gate import GatePolicy
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import JudgementRule
from sparsedebug.signoff.gate import evaluate, load_policy
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run

# What each verdict is called by each of the three: the gate's speed check status, bisect's outcome stage status, and
# the decision's codes that can follow from it (a loss is rolled back or escalated with the speed check failing).
GATE_STATUS = {"loss": "fail", "win": "pass", "no_change": "pass", "inconclusive": "inconclusive"}
BISECT_STATUS = {"loss": "divergent", "win": "improved", "no_change": "same", "inconclusive": "undecided"}


def _noisy(center: float, n: int, seed: int, sigma: float = 0.02) -> list[float]:
    """``n`` latencies around ``center`` with independent log-normal noise (sigma 2%: a quiet machine's forward)."""
    rng = np.random.default_rng(seed)
    return [float(v) for v in center * np.exp(rng.normal(0.0, sigma, n))]


def _pair(n: int, effect: float, seed: int) -> tuple[RunRecord, RunRecord]:
    """A baseline and a candidate whose forward latency is ``1 + effect`` times the baseline's, ``n`` samples a side."""
    base, cand = dense_run(10.0, n=n), dense_run(10.0, n=n)
    cand.name = "cand"
    for run, center, offset in ((base, 10.0, 0), (cand, 10.0 * (1.0 + effect), 1)):
        samples = _noisy(center, n, seed * 2 + offset)
        run.outcome.latency_samples_ms = samples
        run.schedule.span_samples_ms = samples
    return base, cand


def _expected(n: int, effect: float) -> str:
    if n < DEFAULT_RULE.min_samples:
        return "inconclusive"
    if effect >= 0.15:
        return "loss"
    if effect <= -0.15:
        return "win"
    return "no_change"


@pytest.mark.parametrize("effect", [0.0, 0.01, 0.15, 1.0, -0.5])
@pytest.mark.parametrize("n", [1, 2, 3, 6, 20])
def test_gate_bisect_and_decision_agree(n: int, effect: float) -> None:
    """1, 2, 3, 6 and 20 samples a side at 0%, 1%, 15% and 2x slower (and 2x faster): one verdict, three readers."""
    base, cand = _pair(n, effect, seed=int(n * 1000 + effect * 100))
    want = _expected(n, effect)
    speed = next(c for c in evaluate(base, cand, GatePolicy()).checks if c.id == "effective_speedup")
    bisect = bisect_runs(base, cand)
    decision = make_bundle(base, cand).decision
    assert decision is not None and bisect.outcome is not None and speed.test is not None
    assert speed.test.judgement == judgement_of(bisect.outcome) == decision.judgement == want
    assert speed.status == GATE_STATUS[want]
    assert bisect.stage("outcome").status == BISECT_STATUS[want]
    if want == "inconclusive":
        assert decision.code == "too_few_samples" and decision.decision == "escalate"
        assert speed.test.needed == bisect.outcome.needed == 6 and decision.speed is not None and decision.speed.needed == 6
        assert bisect.state == "undecided"
    elif want == "loss":
        assert "effective_speedup" in decision.failing and decision.decision in ("rollback", "escalate")
        assert bisect.state == "divergence"
    else:
        assert "effective_speedup" not in decision.failing and decision.code != "too_few_samples"
        if want == "no_change":  # nothing fails: shipped with its evidence in, else no change
            assert bisect.state == "no_regression" and decision.code in ("passes", "unchanged")


def test_the_rule() -> None:
    assert judgement_of(judge([10.0] * 5, [20.0] * 5)) == "inconclusive"
    assert judge([10.0] * 5, [20.0] * 5).needed == 6
    slow = judge(_noisy(10.0, 6, 1), _noisy(12.0, 6, 2))
    assert judgement_of(slow) == "loss" and slow.p_value is not None and slow.p_value < 0.05
    assert judgement_of(judge(_noisy(10.0, 6, 1), _noisy(5.0, 6, 2))) == "win"
    # significant but within the factor: no change
    assert judgement_of(judge(_noisy(10.0, 40, 3, 0.001), _noisy(10.2, 40, 4, 0.001))) == "no_change"
    # a stricter rule: 10 a side, factor 1.5
    strict = JudgementRule(min_samples=10, factor=1.5)
    assert judge(_noisy(10.0, 8, 1), _noisy(20.0, 8, 2), strict).needed == 10
    assert judgement_of(judge(_noisy(10.0, 12, 1), _noisy(12.0, 12, 2), strict)) == "no_change"
    assert short_of(6, 5) == 6 and short_of(6, 6) is None and needed_samples(paired=True, block=2) == 12


def test_paired_rounds_count_as_samples() -> None:
    base = _noisy(10.0, 5, 1)
    assert judge(base, [v * 2 for v in base], block=1).needed == 6
    assert judgement_of(judge(base + [10.0], [v * 2 for v in base] + [20.0], block=1)) == "loss"


def test_policy_sets_the_rule(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "policy.yaml"
    path.write_text("schema_version: 1\nkind: gate_policy\nsignificance: {alpha: 0.01, factor: 1.1, min_samples: 10}\n")
    pol = load_policy(path)
    assert (pol.significance.alpha, pol.significance.factor, pol.significance.min_samples) == (0.01, 1.1, 10)
    base, cand = _pair(8, 1.0, seed=5)
    speed = evaluate(base, cand, pol).checks[0]
    assert speed.status == "inconclusive" and speed.test is not None and speed.test.needed == 10
    assert bisect_runs(base, cand, min_samples=10).stage("outcome").status == "undecided"


def test_settled_ratio() -> None:
    from sparsedebug.core.judgement import settled

    same = judge(_noisy(10.0, 30, 1, 0.005), _noisy(10.0, 30, 2, 0.005))
    assert settled(same)  # interval well within (1/1.05, 1.05)
    slow = judge(_noisy(10.0, 30, 1, 0.005), _noisy(12.0, 30, 2, 0.005))
    assert settled(slow)  # wholly beyond 1.05
    edge = judge(_noisy(10.0, 8, 1, 0.05), _noisy(10.5, 8, 2, 0.05))
    assert not settled(edge)  # straddles the factor: more rounds could move the verdict
    assert not settled(judge([1.0, 1.0], [2.0, 2.0]))  # too few to judge


def test_measure_samples_until_settled_within_its_budget() -> None:
    from sparsedebug.core.timing import measure

    def work() -> float:
        return float(sum(range(2000)))

    timed = measure({"a": work, "b": work}, rounds=4, warmup=0, settle=lambda s: len(s["a"]) >= 8, settle_budget_s=30.0)
    assert len(timed.samples["a"]) >= 8 and timed.quality.ratio_settled is True and timed.quality.settle_rounds >= 4
    never = measure({"a": work, "b": work}, rounds=4, warmup=0, settle=lambda s: False, settle_budget_s=0.0)
    assert never.quality.ratio_settled is False and not never.quality.stable
    assert "core.timing_unsettled" in [n.code for n in never.quality.problems] and len(never.samples["a"]) == 4
