"""What a figure is taken over, and the one conversion of a wait a run records summed over its iterations.

``ScheduleStage.host_wait_ms`` and ``kernel_wait_ms`` are sums over the iterations of ``span_samples_ms`` (every
source: traces, engine exports and the replay); a sentence beside one forward states them per iteration, through
``per_iteration`` here, and says so.
"""

from __future__ import annotations

from typing import Literal

from sparsedebug.records.run import ScheduleStage

# What a figure is taken over: one forward, one iteration of the run (a forward and the host time around it), a sum
# over the run's iterations, one layer, one call of a layer (or of a pooled group of layers), or the rounds of two
# runs replayed in one interleaved session, paired (a ratio estimated round against round: the median of the paired
# ratios, free of the drift both sides saw; not one run's p50 over the other's).
Basis = Literal["per_forward", "per_iteration", "summed", "per_layer", "per_call", "paired_rounds"]


def per_iteration(schedule: ScheduleStage, summed_ms: float | None) -> float | None:
    """A wait ``schedule`` records summed over its iterations (``host_wait_ms``, ``kernel_wait_ms``), per iteration:
    divided by the count of ``span_samples_ms`` (None stays None)."""
    return None if summed_ms is None else summed_ms / max(len(schedule.span_samples_ms), 1)
