"""The review document's invariants: each rule, planted in a document built from a real H200 pair, withholds the claim
it breaks, and the memo names the check instead of stating the contradiction."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparsedebug.records.memo import Claim, Memo
from sparsedebug.render.memo.formats import render as render_memo
from sparsedebug.signoff.invariants import RULES, enforce, violations
from sparsedebug.signoff.memo_engine import fig
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.importers.trace.importer import import_trace
from tests.support.bundles import make_bundle

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


def test_every_rule_is_named_once() -> None:
    assert sorted(RULES) == ["no_placeholder", "no_repeated_item", "one_count_per_layer_set", "part_within_forward"]
