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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sparsedebug.sources.replay.workload import MODEL_INPUT, Workload, check_graph, resolved_inputs

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
