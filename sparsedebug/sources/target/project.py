"""Projecting workloads and weight shapes onto the target: per layer, whole forward, break-even tokens.

:func:`project_workload` turns a workload (and its lowering decisions) into target
projections of every layer and of the whole forward, dense baseline against the
candidate; :func:`target_clock` is what a replay records; :func:`predict` answers
``sparsedebug predict`` for a workload or a list of shapes at several token
counts, with the token count from which 2:4 pays off per shape
(:func:`break_even`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sparsedebug.core.errors import UserError
from sparsedebug.records.target import (
    BreakEven,
    ForwardProjection,
    Launch,
    LayerProjection,
    PredictAt,
    PredictReport,
    TargetClock,
    worst_basis,
)
from sparsedebug.sources.target.model import METHOD, LinearCall, OpCall, TargetModel, target_model
from sparsedebug.sources.workload.inventory import inventory
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.lowering import LayerQuery, get_profile
from sparsedebug.sources.workload.schema import Workload

BREAK_EVEN_LIMIT = 65536
"""Largest token count the break-even search looks at."""
MEASURED_TOKENS = (1, 8192)
"""Token range of the gemm rows: a crossing outside it is extrapolated."""


@dataclass(frozen=True)
class ShapeSpec:
    """``--shape OUTxIN[:dense|:sparse]``: a linear layer to predict, sparse unless told dense."""

    out: int
    k: int
    path: str = "sparse"

    @property
    def name(self) -> str:
        """How the shape is shown: ``11008x4096`` (``:dense`` when forced dense)."""
        return f"{self.out}x{self.k}" + (":dense" if self.path == "dense" else "")


def parse_shape_spec(text: str) -> ShapeSpec:
    """Parse ``OUTxIN`` optionally followed by ``:dense`` or ``:sparse``."""
    from sparsedebug.kernels.bench import parse_shape

    body, _, path = text.partition(":")
    path = path.strip().lower() or "sparse"
    if path not in ("dense", "sparse"):
        raise UserError(f"--shape {text!r}: the suffix must be :dense or :sparse, not :{path}")
    out, k = parse_shape(body)
    return ShapeSpec(out, k, path)


def workload_calls(workload: Workload, paths: Mapping[str, str]) -> list[LinearCall | OpCall]:
    """Every layer of ``workload`` as a call to project; ``paths`` gives each linear layer's path (default dense)."""
    calls: list[LinearCall | OpCall] = []
    conv = 1 if workload.conversion == "per_call" else 0
    for layer, graph in zip(workload.layers, inventory(workload), strict=True):
        tokens = workload.tokens.total
        if layer.op == "linear":
            assert graph.weight_shape is not None
            out, k = graph.weight_shape
            path = paths.get(layer.name, "dense")
            calls.append(LinearCall(layer.name, out, k, tokens, graph.dtype, path, conv if path == "sparse" else 0))
        else:
            calls.append(OpCall(layer.name, layer.op, tokens, graph.dtype, graph.bytes, graph.flops, layer.function))
    return calls


def lowered_paths(workload: Workload) -> dict[str, str]:
    """The path each linear layer takes under the workload's profile (weights assumed compliant)."""
    profile = get_profile(workload.backend)
    paths: dict[str, str] = {}
    for layer in workload.layers:
        if layer.op != "linear" or layer.shape is None:
            continue
        out, k = layer.shape
        query = LayerQuery(name=layer.name, op=layer.op, out=out, k=k, dtype=workload.dtype_of(layer), pattern=layer.pattern)
        paths[layer.name] = profile.decide(query).path.value
    return paths


def project_calls(model: TargetModel, calls: Sequence[LinearCall | OpCall], launch: Launch) -> tuple[list[LayerProjection], ForwardProjection]:
    """Project every call, then the whole forward of the dense baseline and of the candidate."""
    layers = [model.linear(c, launch) if isinstance(c, LinearCall) else model.op(c, launch) for c in calls]
    dense = model.forward(layers, launch, dense=True)
    cand = model.forward(layers, launch, dense=False)
    weak = [layer.name for layer in layers if layer.basis in ("extrapolated", "unavailable")]
    missing = [layer.name for layer in layers if layer.basis == "unavailable"]
    note = None
    if missing:
        note = f"no whole-forward figure: {len(missing)} layer(s) have none ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})"
    forward = ForwardProjection(
        launch=launch,
        dense=dense,
        candidate=cand,
        speedup=dense.total_ms / cand.total_ms if dense is not None and cand is not None and cand.total_ms > 0 else None,
        basis=worst_basis([layer.basis for layer in layers]),
        extrapolated_layers=weak,
        note=note,
    )
    return layers, forward


def project_workload(
    workload: Workload, *, paths: Mapping[str, str] | None = None, launch: Launch | None = None
) -> tuple[TargetModel, list[LayerProjection], ForwardProjection] | None:
    """Target projections of ``workload`` (None for a backend without a target, such as ``cpu-numpy``)."""
    model = target_model(workload.backend)
    if model is None:
        return None
    chosen = lowered_paths(workload) if paths is None else dict(paths)
    layers, forward = project_calls(model, workload_calls(workload, chosen), launch or workload.launch)
    return model, layers, forward


def target_clock(
    workload: Workload, paths: Mapping[str, str] | None = None, calls: Sequence[LinearCall | OpCall] | None = None
) -> TargetClock | None:
    """The target clock a replay records: every layer and the whole forward, projected; None without a target.

    ``calls`` are the layers to project (a graph source's inventory); by default the workload's declared layers.
    """
    if calls is None:
        projected = project_workload(workload, paths=paths)
        if projected is None:
            return None
        model, layers, forward = projected
    else:
        found = target_model(workload.backend)
        if found is None:
            return None
        model = found
        layers, forward = project_calls(model, calls, workload.launch)
    return TargetClock(
        backend=model.profile, device=model.device, launch=workload.launch, tokens=workload.tokens.total,
        method=METHOD, layers=layers, forward=forward,
    )


def break_even(model: TargetModel, out: int, k: int, dtype: str, launch: Launch, limit: int = BREAK_EVEN_LIMIT) -> BreakEven:
    """Smallest token count from which sparse beats dense at every count up to ``limit`` (bisection on a log grid)."""

    def at(tokens: int) -> LayerProjection:
        return model.linear(LinearCall("break-even", out, k, tokens, dtype, "sparse"), launch)

    def wins(tokens: int) -> bool:
        speedup = at(tokens).speedup
        return speedup is not None and speedup > 1.0

    common = dict(shape=[out, k], dtype=layer_dtype(dtype), launch=launch, searched_up_to=limit)
    if at(1).speedup is None:
        return BreakEven(**common, basis="unavailable", note=at(1).note or "no sparse figure on this target")
    grid = sorted({max(1, round(2 ** (i / 4))) for i in range(int(4 * math.log2(limit)) + 1)} | {limit})
    results = [wins(t) for t in grid]
    if not results[-1]:
        basis = worst_basis(["extrapolated", at(limit).basis])
        return BreakEven(**common, basis=basis, note=f"2:4 does not pay off at any token count up to {limit}")
    last_loss = max((i for i, w in enumerate(results) if not w), default=None)
    if last_loss is None:
        first = 1
    else:
        lo, hi = grid[last_loss], grid[last_loss + 1]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if wins(mid) else (mid, hi)
        first = hi
    bases = [at(first).basis] + ([at(first - 1).basis] if first > 1 else [])
    if not MEASURED_TOKENS[0] <= first <= MEASURED_TOKENS[1]:
        bases.append("extrapolated")
    note = f"sparse faster than dense from {first} tokens on ({launch.replace('_', ' ')})"
    return BreakEven(**common, tokens_from=first, basis=worst_basis(bases), note=note)


def layer_dtype(dtype: str) -> str:
    """PyTorch's name of a dtype spelling (as the projections show it)."""
    from sparsedebug.core.dtypes import dtype_info

    return dtype_info(dtype).torch_name


def predict(
    *,
    backend: str,
    tokens: Sequence[int],
    workload: Workload | None = None,
    shapes: Sequence[ShapeSpec] = (),
    dtype: str = "fp16",
    launch: Launch | None = None,
    calls_at: Callable[[int], Sequence[LinearCall | OpCall]] | None = None,
) -> PredictReport:
    """``sparsedebug predict``: per layer (or shape) and in total at each token count, plus break-even per shape.

    ``calls_at(tokens)`` gives the workload's layers at a token count, lowered on its profile (a graph
    source's inventory); by default the workload's declared layers.
    """
    if workload is None and not shapes:
        raise UserError("predict: give a WORKLOAD or at least one --shape OUTxIN")
    if not tokens:
        raise UserError("--tokens: need at least one token count")
    model = target_model(backend)
    if model is None:
        raise UserError(f"--backend {backend}: this profile has no target cost model (it runs on this machine); use a GPU profile")
    chosen_launch: Launch = launch or (workload.launch if workload is not None else "eager")
    if workload is not None and calls_at is None:
        declared = workload

        def calls_at(count: int) -> list[LinearCall | OpCall]:
            sized = with_tokens(declared, count)
            return workload_calls(sized, lowered_paths(sized))

    results = []
    for count in tokens:
        calls: list[LinearCall | OpCall] = list(calls_at(count)) if calls_at is not None else []
        calls += [LinearCall(s.name, s.out, s.k, count, dtype, s.path) for s in shapes]
        layers, forward = project_calls(model, calls, chosen_launch)
        results.append(PredictAt(tokens=count, layers=layers, forward=forward))
    seen: dict[tuple[int, int, str], None] = {}
    for call in [c for c in (calls_at(workload.tokens.total) if workload is not None and calls_at is not None else []) if isinstance(c, LinearCall)]:
        seen.setdefault((call.out, call.k, call.dtype), None)
    for s in shapes:
        seen.setdefault((s.out, s.k, dtype), None)
    even = [break_even(model, out, k, dt, chosen_launch) for out, k, dt in seen]
    return PredictReport(
        backend=model.profile, device=model.device, launch=chosen_launch, workload=workload.name if workload is not None else None,
        method=METHOD, results=results, break_even=even,
    )


def with_tokens(workload: Workload, tokens: int) -> Workload:
    """The workload at ``tokens`` tokens per forward (one sequence of that length when the batch is 1)."""
    if tokens == workload.tokens.total:
        return workload
    batch = workload.tokens.batch if tokens % workload.tokens.batch == 0 else 1
    sized = workload.model_copy(update={"tokens": workload.tokens.model_copy(update={"batch": batch, "sequence": tokens // batch})})
    return revalidate(sized)
