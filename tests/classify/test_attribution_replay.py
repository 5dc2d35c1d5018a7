"""Attribution on a replayed checkpoint pair shaped like the default walk: the parts add up to the measured change.

A dense tiny BERT against the same model pruned 2:4 with one FFN linear left in fp32 (a dense
fallback) and the weights re-converted on every call. A per-call conversion is host work before the
layer's compute, in the host gap before the layer and outside busy time, never in its kernel samples
(``records.run``): counted once, the kernel and gap parts sum to the change but for the busy time the
layers' kernel timings do not carry (``busy_residual_ms``).
"""

from __future__ import annotations

import re

import pytest

from sparsedebug.classify.score import classify_run
from sparsedebug.core.stats import median
from sparsedebug.records.classification import Classification, Mechanism
from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.signoff.metrics import layer_rows
from sparsedebug.sources.playbook import load_playbook
from sparsedebug.sources.replay.replay import replay
from sparsedebug.sources.workload.load import parse_workload
from tests.sources.replay.model_workloads import candidate_fields, model_workload, tiny_models
from tests.support.bundles import make_bundle

FP32_LAYER = "encoder.layer.1.output.dense"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, RunRecord]:
    tiny = tiny_models(tmp_path_factory.mktemp("models"))
    common = {"backend": "h200-cusparselt", "precision": "fp16", "repeats": 5}
    base = parse_workload(model_workload(tiny["bert"], tiny["text"], name="tiny_dense", **common), "base.yaml")
    cand = parse_workload(
        model_workload(tiny["bert"], tiny["text"], conversion="per_call", **common,
                       **candidate_fields(layers=[{"name": FP32_LAYER, "dtype": "fp32", "sparsity": "2:4"}])),
        "cand.yaml",
    )  # fmt: skip
    return replay(base), replay(cand)


@pytest.fixture(scope="module")
def classified(pair: tuple[RunRecord, RunRecord]) -> Classification:
    base, cand = pair
    return classify_run(cand, baseline=base)


def test_kernel_samples_hold_no_conversion_and_the_gap_before_the_layer_does(pair: tuple[RunRecord, RunRecord]) -> None:
    _, cand = pair
    converting = [lo for lo in cand.lower.layers if lo.conversions_per_call]
    assert converting and all(lo.conversion_ms for lo in converting)
    for lo in converting:
        gap = median(cand.schedule.layer_idle_samples_ms[lo.name])
        # the host gap before the layer's compute in the forward is its conversion (the only host work timed there)
        assert gap > 0.2 * (lo.conversion_ms or 0.0)
    rows = {r.name: r for r in layer_rows(cand)}
    for lo in converting:
        row = rows[lo.name]
        assert row.time_ms is not None and row.call_ms == pytest.approx(row.time_ms + (lo.conversion_ms or 0.0))


def test_attributed_parts_add_up_to_the_measured_change(pair: tuple[RunRecord, RunRecord], classified: Classification) -> None:
    base, cand = pair
    att = classified.attribution
    assert att is not None and att.busy_residual_ms is not None
    delta = median(cand.outcome.latency_samples_ms) - median(base.outcome.latency_samples_ms)
    assert att.delta_ms == pytest.approx(delta)
    # The decomposition closes: every part, plus the busy time the kernel timings miss, is the change.
    assert sum(p.ms for p in att.parts) + att.busy_residual_ms == pytest.approx(delta, abs=1e-4)
    # What no part carries is exactly the busy time the kernel timings miss, plus the parts without a mechanism.
    unnamed = sum(p.ms for p in att.parts if p.mechanism is None)
    assert att.unattributed_ms == pytest.approx(att.busy_residual_ms + unnamed, abs=1e-4)
    busy_delta = median(cand.schedule.busy_samples_ms) - median(base.schedule.busy_samples_ms)
    assert abs(att.busy_residual_ms) <= abs(busy_delta) + sum(abs(p.ms) for p in att.parts if p.kind == "kernel")
    # The conversion is counted once: its parts are the measured gaps before the converting layers,
    # and the gaps outside the layers do not hold it again.
    conversions = [p for p in att.parts if p.kind == "conversion"]
    converting = {lo.name for lo in cand.lower.layers if lo.conversions_per_call}
    assert {p.part for p in conversions} == converting
    assert all(p.mechanism is Mechanism.SCHEDULING and p.rule == "scheduling.per_call_conversion" for p in conversions)
    gap_growth = (median(cand.outcome.latency_samples_ms) - median(cand.schedule.busy_samples_ms)) - (
        median(base.outcome.latency_samples_ms) - median(base.schedule.busy_samples_ms)
    )
    assert sum(p.ms for p in att.parts if p.kind in ("gap", "conversion")) == pytest.approx(gap_growth, abs=1e-4)


def test_no_share_beyond_the_whole_change_without_saying_what_offsets_it(
    pair: tuple[RunRecord, RunRecord], classified: Classification
) -> None:
    base, cand = pair
    att = classified.attribution
    assert att is not None
    memo = render_memo_detail(make_bundle(base, cand), load_playbook())
    for m in att.mechanisms:
        if m.share is not None and m.share > 1.0:
            others = [o for o in att.mechanisms if o.mechanism != m.mechanism]
            assert any(o.ms * att.delta_ms < 0 for o in others) or att.unattributed_ms * att.delta_ms < 0
    sentence = re.search(r"mechanism (\w+) carries (-?[\d.]+) ms of the ([+-][\d.]+) ms change \((\d+)%\)([^;]*)", memo)
    if classified.ranked_by != "attribution":
        assert sentence is None
        return
    assert sentence is not None and classified.winner is not None
    share = att.share_of(classified.winner)
    assert share is not None and share.share is not None
    assert sentence.group(1) == classified.winner.value and sentence.group(2) == f"{share.ms:.3f}"
    assert int(sentence.group(4)) == round(share.share * 100)
    assert ("more than the whole change" in sentence.group(5)) == (round(share.share * 100) > 100)
