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

The latency to match is on the target clock when the workload's backend profile
models a GPU (projected by :mod:`sparsedebug.sources.target.model`, the same for
the same workload), else on this machine's clock (timed, noisy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.records.run import (
    EqualLatencyQuality,
    QualityDelta,
)
from sparsedebug.records.target import LatencyMatch, TargetClock
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS, equal_latency_step
from sparsedebug.sources.replay.synthetic.executor import (
    Op,
    build_ops,
    forward,
    quality,
)
from sparsedebug.sources.workload.graph import LayerShape, check_graph, resolved_inputs
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.schema import MODEL_INPUT, Workload

Array = npt.NDArray[np.float64]

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


def narrowed_workload(workload: Workload, fraction: float) -> Workload:
    """The dense model narrowed as :func:`narrow` narrows its weights, as a workload (for projection): every layer dense."""
    shapes = {layer.name: list(layer.shape) for layer in workload.layers if layer.shape is not None}
    for group in ffn_groups(workload):
        keep = max(1, int(round(group.width * (1.0 - fraction))))
        if keep >= group.width:
            continue
        for name in group.producers:
            shapes[name][0] = keep
        shapes[group.consumer][1] = keep
    layers = []
    for layer in workload.layers:
        if layer.op == "linear":
            layers.append(layer.model_copy(update={"shape": shapes[layer.name], "sparsity": "dense"}))
        elif layer.op in ("activation", "elementwise"):
            layers.append(layer.model_copy(update={"shape": None}))  # widths follow the narrowed inputs
        else:
            layers.append(layer)
    return revalidate(workload.model_copy(update={"layers": layers}))


@dataclass(frozen=True)
class Match:
    """The result of an equal-latency search on one clock."""

    step: int
    reached: bool
    narrowed_ms: float
    candidate_ms: float


def target_match(workload: Workload, target: TargetClock) -> Match | None:
    """The equal-latency search on the target clock: deterministic, from projections only."""
    from sparsedebug.sources.target.project import project_workload

    cand = target.forward.candidate
    dense = target.forward.dense
    if cand is None or dense is None:
        return None
    projected: dict[int, float] = {}

    def dense_ms(step: int) -> float:
        if step not in projected:
            result = project_workload(narrowed_workload(workload, step / FRACTION_STEPS), paths={}, launch=target.launch)
            forward = result[2].dense if result is not None else None
            projected[step] = forward.total_ms if forward is not None else float("inf")
        return projected[step]

    if dense.total_ms <= cand.total_ms:
        return Match(0, True, dense.total_ms, cand.total_ms)
    step, reached = equal_latency_step(lambda s: dense_ms(s) / cand.total_ms, FRACTION_STEPS)
    return Match(step, reached, dense_ms(step), cand.total_ms)


def _cpu_match(
    workload: Workload, repeats: int, shapes: Sequence[LayerShape], dense_tensors: dict[str, Array],
    candidate_ops: list[Op], x_run: Array, span: list[float], dense_samples: list[float],
) -> Match:
    """The equal-latency search on this machine's clock: interleaved timings of candidate and narrowed forwards."""
    rounds = max(5, repeats // 2)
    cache: dict[int, tuple[float, float, float]] = {}

    def ratio(step: int) -> float:
        if step not in cache:
            ops = build_ops(workload, shapes, narrow(workload, dense_tensors, step / FRACTION_STEPS), mode="dense")
            timed = interleaved(
                {"candidate": lambda: forward(candidate_ops, x_run), "narrowed": lambda: forward(ops, x_run)},
                rounds=rounds,
                warmup=1,
            )
            narrowed_p50, candidate_p50 = median(timed["narrowed"]), median(timed["candidate"])
            cache[step] = (narrowed_p50 / candidate_p50, narrowed_p50, candidate_p50)
        return cache[step][0]

    if median(dense_samples) <= median(span):
        return Match(0, True, median(dense_samples), median(span))
    step, reached = equal_latency_step(ratio, FRACTION_STEPS)
    return Match(step, reached, cache[step][1], cache[step][2])


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
    target: TargetClock | None = None,
) -> EqualLatencyQuality | None:
    """Narrow the dense model until it is as fast as the candidate; compare qualities.

    With a ``target`` clock (a GPU backend profile) the narrowing is chosen on the
    target's projected latencies, which are the same for the same workload and
    seed; this machine's timed search is kept as ``cross_check``. Without one, the
    timed search on this machine decides.
    """
    if not ffn_groups(workload):
        return None
    cpu = _cpu_match(workload, repeats, shapes, dense_tensors, candidate_ops, x_run, span, dense_samples)
    on_target = target_match(workload, target) if target is not None else None
    chosen = on_target or cpu
    ops = build_ops(workload, shapes, narrow(workload, dense_tensors, chosen.step / FRACTION_STEPS), mode="dense")
    out, _ = forward(ops, x_run)
    narrowed_quality = quality(out, dense_ref_out, labels, dense_accuracy)
    wins = (not chosen.reached) or candidate_quality.cosine > narrowed_quality.cosine
    cross = None
    if on_target is not None:
        cross = LatencyMatch(
            clock="this_machine", narrowed_ffn_fraction=cpu.step / FRACTION_STEPS, narrowed_latency_ms=cpu.narrowed_ms,
            candidate_latency_ms=cpu.candidate_ms, latency_matched=cpu.reached,
            note="timed here (p50 of interleaved rounds): a cross-check, not the budget",
        )
    return EqualLatencyQuality(
        narrowed_ffn_fraction=chosen.step / FRACTION_STEPS,
        narrowed_latency_ms=chosen.narrowed_ms,
        candidate_latency_ms=chosen.candidate_ms,
        narrowed=narrowed_quality,
        candidate=candidate_quality,
        latency_matched=chosen.reached,
        sparsity_wins=wins,
        clock="target" if on_target is not None else "this_machine",
        cross_check=cross,
    )
