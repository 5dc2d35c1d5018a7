"""Timings of two replays put on one machine state, through the dense reference both timed.

Two replays run one after the other, and this machine does not run at one speed: other
processes, clocks and caches change between (and within) them. Compared raw, two replays
of the *same* workload on a busy machine differ by 30% or more, and a rank test rightly
calls that significant: the samples are not from one distribution. What was measured
alongside every sample makes that drift measurable. Each replay times its dense
reference interleaved with what it measures, round by round:

- per linear layer (kernel stage), the dense path on the same input, in the same rounds
  as the chosen path (``kernel.layers[].dense_samples_ms``);
- per forward (schedule and outcome stages), the dense model, in the same rounds as the
  candidate forward (``outcome.dense_baseline_samples_ms``).

When the baseline's and the candidate's dense references are the same computation (same
op, weight shape, input shape and dtype per layer, same thread count), a change in their
time can only be the machine. :func:`on_shared_reference` then divides every timing sample
by the machine's state in its round (the running median of the dense reference over
:data:`SMOOTHING_ROUNDS` rounds around it, so one preempted reference round does not move
it) and multiplies by the baseline's median dense time, in both runs: the samples stay in milliseconds, as the baseline's machine state would have
run them, and what remains between the runs is what the workloads changed plus noise the
statistics account for. Runs whose references differ (another precision or thread count,
a changed shape), imported traces, runs without reference samples, and references that
did not measure a steady state (quartiles more than :data:`MAX_REFERENCE_SPREAD` apart:
the process was preempted in most rounds) are left as they are; telling such a run
apart as unstable is the timing harness's job.

Layers without a dense reference of their own (attention, norms, element-wise ops, a
linear layer whose dtype changed) cannot be put on one machine state: their time moves
with the machine differently from a BLAS call (a memory-bound numpy op and a threaded
GEMM do not slow down alike under load). For them the referenced layers give the
*drift band*: the range of candidate / baseline ratios the shared dense references moved
by across the kernel stage's timing windows, which is how far the machine alone moved
timings of identical work between the two replays. Such a layer's change counts only
when its confidence interval lies outside that band (``sparsedebug.locate.kernel``).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from sparsedebug.core.stats import median
from sparsedebug.records.base import Record
from sparsedebug.records.run import GraphLayer, KernelLayer, RunRecord

MAX_REFERENCE_SPREAD = 1.5
"""Largest third-over-first quartile ratio of a dense reference that still measures a machine state."""

MIN_DRIFT_LAYERS = 2
"""Referenced layers needed before their dense times measure a drift band for the other layers."""


class SharedReference(Record):
    """What :func:`on_shared_reference` did: the machine factors it removed, in words for the verdict."""

    referenced: list[str] = Field(default_factory=list)
    """Layers whose kernel samples were put on the baseline's machine state by their own dense reference."""
    drift_band: tuple[float, float] | None = None
    """Lowest and highest candidate / baseline ratio of those layers' dense reference times (1 included): how far the
    machine itself moved between timing windows. A layer without a reference of its own counts as changed only when
    its ratio's confidence interval lies outside this band."""
    forward: bool = False
    """Whether the schedule and outcome samples were."""
    forward_factor: float | None = None
    """Candidate / baseline median time of the shared dense forward: the machine's drift between the two replays."""
    note: str = ""


def _layer_key(layer: GraphLayer) -> tuple[object, ...]:
    return (layer.op, layer.weight_shape, layer.input_shape, layer.output_shape, layer.dtype)


def steady(reference: list[float]) -> bool:
    """Whether a reference measured a machine state at all: its quartiles within :data:`MAX_REFERENCE_SPREAD`.

    On a machine that preempts the process in most rounds the reference is mostly
    scheduler delay: dividing by it would multiply every sample by that delay's noise
    (two replays of one workload then differ by x200), not remove the drift.
    """
    if len(reference) < SMOOTHING_ROUNDS or min(reference) <= 0:
        return False
    q1, q3 = float(np.percentile(reference, 25)), float(np.percentile(reference, 75))
    return q3 <= MAX_REFERENCE_SPREAD * q1


def _paired(layer: KernelLayer | None) -> bool:
    return (
        layer is not None
        and layer.dense_samples_ms is not None
        and len(layer.dense_samples_ms) == len(layer.samples_ms) > 0
        and steady(layer.dense_samples_ms)
    )


def _same_reference(base: RunRecord, cand: RunRecord) -> set[str]:
    """Names of the layers whose dense reference is the same computation in both runs (empty when threads differ)."""
    if base.source.kind != "replay" or cand.source.kind != "replay":
        return set()
    if base.schedule.threads != cand.schedule.threads:
        return set()
    b_graph = {layer.name: _layer_key(layer) for layer in base.graph.layers}
    return {layer.name for layer in cand.graph.layers if b_graph.get(layer.name) == _layer_key(layer)}


SMOOTHING_ROUNDS = 5
"""Rounds of the dense reference whose median stands for the machine's state in a round: it follows the
machine's drift from round to round, while one preempted reference round cannot move it."""


def _rescale_rounds(samples: list[float], reference: list[float], level: float) -> list[float]:
    """Each sample times ``level`` over the machine's state in its round (running median of the reference)."""
    half = SMOOTHING_ROUNDS // 2
    n = len(reference)
    out = []
    for r, value in enumerate(samples):
        lo, hi = max(0, min(r - half, n - SMOOTHING_ROUNDS)), min(n, max(r + half + 1, SMOOTHING_ROUNDS))
        out.append(value * level / median(reference[lo:hi]))
    return out


def _kernel_levels(base: RunRecord, cand: RunRecord, shared: set[str]) -> dict[str, tuple[float, float]]:
    """Per linear layer with the same paired dense reference in both runs: (baseline, candidate) median dense time."""
    b_kernel = {layer.name: layer for layer in base.kernel.layers}
    levels: dict[str, tuple[float, float]] = {}
    for layer in cand.kernel.layers:
        other = b_kernel.get(layer.name)
        if layer.name in shared and _paired(layer) and other is not None and _paired(other):
            assert layer.dense_samples_ms is not None and other.dense_samples_ms is not None
            levels[layer.name] = (median(other.dense_samples_ms), median(layer.dense_samples_ms))
    return levels


def _kernel(run: RunRecord, levels: dict[str, tuple[float, float]]) -> RunRecord:
    layers = []
    for layer in run.kernel.layers:
        if layer.name in levels and layer.dense_samples_ms is not None:
            samples = _rescale_rounds(layer.samples_ms, layer.dense_samples_ms, levels[layer.name][0])
            layer = layer.model_copy(update={"samples_ms": samples})
        layers.append(layer)
    return run.model_copy(update={"kernel": run.kernel.model_copy(update={"layers": layers})})


def _forward(run: RunRecord, level: float) -> RunRecord:
    dense = run.outcome.dense_baseline_samples_ms or []
    schedule = run.schedule.model_copy(
        update={
            "span_samples_ms": _rescale_rounds(run.schedule.span_samples_ms, dense, level),
            "busy_samples_ms": _rescale_rounds(run.schedule.busy_samples_ms, dense, level),
            "layer_idle_samples_ms": {
                name: _rescale_rounds(values, dense, level) if len(values) == len(dense) else values
                for name, values in run.schedule.layer_idle_samples_ms.items()
            },
        }
    )
    outcome = run.outcome.model_copy(update={"latency_samples_ms": _rescale_rounds(run.outcome.latency_samples_ms, dense, level)})
    return run.model_copy(update={"schedule": schedule, "outcome": outcome})


def _forward_paired(run: RunRecord) -> bool:
    dense = run.outcome.dense_baseline_samples_ms
    if not dense or not steady(dense):
        return False
    n = len(dense)
    return len(run.outcome.latency_samples_ms) == n and len(run.schedule.span_samples_ms) == n and len(run.schedule.busy_samples_ms) == n


def on_shared_reference(base: RunRecord, cand: RunRecord) -> tuple[RunRecord, RunRecord, SharedReference]:
    """Both runs' timing samples on the baseline's machine state, where their dense references allow it.

    Returns the two runs (copies; unchanged when nothing is shared) and what was done.
    Numerics, lowering and quality are untouched; only ``*_samples_ms`` of the kernel,
    schedule and outcome stages change.
    """
    shared = _same_reference(base, cand)
    info = SharedReference()
    if not shared:
        return base, cand, info
    levels = _kernel_levels(base, cand, shared)
    if levels:
        base, cand = _kernel(base, levels), _kernel(cand, levels)
        info.referenced = sorted(levels)
        if len(levels) >= MIN_DRIFT_LAYERS:
            ratios = [c / b for b, c in levels.values()]
            info.drift_band = (min(1.0, *ratios), max(1.0, *ratios))
    whole = {layer.name for layer in cand.graph.layers} == shared == {layer.name for layer in base.graph.layers}
    if whole and _forward_paired(base) and _forward_paired(cand):
        b_dense = base.outcome.dense_baseline_samples_ms or []
        c_dense = cand.outcome.dense_baseline_samples_ms or []
        level = median(b_dense)
        info.forward = True
        info.forward_factor = median(c_dense) / level
        base, cand = _forward(base, level), _forward(cand, level)
    if info.referenced or info.forward:
        parts = []
        if info.forward and info.forward_factor is not None:
            parts.append(f"the shared dense forward ran x{info.forward_factor:.3f} as long in the candidate's replay")
        if info.referenced:
            parts.append(f"{len(info.referenced)} layer(s) timed against their dense reference")
        if info.drift_band is not None:
            lo, hi = info.drift_band
            parts.append(f"machine drift between the layers' timing windows x{lo:.3f} to x{hi:.3f}")
        info.note = "timings put on the baseline's machine state (" + "; ".join(parts) + ")"
    return base, cand, info
