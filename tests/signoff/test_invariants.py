"""The review document's invariants: each rule, planted in a document built from a real H200 pair, withholds the claim
it breaks, and the memo names the check instead of stating the contradiction."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from sparsedebug.records.memo import Claim, Memo
from sparsedebug.render.memo.formats import render as render_memo
from sparsedebug.render.memo.phrases import MD, reason
from sparsedebug.signoff.invariants import RULES, enforce, violations
from sparsedebug.signoff.memo_engine import fig
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.importers.trace.importer import import_trace
from tests.support.bundles import make_bundle
from tests.support.tracegen import TraceSpec, write_trace

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "h200"


@pytest.fixture(scope="module")
def eager() -> LoadedBundle:
    """The shared eager pair, walked in memory."""
    return make_bundle(import_trace(H200 / "trace_dense_T2048.json.gz"), import_trace(H200 / "trace_sparse_mlp_T2048.json.gz"))


def _memo(b: LoadedBundle) -> Memo:
    assert b.memo is not None
    return b.memo.model_copy(deep=True)


def _held(memo: Memo) -> dict[str, str]:
    return {c.kind: c.withheld for c in memo.claims() if c.withheld}


def test_the_honest_document_of_the_eager_pair_breaks_no_rule(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert violations(memo, eager) == []
    assert _held(memo) == {}
    assert "withheld" not in render_memo(memo, "markdown")


def test_a_wait_larger_than_the_forward_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.action is not None and memo.symptom is not None
    wait = memo.action.change.figure("host_wait_ms")
    forward = next(f for f in memo.figures() if f.quantity == "latency_p50_ms" and f.role == "candidate")
    assert wait is not None and wait.basis == "per_iteration" and wait.value < forward.value
    wait.value = 3 * forward.value  # the sum over three iterations, stated beside one forward
    enforce(memo, eager)
    assert memo.action.change.withheld == "part_within_forward"
    text = render_memo(memo, "markdown")
    assert "**Smallest reversible change**: withheld: the check `part_within_forward` failed on it." in text
    assert f"{wait.value:.3f}" not in text


def test_a_wait_per_iteration_is_held_to_the_mean_forward_when_slow_iterations_lift_it(eager: LoadedBundle) -> None:
    """A wait per iteration is a mean over the iterations: under load a few slow ones lift it past the median forward,
    not past the mean one."""
    memo, loaded = _memo(eager), eager.model_copy(deep=True)
    assert memo.action is not None
    wait = memo.action.change.figure("host_wait_ms")
    forward = next(f for f in memo.figures() if f.quantity == "latency_p50_ms" and f.role == "candidate")
    samples = loaded.candidate.outcome.latency_samples_ms
    samples.append(4 * max(samples))  # one iteration a disturbed machine slowed
    mean = sum(samples) / len(samples)
    assert wait is not None and forward.value < mean
    wait.value = (forward.value + mean) / 2
    assert violations(memo, loaded) == []
    wait.value = 1.1 * mean
    assert [(v.rule, v.bound) for v in violations(memo, loaded)] == [("part_within_forward", pytest.approx(mean))]


def test_a_part_of_a_forward_summed_over_iterations_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.action is not None
    wait = memo.action.change.figure("host_wait_ms")
    assert wait is not None
    wait.basis = "summed"
    assert [v.rule for v in violations(memo, eager)] == ["part_within_forward"]


def test_two_counts_of_one_set_of_layers_are_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.symptom is not None
    stage = memo.symptom.first_stage
    named = stage.figure("layers_named")
    assert named is not None and named.value == 16  # 4 pooled groups of 4 layers: the count the report states
    named.value = len(stage.items) + stage.more  # the findings counted as if layers
    enforce(memo, eager)
    assert stage.withheld == "one_count_per_layer_set"
    assert "withheld: the check one_count_per_layer_set failed on it." in render_memo(memo, "terminal")


def test_one_figure_with_two_values_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.signoff is not None and memo.symptom is not None
    layers = memo.symptom.slice.figure("layers")
    assert layers is not None
    memo.signoff.artifact.figures.append(fig("layers", layers.value + 1, "count", layers.source.record, layers.source.field,
                                             role=layers.role))
    assert {v.rule for v in violations(memo, eager)} == {"one_count_per_layer_set"}


def test_a_placeholder_in_a_name_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.symptom is not None
    memo.symptom.first_stage.items[0] = "layers.{i}.mlp.gate_proj"
    enforce(memo, eager)
    assert memo.symptom.first_stage.withheld == "no_placeholder"
    assert "{i}" not in render_memo(memo, "markdown")


def test_a_repeated_item_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.hypothesis is not None
    first = memo.hypothesis.missing[0]
    memo.hypothesis.missing.append(Claim(kind="missing_evidence", code=first.code, items=list(first.items)))
    enforce(memo, eager)
    assert [c.withheld for c in memo.hypothesis.missing] == [None] * (len(memo.hypothesis.missing) - 1) + ["no_repeated_item"]
    line = next(x for x in render_memo(memo, "markdown").splitlines() if x.startswith("- **Missing evidence**"))
    named = line.split("nothing in these inputs confirms ", 1)[1].split(" beyond the timings", 1)[0]
    assert re.split(r", | and ", named).count(first.code) == 1 and "1 more withheld: the check `no_repeated_item`" in line


def _check(memo: Memo, code: str) -> Claim:
    return next(c for c in memo.checks if c.code == code)


def test_a_check_whose_status_disagrees_with_its_figure_and_limit_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    fallback = _check(memo, "fallback_rate")
    assert fallback.terms["status"] == "pass" and fallback.terms["limit.fallback_rate"] == "at_most"
    rate = fallback.figure("fallback_rate")
    assert rate is not None
    rate.value = 0.25  # a quarter of the meant-sparse layers dense, against a limit of 0, and still "passes"
    assert [v.rule for v in violations(memo, eager)] == ["check_agrees_with_limit"]
    rate.value, fallback.terms["status"] = 0.0, "fail"  # within the limit, and "fails"
    assert "check_agrees_with_limit" in [v.rule for v in violations(memo, eager)]


def test_a_pass_past_the_limit_is_kept_only_when_the_test_put_it_within_noise(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    speed = _check(memo, "effective_speedup")
    assert speed.terms["beyond_limit"] == "speedup_p50"  # 0.506x against the 1.000x floor
    speed.terms.update(status="pass", judgement="no_change")
    assert "check_agrees_with_limit" not in [v.rule for v in violations(memo, eager)]
    assert reason(MD, speed) == ("The candidate run's speedup 0.506x is below the 1.000x floor by no more than noise "
                                 "(no change beyond noise by the rank test), so the speed check passes. Owner: the serving performance owner.")
    speed.terms["judgement"] = ""
    assert "check_agrees_with_limit" in [v.rule for v in violations(memo, eager)]


def test_a_passing_check_among_the_reasons_or_blocking_the_decision_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    memo.reasons.append(_check(memo, "fallback_rate"))
    assert [v.rule for v in violations(memo, eager)] == ["failing_only_when_failing"]
    memo = _memo(eager)
    memo.decision.items.append("fallback_rate")
    enforce(memo, eager)
    assert memo.decision.withheld == "failing_only_when_failing"


def test_a_win_or_a_loss_without_the_test_behind_it_is_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    speed = _check(memo, "effective_speedup")
    assert speed.terms["judgement"] == "inconclusive" and memo.decision.terms["speed_judgement"] == "inconclusive"
    speed.terms["status"] = "fail"  # "slower than the baseline allows" on 3 vs 3 iterations
    assert "verdict_with_significance" in [v.rule for v in violations(memo, eager)]
    memo = _memo(eager)
    memo.reasons.append(Claim(kind="reason", code="win_missing_evidence", terms={"judged_on": "candidate"}))
    enforce(memo, eager)
    assert memo.reasons[-1].withheld == "verdict_with_significance"
    assert "measured win" not in render_memo(memo, "markdown")


def test_share_words_that_disagree_with_the_share_are_withheld(eager: LoadedBundle) -> None:
    memo = _memo(eager)
    assert memo.hypothesis is not None and memo.hypothesis.primary.code == "established"
    share = memo.hypothesis.primary.figure("carried_share")
    assert share is not None and share.value > 1  # 114%: over-explains, with what pulled back named
    share.value = -0.2  # "established" on a mechanism that moved the other way
    assert [v.rule for v in violations(memo, eager)] == ["share_words_agree"]
    memo = _memo(eager)
    assert memo.hypothesis is not None
    primary = memo.hypothesis.primary
    primary.figures = [f for f in primary.figures if f.quantity != "unattributed_ms"]
    for c in memo.hypothesis.competing:
        c.figures = [f for f in c.figures if f.quantity != "carried_share"]  # nothing said to pull back
    enforce(memo, eager)
    assert primary.withheld == "share_words_agree"


@pytest.mark.parametrize(("key", "value"), [("run.candidate.python", "CPython 3.11.7"), ("run.candidate.device", "NVIDIA A100-SXM4-80GB")])
def test_a_run_tag_not_from_its_own_artifact_is_withheld(eager: LoadedBundle, key: str, value: str) -> None:
    memo = _memo(eager)
    assert memo.symptom is not None
    memo.symptom.build_tags.terms[key] = value  # this machine's Python, or another device, given as the H200 run's
    enforce(memo, eager)
    assert memo.symptom.build_tags.withheld == "tags_from_own_artifact"
    assert value not in render_memo(memo, "markdown")


@pytest.fixture(scope="module")
def noncontiguous(tmp_path_factory: pytest.TempPathFactory) -> LoadedBundle:
    """A generated pair whose four attention blocks fall to the math path on non-contiguous q, k and v."""
    spec = TraceSpec(layers=12, iterations=6, backward=False, optimizer=False, nccl=False, memcpy=False, streams=1, jitter=0.02,
                     attention="flash")
    folder = tmp_path_factory.mktemp("noncontiguous")
    base, cand = folder / "base.json", folder / "cand.json"
    write_trace(base, spec)
    write_trace(cand, replace(spec, attention="math", attention_noncontig_qkv=True, seed=1))
    return make_bundle(import_trace(base), import_trace(cand))


def test_a_saving_larger_than_the_layers_the_fix_changes_is_withheld(noncontiguous: LoadedBundle) -> None:
    memo = _memo(noncontiguous)
    assert memo.action is not None and noncontiguous.classification is not None and noncontiguous.classification.fix is not None
    removes, layers = memo.action.change.figure("removes_ms"), memo.action.change.figure("target_layers")
    assert removes is not None and layers is not None and layers.value == 4 and violations(memo, noncontiguous) == []
    one_block = noncontiguous.model_copy(deep=True)
    assert one_block.classification is not None and one_block.classification.fix is not None
    target = one_block.classification.fix.targets[0]
    target.layers = target.layers[:1]  # the fix of one block of four, with the saving of all four
    assert [(v.rule, v.value) for v in violations(memo, one_block)] == [("saving_within_layers", removes.value)]
    removes.value = 10 * removes.value  # more than the whole forward
    enforce(memo, noncontiguous)
    assert memo.action.change.withheld == "saving_within_layers"


def test_every_rule_is_named_once() -> None:
    assert sorted(RULES) == ["check_agrees_with_limit", "failing_only_when_failing", "no_placeholder", "no_repeated_item",
                             "one_count_per_layer_set", "part_within_forward", "saving_within_layers", "share_words_agree", "tags_from_own_artifact",
                             "verdict_with_significance"]
