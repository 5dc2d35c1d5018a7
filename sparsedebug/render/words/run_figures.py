"""Words for run figures that several renderers quote: a run's sample count, a real-model quality figure and the
equal-latency comparison."""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.records.equal_latency import equal_latency_values, quality_metric
from sparsedebug.records.notes import NoteValue
from sparsedebug.records.run import EqualLatencyQuality, QualityDelta, RunRecord

# The clock of a replay's timings.
THIS_MACHINE = "this machine, measured"

# The clock of a figure projected onto the backend profile's GPU (``render.clocks.target_clock_label`` names which).
TARGET_PROJECTED = "target clock, projected"


def quality_value(q: QualityDelta) -> str:
    """The headline quality number as text: the perplexity for a real decoder, else the cosine."""
    return f"{q.perplexity:.3f}" if q.perplexity is not None else f"{q.cosine:.4f}"


def quality_figure(q: QualityDelta) -> str:
    """``perplexity 15.210``, ``sentence-embedding cosine 0.8444`` or ``cosine 0.7607``."""
    return f"{quality_metric(q)} {quality_value(q)}"


def sample_count(run: RunRecord) -> str:
    """How many latency samples a run has, and what one is: ``n=15``, or ``n=15, each the median of 71 forwards``."""
    n = len(run.outcome.latency_samples_ms)
    timing = run.outcome.timing
    if timing is None or timing.calls_per_sample == 1:
        return f"n={n}"
    variants = f"its {len(timing.variants)} variants" if timing.variants else "every variant"
    left_out = (
        f"; {timing.preempted_calls} calls of the measurement ({variants} together) left out of their medians: "
        "the scheduler preempted them" if timing.preempted_calls else ""
    )
    if timing.short_samples:
        return (
            f"n={n}, each the median of up to {timing.calls_per_sample} forwards; {timing.short_samples} with fewer: "
            f"their round ran past its time bound{left_out}"
        )
    return f"n={n}, each the median of {timing.calls_per_sample} forwards{left_out}"




def real_quality_text(q: QualityDelta) -> str:
    """A real-model quality figure with its delta against the dense model and what it was measured on."""
    ev = q.evidence
    assert ev is not None
    if q.perplexity is not None and q.dense_perplexity is not None:
        head = (
            f"perplexity {q.perplexity:.3f} vs the dense model's {q.dense_perplexity:.3f} "
            f"({q.perplexity - q.dense_perplexity:+.3f}); final hidden states cosine {q.cosine:.4f}"
        )
    else:
        head = f"mean sentence-embedding cosine {q.cosine:.4f} ({q.cosine - 1.0:+.4f} vs the dense model's 1.0000"
        head += f"; lowest {q.cosine_min:.4f})" if q.cosine_min is not None else ")"
        if q.neighbour_agreement is not None:
            head += f", nearest-neighbour agreement {q.neighbour_agreement:.3f}"
    model = f"{ev.model} from {ev.model_source}"
    if ev.model_description:
        model = f"{ev.model_description.replace(': ', ', ', 1)}; {model}"
    return (
        f"{head}, relative error {q.rel_err:.4g}; on {ev.units} evaluation {ev.unit}s ({ev.tokens} tokens) of "
        f"{ev.text} (sha256 {ev.text_sha256[:12]}, Python {ev.python_version}) against {ev.reference}: {model}"
    )


def _num(value: NoteValue) -> float:
    assert isinstance(value, (int, float)), value
    return float(value)


def _quality(v: Mapping[str, NoteValue], side: str) -> tuple[str, str]:
    """(metric name, value as printed) of one side's quality figure: a perplexity at 3 decimals, a cosine at 4."""
    metric, value = str(v[f"{side}_metric"]), v[f"{side}_value"]
    assert isinstance(value, (int, float))
    return metric, f"{value:.3f}" if metric == "perplexity" else f"{value:.4f}"


def equal_latency_words(v: Mapping[str, NoteValue]) -> str:
    """One sentence for "at this latency, is sparsity better than a smaller dense model?" (``signoff.equal_latency``).

    It says "at equal latency" only when a narrowed dense model was timed within the tolerance of the
    sparse run; when nothing had to be narrowed it says whether dense is as fast or faster (and by how
    much), and reports the quality the sparsity costs instead. Its latencies are labelled as the
    search's own side-by-side timings (not the runs' p50s) and it names the clock.
    """
    run, target = v["run"], v["clock"] == "target"
    narrowed_ms, tol, fraction = float(_num(v["narrowed_ms"])), float(_num(v["tolerance"])), float(_num(v["narrowed_fraction"]))
    cand = float(_num(v["candidate_ms"])) if v["candidate_ms"] is not None else None
    n_metric, n_value = _quality(v, "narrowed")
    c_metric, c_value = _quality(v, "candidate")
    removed = f"{fraction:.0%} of its FFN neurons removed"
    versus = f" vs {run} {cand:.3f} ms" if cand is not None else ""
    clock = "; " + (TARGET_PROJECTED if target else THIS_MACHINE)
    figure = "projected" if target else "p50"
    timed = "projected side by side" if target else "timed side by side in the equal-latency search"
    qualities = f"{n_metric} {n_value} vs the {run}'s {c_value}"
    cross = ""
    if v.get("cross_clock") is not None:
        where = "this machine" if v["cross_clock"] == "this_machine" else "the target"
        cross = (f" (cross-check on {where}: {v['cross_fraction']:.0%} removed, {v['cross_narrowed_ms']:.3f} vs "
                 f"{v['cross_candidate_ms']:.3f} ms)")
    if fraction == 0.0 and v["latency_matched"] is not False:
        if cand is None or cand <= 0:
            how = f"at least as fast as the {run}"
        elif narrowed_ms < cand * (1 - tol):
            how = f"{cand / narrowed_ms:.2f}x faster than the {run}"
        else:
            how = f"about as fast as the {run} (within {tol:.0%})"
        return (
            f"the dense model is {how} ({timed}: dense {figure} {narrowed_ms:.3f} ms{versus}{clock}): "
            f"nothing to narrow, sparsity buys no speed here and costs quality ({run} {c_metric} {c_value} "
            f"vs the dense model's {n_value}){cross}"
        )
    if v["latency_matched"] is False:
        return (
            f"no narrowed dense model reached the {run}'s latency (with {removed}, {timed}: {figure} "
            f"{narrowed_ms:.3f} ms{versus}{clock}; {qualities}): sparsity wins on speed{cross}"
        )
    verdict = "sparsity wins" if v["sparsity_wins"] else "the narrowed dense model wins"
    if cand is not None and cand > 0 and abs(narrowed_ms - cand) / cand > tol:
        return (
            f"the closest narrowing, a dense model with {removed}, runs at {figure} {narrowed_ms:.3f} ms{versus} "
            f"({timed}{clock}; not within {tol:.0%}: not an equal-latency comparison) and has {qualities}: "
            f"{verdict} at that point{cross}"
        )
    return (
        f"at equal latency a dense model with {removed} ({timed}: {figure} {narrowed_ms:.3f} ms{versus}{clock}) has "
        f"{qualities}: {verdict}{cross}"
    )


def equal_latency_sentence(eq: EqualLatencyQuality, run: str = "candidate") -> str:
    """The equal-latency comparison of a run record in one sentence (:func:`equal_latency_words`)."""
    return equal_latency_words(equal_latency_values(eq, run))
