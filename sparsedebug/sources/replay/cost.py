"""What a replay of a declared graph will cost, from its shapes and counts alone (nothing allocated).

Memory, as an upper bound of the peak a replay holds (``tracemalloc`` peaks of replays
of varied workloads stay below it; ``tests/sources/replay/test_cost.py``):

- every weight is held as float64 (dense and pruned), rounded copies at the run's
  precision, compressed values and metadata, fp64 reference operators and narrowed
  copies for the equal-latency search: :data:`BYTES_PER_PARAM` bytes per weight;
- every layer output and the model input, over all tokens, at float64 for the
  reference forward and at the run's precision for the kept candidate forward:
  :data:`BYTES_PER_ACTIVATION` bytes per element;
- the largest attention score tensor (batch x heads x sequence^2), alive in a few
  float64 temporaries at once (scores, shifted scores, their exponentials), plus its
  causal masks: :data:`BYTES_PER_SCORE` bytes per element.

Work: the forward's FLOPs (2·out·in·tokens per linear layer, 4·batch·sequence²·dim per
attention, one per element for the rest) times the forwards a replay runs: the kernel
stage times every layer on its own twice per round (chosen and dense path), the schedule
stage the whole forward twice per round, the equal-latency search up to
``log2(FRACTION_STEPS) + 2`` narrowed forwards per round of half the repeats, each after
its warm-up rounds.
"""

from __future__ import annotations

import math

from sparsedebug.core.budget import Cost, check_budget
from sparsedebug.sources.replay.equal_latency import FRACTION_STEPS
from sparsedebug.sources.workload.graph import check_graph
from sparsedebug.sources.workload.schema import Workload

BYTES_PER_PARAM = 48
BYTES_PER_ACTIVATION = 24
BYTES_PER_SCORE = 40


def _forwards(repeats: int, warmup: int) -> float:
    """Whole-forward equivalents a replay runs with ``repeats`` timed rounds."""
    kernel = 2 * (repeats + warmup)
    schedule = 2 * (repeats + warmup)
    search = (math.log2(FRACTION_STEPS) + 2) * 2 * (max(5, repeats // 2) + 1)
    return kernel + schedule + search + 3  # + the reference, candidate and numerics forwards


def replay_cost(workload: Workload, repeats: int | None = None, source: str | None = None) -> Cost:
    """Peak memory, FLOPs and kernel calls of replaying ``workload`` (``repeats`` overrides its own).

    ``UserError`` when the graph does not check (the same error the replay would raise).
    """
    shapes = check_graph(workload)
    batch, seq = workload.tokens.batch, workload.tokens.sequence
    tokens = batch * seq
    params = 0
    activations = (workload.input_features or shapes[0].in_widths[0]) * tokens
    scores = 0
    flops = 0.0
    for layer, shape in zip(workload.layers, shapes, strict=True):
        activations += shape.out_width * tokens
        if layer.op in ("linear", "embedding") and layer.shape is not None:
            params += layer.shape[0] * layer.shape[1]
        if layer.op == "linear":
            flops += 2.0 * shape.out_width * shape.in_widths[0] * tokens
        elif layer.op == "attention":
            heads = layer.heads or 1
            scores = max(scores, batch * heads * seq * seq)
            flops += 4.0 * batch * seq * seq * shape.out_width
        else:
            flops += float(shape.out_width * tokens * len(shape.in_widths))
    rounds = workload.repeats if repeats is None else repeats
    forwards = _forwards(rounds, workload.warmup)
    held = BYTES_PER_PARAM * params + BYTES_PER_ACTIVATION * activations + BYTES_PER_SCORE * scores + (2 * seq * seq if scores else 0)
    name = source if source is not None else f"workload {workload.name!r}"
    return Cost(
        bytes=float(held),
        flops=flops * forwards,
        calls=float(len(workload.layers)) * forwards,
        what=f"{name} (tokens {batch}x{seq}, {len(workload.layers)} layers, repeats {rounds})",
    )


def check_replay(workload: Workload, repeats: int | None = None, source: str | None = None, *, timed: bool = True) -> None:
    """Refuse, before anything is allocated, a replay of a declared graph this machine cannot hold in memory (or finish in time).

    Callers reach it through their graph source (``GraphSource.check_cost``): a checkpoint has no declared
    graph to estimate from (its size is the checkpoint's, its tokens and repeats are bounded by the schema).
    """
    check_budget(replay_cost(workload, repeats, source), timed=timed)
