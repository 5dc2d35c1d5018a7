"""Memo phrases: the first divergent stage names each finding kind with its own reasons."""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo import phrases, stage
from sparsedebug.signoff.memo_engine import fig


def test_a_reason_stays_with_the_finding_kind_it_belongs_to() -> None:
    claim = Claim(kind="first_stage", code="divergence", items=["fc0"],
                  terms={"stage": "lower", "kinds": "fallback,per_call_conversion", "reasons.fallback": "dtype_unsupported"})
    assert stage.first_stage(phrases.PLAIN, claim) == (
        "stage lower: dense fallback (dtype the sparse kernel rejects), "
        "weights converted on every call on fc0."
    )


def _stage(quantity: str, terms: dict[str, str]) -> Claim:
    return Claim(kind="first_stage", code="divergence", items=["layers.[0-3].mlp.gate_proj"], more=1,
                 figures=[fig(quantity, 3.467, "ratio", "bisect.json", "effect.ratio"), fig("effect_p", 7.4e-07, "p", "bisect.json", "effect.p_value"),
                          fig("layers_named", 16, "count", "bisect.json", "stages[schedule].layers[].members")],
                 terms={"stage": "schedule", "kinds": "idle_grew", **terms})


def test_the_bisect_effect_is_named_by_what_it_measures() -> None:
    layer = stage.first_stage(phrases.PLAIN, _stage("layer_effect_ratio", {"effect_layer": "layers.[0-3].mlp.gate_proj", "effect_stage": "schedule"}))
    assert layer == ("stage schedule: GPU idle "
                     "time grew on layers.[0-3].mlp.gate_proj and 1 more (16 layers in all); largest layer effect: GPU idle before "
                     "each call plus its kernel time, ratio 3.467 on layers.[0-3].mlp.gate_proj (p=7.4e-07).")
    assert "latency ratio 3.467 per forward" in stage.first_stage(phrases.PLAIN, _stage("latency_ratio", {}))
    metric = stage.first_stage(phrases.PLAIN, _stage("metric_ratio", {"effect_metric": "busy_ms"}))
    assert "effect: kernel busy time, ratio 3.467 per iteration" in metric and "latency" not in metric


def test_the_first_stage_has_a_legend_in_a_leads_words() -> None:
    legend = stage.stage_legend(phrases.PLAIN, _stage("latency_ratio", {}))
    assert legend == ["Stage schedule is scheduling: launches and GPU idle gaps (the stages in order: graph, lower, kernel, "
                      "schedule, outcome; graph, lower, kernel did not diverge)"]
    assert stage.stage_legend(phrases.PLAIN, Claim(kind="first_stage", code="not_located")) == []
