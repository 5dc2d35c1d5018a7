"""How far this machine itself moved between two replays, measured by the dense reference both timed.

Two replays run one after the other, and this machine does not run at one speed: other
processes, clocks, caches and BLAS threads competing for cores change between (and within)
them. Compared raw, two replays of the *same* workload on a busy machine differ by 30% or
more, and a rank test rightly calls that significant: the samples are not from one
distribution. What was measured alongside every sample makes the drift measurable. Each
replay times its dense reference interleaved with what it measures:

- per linear layer (kernel stage), the dense path on the same input, in the same rounds as
  the chosen path (``kernel.layers[].dense_samples_ms``);
- per forward (schedule and outcome stages), the dense model, in the same rounds as the
  candidate forward (``outcome.dense_baseline_samples_ms``).

When the baseline's and the candidate's dense references are the same computation (same op,
weight shape, input shape and dtype per layer, same thread count), a change in their time can
only be the machine. :func:`machine_drift` turns those changes into *drift bands*: the range
of candidate / baseline time ratios (1 included) the shared references moved by, over the
kernel stage's timing windows and over the whole forward. A change counts only when its
confidence interval lies outside the band of the stage it was measured in
(:func:`discount`): what the machine alone could have done to identical work is not a finding.

The band widens the test; it never rescales samples. Rescaling by the reference assumes the
machine slows every kernel alike, and it does not: under load a threaded BLAS call can slow
down a hundredfold while a single-threaded sparse kernel beside it does not, and dividing by
such a reference manufactures a x100 "regression" out of two replays of one workload. On a
quiet machine the bands are narrow and nothing changes; on a busy one the comparison is as
wide as the machine's own swing, and says so. Runs whose references differ (another
precision or thread count, a changed shape), imported traces and runs without reference
samples get no band. Neither do the two runs of one interleaved session
(:func:`sparsedebug.sources.replay.replay.replay_pair`): they are compared round by round
(:func:`session_block`), where drift common to both sides cancels in each round's ratio,
and a band taken from the residual difference of their dense references would count the
session's noise twice.
"""

from __future__ import annotations

from pydantic import Field

from sparsedebug.core.stats import SampleComparison, median
from sparsedebug.records.base import Record
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import GraphLayer, KernelLayer, RunRecord
from sparsedebug.sources.registry import replayed

# What bisect and the gate record instead of a drift band for the two runs of one session.
SESSION_NOTE = note("locate.drift.session")

# Shared layer references needed before they measure a band for the kernel stage.
MIN_DRIFT_LAYERS = 2


class MachineDrift(Record):
    """The drift bands of two replays (candidate / baseline time of identical dense work), and the sentence for them."""

    referenced: list[str] = Field(default_factory=list, description="Linear layers whose dense reference is shared.")
    kernel_band: tuple[float, float] | None = Field(None, description="Lowest and highest ratio of those layers' dense times.")
    forward_factor: float | None = Field(None, description="Ratio of the shared dense forward's median times.")
    facts: Note | None = Field(None, description="The drift as a coded fact ('locate.drift.*'), None when there is none.")

    @property
    def forward_band(self) -> tuple[float, float] | None:
        """(min(1, f), max(1, f)) for the forward factor f."""
        f = self.forward_factor
        return None if f is None else (min(1.0, f), max(1.0, f))


def _layer_key(layer: GraphLayer) -> tuple[object, ...]:
    return (layer.op, layer.weight_shape, layer.input_shape, layer.output_shape, layer.dtype)


def _timed(layer: KernelLayer | None) -> bool:
    return layer is not None and bool(layer.dense_samples_ms) and min(layer.dense_samples_ms or [0.0]) > 0


def _shared(base: RunRecord, cand: RunRecord) -> set[str]:
    """Names of the layers whose dense reference is the same computation in both runs (empty when threads differ)."""
    if not replayed(base) or not replayed(cand) or base.schedule.threads != cand.schedule.threads:
        return set()
    b_graph = {layer.name: _layer_key(layer) for layer in base.graph.layers}
    return {layer.name for layer in cand.graph.layers if b_graph.get(layer.name) == _layer_key(layer)}


def machine_drift(base: RunRecord, cand: RunRecord) -> MachineDrift:
    """The drift bands of ``base`` and ``cand`` (no band where their dense references are not the same work)."""
    if session_block(base, cand) is not None:
        return MachineDrift(facts=SESSION_NOTE)
    shared = _shared(base, cand)
    drift = MachineDrift()
    if not shared:
        return drift
    b_kernel = {layer.name: layer for layer in base.kernel.layers}
    ratios: dict[str, float] = {}
    for layer in cand.kernel.layers:
        other = b_kernel.get(layer.name)
        if layer.name in shared and _timed(layer) and _timed(other):
            assert layer.dense_samples_ms is not None and other is not None and other.dense_samples_ms is not None
            ratios[layer.name] = median(layer.dense_samples_ms) / median(other.dense_samples_ms)
    drift.referenced = sorted(ratios)
    if len(ratios) >= MIN_DRIFT_LAYERS:
        drift.kernel_band = (min(1.0, *ratios.values()), max(1.0, *ratios.values()))
    whole = {layer.name for layer in cand.graph.layers} == shared == {layer.name for layer in base.graph.layers}
    b_fwd, c_fwd = base.outcome.dense_baseline_samples_ms, cand.outcome.dense_baseline_samples_ms
    if whole and b_fwd and c_fwd and min(b_fwd) > 0 and min(c_fwd) > 0:
        drift.forward_factor = median(c_fwd) / median(b_fwd)
    if drift.forward_factor is not None or drift.kernel_band is not None:
        lo, hi = drift.kernel_band if drift.kernel_band is not None else (None, None)
        drift.facts = note("locate.drift.bands", forward=drift.forward_factor, layers=len(ratios) if lo is not None else 0, low=lo, high=hi)
    return drift


def session_block(base: RunRecord, cand: RunRecord) -> int | None:
    """Rounds per balanced block when ``base`` and ``cand`` were replayed in one interleaved session, else None.

    Such a pair (``ReplaySession``) is compared block by block of rounds
    (:func:`sparsedebug.core.paired.compare_timings`): drift of the machine common to both
    sides cancels in each block's ratio, and so does the position of a call in its round.
    """
    b, c = base.session, cand.session
    if b is None or c is None or b.id != c.id or b.role == c.role:
        return None
    return b.block


def samples_block(block: int | None, samples: list[float], rounds: int) -> int | None:
    """The block in samples of a series holding a whole number of samples per round (calls per forward), else None."""
    if block is None or rounds < 1 or not samples or len(samples) % rounds:
        return None
    return block * (len(samples) // rounds)


def within(comp: SampleComparison, band: tuple[float, float] | None) -> bool:
    """Whether a comparison's ratio (its confidence interval where it has one) overlaps a drift band."""
    if band is None:
        return False
    lo, hi = band
    low = comp.ci_low if comp.ci_low is not None else comp.ratio
    high = comp.ci_high if comp.ci_high is not None else comp.ratio
    return not (low > hi or high < lo)


def discount(comp: SampleComparison, band: tuple[float, float] | None) -> SampleComparison:
    """``comp``, or, when its change lies within the machine's drift band, the same comparison marked as no change."""
    if comp.direction == "same" or not within(comp, band):
        return comp
    assert band is not None
    return comp.model_copy(update={"direction": "same", "significant": False, "persistent": False, "drift_band": list(band)})


# A round whose interleaved dense reference ran over this multiple of its median was disturbed (preempted).
CALM_FACTOR = 1.5


def calm_latencies(run: RunRecord) -> tuple[list[float], int]:
    """The forward latency samples of the rounds the machine left alone, and how many rounds were left out.

    A replay times the dense forward in the same round as each candidate forward; when that
    reference ran over :data:`CALM_FACTOR` times its median, something else held the machine
    in that round, and the candidate sample beside it says more about the machine than about
    the candidate's tail. Runs without a paired reference keep every sample.
    """
    samples = run.outcome.latency_samples_ms
    reference = run.outcome.dense_baseline_samples_ms
    if not reference or len(reference) != len(samples) or min(reference) <= 0:
        return list(samples), 0
    level = median(reference) * CALM_FACTOR
    kept = [value for value, ref in zip(samples, reference, strict=True) if ref <= level]
    return kept, len(samples) - len(kept)
