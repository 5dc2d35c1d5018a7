"""Figures shared by gate, memo and report: the equal-latency sentence."""

from __future__ import annotations

from sparsedebug.records.run import EqualLatencyQuality, QualityDelta
from sparsedebug.signoff.metrics import equal_latency_sentence


def _eq(*, matched: bool | None, wins: bool, narrowed_cos: float = 0.79, cand_cos: float = 0.76) -> EqualLatencyQuality:
    return EqualLatencyQuality(
        narrowed_ffn_fraction=0.25,
        narrowed_latency_ms=27.2,
        candidate_latency_ms=28.1,
        latency_matched=matched,
        narrowed=QualityDelta(cosine=narrowed_cos, rel_err=0.2),
        candidate=QualityDelta(cosine=cand_cos, rel_err=0.3),
        sparsity_wins=wins,
    )


def test_matched_latency_names_removed_share_and_winner() -> None:
    text = equal_latency_sentence(_eq(matched=True, wins=False))
    assert "25% of its FFN neurons removed" in text
    assert "p50 27.200 ms vs candidate 28.100 ms" in text
    assert "cosine 0.7900 vs the candidate's 0.7600" in text
    assert text.endswith("the narrowed dense model wins")


def test_unreached_latency_says_so_instead_of_comparing_quality_at_unequal_speed() -> None:
    text = equal_latency_sentence(_eq(matched=False, wins=True))
    assert text.startswith("no narrowed dense model reached the candidate's latency")
    assert text.endswith("sparsity wins on speed")


def test_sparsity_wins_when_better_at_equal_latency() -> None:
    assert equal_latency_sentence(_eq(matched=True, wins=True, narrowed_cos=0.5)).endswith(": sparsity wins")


def test_nothing_narrowed_says_dense_is_already_faster_not_equal_latency() -> None:
    eq = _eq(matched=True, wins=False).model_copy(update={"narrowed_ffn_fraction": 0.0, "narrowed_latency_ms": 20.0})
    text = equal_latency_sentence(eq)
    assert "at equal latency" not in text and "wins" not in text
    assert text.startswith("the dense model is already as fast as the candidate (p50 20.000 ms vs candidate 28.100 ms; this machine, measured)")
    assert "costs quality" in text


def test_latencies_that_differ_are_not_called_equal() -> None:
    eq = _eq(matched=True, wins=False).model_copy(update={"narrowed_latency_ms": 20.0})
    text = equal_latency_sentence(eq)
    assert "at equal latency" not in text
    assert "not an equal-latency comparison" in text
