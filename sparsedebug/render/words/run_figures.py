"""Words for run figures that several renderers quote: a run's sample count and a real-model quality figure."""

from __future__ import annotations

from sparsedebug.records.run import QualityDelta, RunRecord


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
