"""The figures of the equal-latency comparison ("at this latency, is sparsity better than a smaller dense model?") as
note values, and the name of a run's quality figure: one definition the decision's notes and every renderer read."""

from __future__ import annotations

from sparsedebug.records.notes import NoteValue
from sparsedebug.records.run import EqualLatencyQuality, QualityDelta

# Two p50 latencies within this relative difference are "equal" for the equal-latency comparison.
EQUAL_LATENCY_TOLERANCE = 0.05


def quality_metric(q: QualityDelta) -> str:
    """The name of a quality figure: perplexity (real decoders), sentence-embedding cosine (real encoders) or cosine."""
    if q.perplexity is not None:
        return "perplexity"
    return "sentence-embedding cosine" if q.evidence is not None else "cosine"


def _quality_values(prefix: str, q: QualityDelta) -> dict[str, NoteValue]:
    return {f"{prefix}_metric": quality_metric(q), f"{prefix}_value": q.perplexity if q.perplexity is not None else q.cosine}


def equal_latency_values(eq: EqualLatencyQuality, run: str = "candidate") -> dict[str, NoteValue]:
    """The figures of the comparison (``run``: the role or name of the sparse run the search timed), as note values:
    ``render.words.run_figures.equal_latency_words`` words them."""
    c = eq.cross_check
    return {
        "run": run, "clock": eq.clock, "narrowed_fraction": eq.narrowed_ffn_fraction, "narrowed_ms": eq.narrowed_latency_ms,
        "candidate_ms": eq.candidate_latency_ms, "latency_matched": eq.latency_matched, "sparsity_wins": eq.sparsity_wins,
        "tolerance": EQUAL_LATENCY_TOLERANCE, **_quality_values("narrowed", eq.narrowed), **_quality_values("candidate", eq.candidate),
        "cross_clock": c.clock if c is not None else None, "cross_fraction": c.narrowed_ffn_fraction if c is not None else None,
        "cross_narrowed_ms": c.narrowed_latency_ms if c is not None else None, "cross_candidate_ms": c.candidate_latency_ms if c is not None else None,
    }
