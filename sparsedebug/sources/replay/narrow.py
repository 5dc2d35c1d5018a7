"""The equal-latency comparison model: a dense model with its weakest FFN neurons removed.

"At this latency, is sparsity better than a smaller dense model?" To answer it
the replay narrows the dense model's feed-forward layers until it is as fast as
the sparse candidate, then compares qualities. An FFN group is a linear layer
(``down``) whose input is computed, through activations and elementwise ops
only, from linear layers (``gate``, ``up``) that all produce its ``K`` features.
Neuron ``i`` of the group is row ``i`` of every producer and column ``i`` of the
consumer; its magnitude is the product of those rows' and that column's L2
norms. Narrowing by a fraction removes that fraction of the lowest-magnitude
neurons of every group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.records.run import (
    EqualLatencyQuality,
    QualityDelta,
)
from sparsedebug.sources.replay.executor import (
    Op,
    build_ops,
    forward,
    quality,
)
from sparsedebug.sources.replay.workload import MODEL_INPUT, LayerShape, Workload, check_graph, resolved_inputs

Array = npt.NDArray[np.float64]

FRACTION_STEPS = 16
"""Narrowing fractions searched are ``k / FRACTION_STEPS`` for ``k = 0 .. FRACTION_STEPS - 1``."""


@dataclass(frozen=True)
class FfnGroup:
    """Producers (gate/up) and the consumer (down) that share the FFN's neurons."""

    producers: tuple[str, ...]
    consumer: str
    width: int


def ffn_groups(workload: Workload) -> list[FfnGroup]:
    """Every FFN group of the graph (see the module docstring), in layer order."""
    shapes = {s.name: s for s in check_graph(workload)}
    by_name = {layer.name: (i, layer) for i, layer in enumerate(workload.layers)}
    groups: list[FfnGroup] = []
    for index, layer in enumerate(workload.layers):
        if layer.op != "linear":
            continue
        width = shapes[layer.name].in_widths[0]
        producers: list[str] = []
        stack = list(resolved_inputs(workload, index))
        valid = True
        seen: set[str] = set()
        while stack and valid:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if name == MODEL_INPUT:
                valid = False
                break
            j, source = by_name[name]
            if source.op == "linear":
                if shapes[name].out_width != width:
                    valid = False
                producers.append(name)
            elif source.op in ("activation", "elementwise"):
                stack.extend(resolved_inputs(workload, j))
            else:
                valid = False
        if valid and producers:
            ordered = tuple(sorted(producers, key=lambda n: by_name[n][0]))
            groups.append(FfnGroup(producers=ordered, consumer=layer.name, width=width))
    return groups


def neuron_scores(group: FfnGroup, tensors: dict[str, Array]) -> Array:
    """Magnitude of each neuron: product of producer row norms and the consumer column norm."""
    score: Array = np.linalg.norm(tensors[group.consumer], axis=0)
    for name in group.producers:
        score = score * np.linalg.norm(tensors[name], axis=1)
    return score


def narrow(workload: Workload, tensors: dict[str, Array], fraction: float) -> dict[str, Array]:
    """Weights with ``fraction`` of every FFN group's lowest-magnitude neurons removed.

    At least one neuron stays per group; kept neurons keep their order. A layer
    in two groups (a chain of linears) is narrowed on both axes. Other tensors
    are returned unchanged.
    """
    out = dict(tensors)
    for group in ffn_groups(workload):
        keep = max(1, int(round(group.width * (1.0 - fraction))))
        if keep >= group.width:
            continue
        order = np.argsort(-neuron_scores(group, tensors), kind="stable")[:keep]
        kept = np.sort(order)
        # Slice what earlier groups left: in a chain a layer consumes one group's
        # neurons (columns) and produces the next group's (rows).
        for name in group.producers:
            out[name] = np.ascontiguousarray(out[name][kept, :])
        out[group.consumer] = np.ascontiguousarray(out[group.consumer][:, kept])
    return out


def equal_latency_step(ratio: Callable[[int], float], steps: int) -> tuple[int, bool]:
    """Smallest narrowing step in ``1 .. steps-1`` whose latency ratio (narrowed / candidate) is at most 1.

    ``ratio(step)`` measures it; bisection assumes it falls as the step grows
    (fewer neurons, less work). Returns ``(step, reached)``; when even the
    largest step is slower, ``(steps - 1, False)``.
    """
    lo, hi = 1, steps - 1
    if ratio(hi) > 1.0:
        return hi, False
    while lo < hi:
        mid = (lo + hi) // 2
        if ratio(mid) <= 1.0:
            hi = mid
        else:
            lo = mid + 1
    ratio(lo)
    return lo, True


def equal_latency(
    workload: Workload,
    repeats: int,
    shapes: Sequence[LayerShape],
    dense_tensors: dict[str, Array],
    candidate_ops: list[Op],
    x_run: Array,
    span: list[float],
    dense_samples: list[float],
    dense_ref_out: Array,
    labels: npt.NDArray[np.int64] | None,
    dense_accuracy: float | None,
    candidate_quality: QualityDelta,
) -> EqualLatencyQuality | None:
    """Narrow the dense model until it is as fast as the candidate; compare qualities."""
    if not ffn_groups(workload):
        return None
    rounds = max(5, repeats // 2)
    cache: dict[int, tuple[list[Op], float, float, float]] = {}

    def narrowed_ops(step: int) -> list[Op]:
        tensors = narrow(workload, dense_tensors, step / FRACTION_STEPS)
        return build_ops(workload, shapes, tensors, mode="dense")

    def ratio(step: int) -> float:
        if step not in cache:
            ops = narrowed_ops(step)
            timed = interleaved(
                {"candidate": lambda: forward(candidate_ops, x_run), "narrowed": lambda: forward(ops, x_run)},
                rounds=rounds,
                warmup=1,
            )
            narrowed_p50, candidate_p50 = median(timed["narrowed"]), median(timed["candidate"])
            cache[step] = (ops, narrowed_p50 / candidate_p50, narrowed_p50, candidate_p50)
        return cache[step][1]

    if median(dense_samples) <= median(span):
        step, reached = 0, True
        latency, candidate_latency = median(dense_samples), median(span)
    else:
        step, reached = equal_latency_step(ratio, FRACTION_STEPS)
        latency, candidate_latency = cache[step][2], cache[step][3]
    ops = narrowed_ops(step) if step not in cache else cache[step][0]
    out, _ = forward(ops, x_run)
    narrowed_quality = quality(out, dense_ref_out, labels, dense_accuracy)
    wins = (not reached) or candidate_quality.cosine > narrowed_quality.cosine
    return EqualLatencyQuality(
        narrowed_ffn_fraction=step / FRACTION_STEPS,
        narrowed_latency_ms=latency,
        candidate_latency_ms=candidate_latency,
        narrowed=narrowed_quality,
        candidate=candidate_quality,
        latency_matched=reached,
        sparsity_wins=wins,
    )
