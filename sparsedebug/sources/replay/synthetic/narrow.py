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

The search itself, on the target clock for a GPU backend profile (projected by
:mod:`sparsedebug.sources.target.model`, the same for the same workload) and on
this machine's clock, is the one both graph sources share
(:mod:`sparsedebug.sources.replay.equal_latency`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import QualityDelta
from sparsedebug.records.target import Launch, TargetClock
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS, FfnGroup, Match, search_projected
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


def target_match(workload: Workload, target: TargetClock) -> Match | None:
    """The equal-latency search on the target clock: deterministic, from projections only."""
    cand = target.forward.candidate
    if cand is None or target.forward.dense is None:
        return None
    return search_projected(lambda step: narrowed_dense_ms(workload, step, target.launch), cand.total_ms)


def narrowed_dense_ms(workload: Workload, step: int, launch: Launch) -> float:
    """The dense model narrowed by ``step / FRACTION_STEPS``, its whole forward projected onto the target (inf: no figure)."""
    from sparsedebug.sources.target.project import project_workload

    result = project_workload(narrowed_workload(workload, step / FRACTION_STEPS), paths={}, launch=launch)
    forward = result[2].dense if result is not None else None
    return forward.total_ms if forward is not None else float("inf")


class GraphNarrowing:
    """A declared graph's dense model narrowed by neuron magnitude: its :class:`~sparsedebug.sources.replay.protocol.Narrowing`."""

    importance: Note | None = note("targets.importance_weight_magnitude")

    def __init__(
        self, workload: Workload, shapes: Sequence[LayerShape], dense_tensors: dict[str, Array], x_run: Array,
        dense_ref_out: Array, labels: npt.NDArray[np.int64] | None, dense_accuracy: float | None,
    ) -> None:
        self.workload, self.shapes, self.dense_tensors, self.x_run = workload, shapes, dense_tensors, x_run
        self.dense_ref_out, self.labels, self.dense_accuracy = dense_ref_out, labels, dense_accuracy

    def _ops(self, step: int) -> list[Op]:
        return build_ops(self.workload, self.shapes, narrow(self.workload, self.dense_tensors, step / FRACTION_STEPS), mode="dense")

    def forward(self, step: int) -> Callable[[], object]:
        """One forward of the narrowed dense model."""
        ops = self._ops(step)
        return lambda: forward(ops, self.x_run)

    def quality(self, step: int) -> QualityDelta:
        """Output quality of the narrowed dense model against the dense one (fp64 reference)."""
        out, _ = forward(self._ops(step), self.x_run)
        return quality(out, self.dense_ref_out, self.labels, self.dense_accuracy)

    def target_dense_ms(self, step: int, launch: Launch) -> float | None:
        """The narrowed dense model's whole forward on the target clock."""
        return narrowed_dense_ms(self.workload, step, launch)

    def better(self, candidate: QualityDelta, narrowed: QualityDelta) -> bool:
        """The candidate's output cosine to the dense model beats the narrowed model's."""
        return candidate.cosine > narrowed.cosine
