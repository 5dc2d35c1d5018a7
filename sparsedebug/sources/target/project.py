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
from sparsedebug.kernels.masks import Pattern, check_divisible
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import KernelPath
from sparsedebug.records.target import (
    BreakEven,
    ForwardProjection,
    Launch,
    LayerProjection,
    PathTime,
    PredictAt,
    PredictReport,
    TargetClock,
    TokenRange,
    Verdict,
    worst_basis,
)
from sparsedebug.sources.target.model import METHOD, LinearCall, OpCall, TargetModel, target_model
from sparsedebug.sources.workload.inventory import inventory
from sparsedebug.sources.workload.load import revalidate
from sparsedebug.sources.workload.lowering import LayerQuery, get_profile
from sparsedebug.sources.workload.schema import Workload

# Token range of the H200 gemm rows (the fallback of :func:`measured_token_limit`).
MEASURED_TOKENS = (1, 8192)


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


# The pattern a ``--shape`` is projected sparse with (the target's measured sparse kernels are 2:4).
PREDICT_PATTERN = Pattern(n=2, m=4)


def lower_shape(spec: ShapeSpec, backend: str, dtype: str) -> tuple[str, list[Note] | None]:
    """The path a ``--shape`` runs on ``backend`` and, when asked sparse but lowered dense, why.

    A shape asked sparse must have ``K`` a multiple of ``M`` (the one rule of every N:M
    weight, which ``bench`` applies too): otherwise a ``UserError``. A shape the backend's
    lowering sends dense (dims not a multiple of 16, an unsupported dtype) is projected
    dense, with the reason as its note.
    """
    if spec.path != "sparse":
        return "dense", None
    check_divisible(spec.k, PREDICT_PATTERN, f"--shape {spec.out}x{spec.k}")
    query = LayerQuery(name=spec.name, op="linear", out=spec.out, k=spec.k, dtype=dtype, pattern=PREDICT_PATTERN)
    decision = get_profile(backend).decide(query)
    if decision.path == KernelPath.SPARSE:
        return "sparse", None
    reason = decision.reason.value if decision.reason is not None else "dense"
    return "dense", [note("targets.lowered_dense", backend=backend, reason=reason), *([decision.detail] if decision.detail else [])]


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
    speedup = dense.total_ms / cand.total_ms if dense is not None and cand is not None and cand.total_ms > 0 else None
    low, high = (_forward_speedup(model, layers, launch, end) for end in ("low", "high"))
    verdict: Verdict | None = None
    if speedup is not None and low is not None and high is not None:
        verdict = "sparse wins" if low > 1.0 else ("sparse loses" if high < 1.0 else "uncertain here")
    forward = ForwardProjection(
        launch=launch,
        dense=dense,
        candidate=cand,
        speedup=speedup,
        speedup_low=low,
        speedup_high=high,
        verdict=verdict,
        basis=worst_basis([layer.basis for layer in layers]),
        extrapolated_layers=weak,
        missing_layers=missing,
    )
    return layers, forward


def _forward_speedup(model: TargetModel, layers: Sequence[LayerProjection], launch: Launch, end: str) -> float | None:
    """One end of the whole-forward speedup's interval: every linear layer's GPU time at the end of its 90% interval
    that moves the speedup that way (dense paths low and sparse paths high for the low end), the same dense figure in
    both forwards; non-linear ops at their estimate. None where a linear layer has no interval."""

    def at(path: PathTime | None, low: bool) -> PathTime | None:
        if path is None:
            return None
        value = path.gpu_low_ms if low else path.gpu_high_ms
        if value is None:
            return None
        return path.model_copy(update={"gpu_ms": value})

    shifted: list[LayerProjection] = []
    for layer in layers:
        if layer.op != "linear":
            shifted.append(layer)
            continue
        dense = at(layer.dense, end == "low")
        sparse = at(layer.sparse, end != "low") if layer.sparse is not None else None
        if dense is None or (layer.sparse is not None and sparse is None):
            return None
        shifted.append(layer.model_copy(update={"dense": dense, "sparse": sparse}))
    base = model.forward(shifted, launch, dense=True)
    cand = model.forward(shifted, launch, dense=False)
    if base is None or cand is None or cand.total_ms <= 0:
        return None
    return base.total_ms / cand.total_ms


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
    shapes = dict.fromkeys((tuple(layer.shape), layer.dtype) for layer in layers if layer.op == "linear" and layer.shape)
    even = [break_even(model, shape[0], shape[1], dtype, workload.launch) for shape, dtype in shapes]
    return TargetClock(
        backend=model.profile, device=model.device, launch=workload.launch, tokens=workload.tokens.total,
        method=METHOD, layers=layers, forward=forward, break_even=even,
    )


def measured_token_limit(model: TargetModel) -> int:
    """The largest token count of the target's per-call rows: break-even claims stop there."""
    return max((r.tokens for r in model.cal.gemm if r.dense_ms is not None), default=MEASURED_TOKENS[1])


def break_even(model: TargetModel, out: int, k: int, dtype: str, launch: Launch, limit: int | None = None) -> BreakEven:
    """From which token count 2:4 pays off for ``out x k`` on the target, claimed only where the interval says so.

    Searches a log grid from 1 to ``limit`` (default: the largest measured token
    count) and bisects each boundary: ``tokens_from`` is the smallest count from
    which the speedup's 90% interval lies above 1.0 at every count up to the limit,
    ``loses_up_to`` the largest count up to which it lies below 1.0; counts between
    are ``uncertain here``, with what to measure. ``central_crossing`` is where the
    central estimate crosses 1.0: shown, never claimed.
    """
    top = limit or measured_token_limit(model)
    cache: dict[int, LayerProjection] = {}

    def at(tokens: int) -> LayerProjection:
        if tokens not in cache:
            cache[tokens] = model.linear(LinearCall("break-even", out, k, tokens, dtype, "sparse"), launch)
        return cache[tokens]

    def verdict(tokens: int) -> Verdict | None:
        return at(tokens).verdict

    def central(tokens: int) -> bool:
        speedup = at(tokens).speedup
        return speedup is not None and speedup > 1.0

    common = dict(shape=[out, k], dtype=layer_dtype(dtype), launch=launch, searched_up_to=top)
    if at(1).speedup is None:
        return BreakEven(**common, basis="unavailable", notes=at(1).notes)
    grid = sorted({max(1, round(2 ** (i / 4))) for i in range(int(4 * math.log2(top)) + 1)} | {top})
    ranges = _ranges(grid, verdict)
    tokens_from = ranges[-1].first if ranges[-1].verdict == "sparse wins" else None
    loses_up_to = ranges[0].last if ranges[0].verdict == "sparse loses" else None
    crossing = None
    wins = [central(t) for t in grid]
    if wins[-1]:
        last = max((i for i, w in enumerate(wins) if not w), default=None)
        crossing = 1 if last is None else _first_true(grid[last], grid[last + 1], central)
    unsure = [r for r in ranges if r.verdict == "uncertain here"]
    uncertain = [unsure[0].first, unsure[-1].last] if unsure else None
    measure = None
    if unsure:
        widest = max(unsure, key=lambda r: r.last / r.first)
        inside = crossing is not None and widest.first < crossing <= widest.last
        probe = crossing if inside and crossing is not None else round(math.sqrt(widest.first * widest.last))
        measure = at(probe).measure
    bases = [at(tokens_from).basis] if tokens_from is not None else [at(top).basis]
    return BreakEven(
        **common, tokens_from=tokens_from, loses_up_to=loses_up_to, uncertain_tokens=uncertain, central_crossing=crossing,
        ranges=ranges, basis=worst_basis(bases), measure=measure,
    )


def _ranges(grid: list[int], verdict: Callable[[int], Verdict | None]) -> list[TokenRange]:
    """Consecutive token ranges of one verdict over ``grid``, each boundary bisected to the exact count."""

    def mark(tokens: int) -> Verdict:
        return verdict(tokens) or "uncertain here"

    marks = [mark(t) for t in grid]
    ranges: list[TokenRange] = []
    first = 1
    for i in range(1, len(grid)):
        if marks[i] != marks[i - 1]:
            left = marks[i - 1]

            def changed(tokens: int, left: Verdict = left) -> bool:
                return mark(tokens) != left

            edge = _first_true(grid[i - 1], grid[i], changed)
            ranges.append(TokenRange(first=first, last=edge - 1, verdict=left))
            first = edge
    ranges.append(TokenRange(first=first, last=grid[-1], verdict=marks[-1]))
    return ranges


def _first_true(lo: int, hi: int, test: Callable[[int], bool]) -> int:
    """Smallest count in (lo, hi] where ``test`` holds, given it fails at ``lo`` and holds at ``hi`` (bisection)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if test(mid) else (mid, hi)
    return hi


def break_even_tokens(profile: str, out: int, k: int, dtype: str = "float16", launch: Launch = "cuda_graph") -> BreakEven | None:
    """Break-even of one linear shape on backend ``profile``'s target (None for a profile without one, e.g. cpu-numpy)."""
    model = target_model(profile)
    return None if model is None else break_even(model, out, k, dtype, launch)


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

    lowered = {spec.name: lower_shape(spec, backend, dtype) for spec in shapes}
    results = []
    for count in tokens:
        calls: list[LinearCall | OpCall] = list(calls_at(count)) if calls_at is not None else []
        calls += [LinearCall(s.name, s.out, s.k, count, dtype, lowered[s.name][0]) for s in shapes]
        layers, forward = project_calls(model, calls, chosen_launch)
        layers = [_with_lowering_note(layer, lowered) for layer in layers]
        results.append(PredictAt(tokens=count, layers=layers, forward=forward))
    seen: dict[tuple[int, int, str], None] = {}
    for call in [c for c in (calls_at(workload.tokens.total) if workload is not None and calls_at is not None else []) if isinstance(c, LinearCall)]:
        seen.setdefault((call.out, call.k, call.dtype), None)
    for s in shapes:
        if lowered[s.name][1] is None:  # a shape the backend cannot run sparse has no break-even
            seen.setdefault((s.out, s.k, dtype), None)
    even = [break_even(model, out, k, dt, chosen_launch) for out, k, dt in seen]
    return PredictReport(
        backend=model.profile, device=model.device, launch=chosen_launch, workload=workload.name if workload is not None else None,
        method=METHOD, results=results, break_even=even,
    )


def _with_lowering_note(layer: LayerProjection, lowered: Mapping[str, tuple[str, list[Note] | None]]) -> LayerProjection:
    """A ``--shape`` layer the backend lowered dense says why in its notes."""
    reason = lowered.get(layer.name, ("", None))[1]
    if reason is None:
        return layer
    return layer.model_copy(update={"notes": [*reason, *layer.notes]})


def with_tokens(workload: Workload, tokens: int) -> Workload:
    """The workload at ``tokens`` tokens per forward (one sequence of that length when the batch is 1)."""
    if tokens == workload.tokens.total:
        return workload
    batch = workload.tokens.batch if tokens % workload.tokens.batch == 0 else 1
    sized = workload.model_copy(update={"tokens": workload.tokens.model_copy(update={"batch": batch, "sequence": tokens // batch})})
    return revalidate(sized)
