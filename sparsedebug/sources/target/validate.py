"""Validation of a target cost model against its own measurements, the way its users would test it.

Three checks, printed by ``benchmarks/target_validation.py``:

**Held out by whole shapes and token decades.** Every measured GPU time (dense:
per-call rows and trace/ncu kernel times; sparse: every GPU-only 2:4 time) is
grouped by weight shape and by token decade; each group in turn is dropped from
the data, the model is rebuilt without it (its interval widths re-estimated from
what is left), and the group's GPU times are projected. Reported: the median and
worst |projected / measured - 1| and the share of held-out points whose 90%
interval contains the measurement. A group whose removal leaves a path without
data (every sparse time lies in one token decade) is counted as not testable.

**Leave-one-out over the timed gemm rows.** For each timed row (shape, tokens,
dtype), the model is rebuilt without every measurement at that point (the row,
and any trace or ncu kernel time at the same point), then asked for that row's
eager per-call dense and sparse time. Errors are |projected / measured - 1|.

**Whole forwards.** Each measured forward of the target source (a workload, a
launch mode and a measured p50, never used by the model) is projected and
compared.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.core.stats import median
from sparsedebug.sources.target.data import load_calibration
from sparsedebug.sources.target.interval import Key, hold_out_groups
from sparsedebug.sources.target.model import LinearCall, TargetModel
from sparsedebug.sources.target.project import project_calls, workload_calls
from sparsedebug.sources.workload.load import load_workload


@dataclass(frozen=True)
class LooError:
    """One left-out row and path: measured and projected eager per-call time."""

    row: int
    shape: tuple[int, int]
    tokens: int
    dtype: str
    path: str
    measured_ms: float
    projected_ms: float
    basis: str

    @property
    def error(self) -> float:
        """|projected / measured - 1|."""
        return abs(self.projected_ms / self.measured_ms - 1.0)


@dataclass(frozen=True)
class ForwardCheck:
    """One measured whole forward against its projection."""

    workload: str
    launch: str
    measured_ms: float
    projected_ms: float | None
    source: str

    @property
    def error(self) -> float | None:
        """|projected / measured - 1|, None without a projection."""
        return None if self.projected_ms is None else abs(self.projected_ms / self.measured_ms - 1.0)


@dataclass(frozen=True)
class HeldOutPoint:
    """One measured GPU time projected by a model built without its whole group."""

    grouping: str
    group: str
    path: str
    shape: tuple[int, int]
    tokens: int
    dtype: str
    measured_ms: float
    projected_ms: float
    low_ms: float
    high_ms: float
    decades: float

    @property
    def error(self) -> float:
        """|projected / measured - 1|."""
        return abs(self.projected_ms / self.measured_ms - 1.0)

    @property
    def covered(self) -> bool:
        """Whether the 90% interval contains the measurement."""
        return self.low_ms <= self.measured_ms <= self.high_ms


@dataclass(frozen=True)
class HeldOut:
    """Every held-out point, and the groups that could not be tested (path, grouping, group): no GPU time of that path
    is left once the group is held out."""

    points: list[HeldOutPoint]
    untestable: list[tuple[str, str, str]]


def _measured(model: TargetModel) -> dict[tuple[str, Key], float]:
    """Every measured GPU time of the full model, by (path, key): merged medians as the model uses them."""
    out: dict[tuple[str, Key], float] = {}
    for dtype, surface in model.dense_surfaces().items():
        for p in surface.points:
            out[("dense", (p.out, p.k, p.tokens, dtype))] = p.value
    if model.sparse_model is not None:
        for sp in model.sparse_model.points:
            out[("sparse", (sp.out, sp.k, sp.tokens, sp.dtype))] = sp.ms
    return out


def held_out(profile: str, target: str = "h200") -> HeldOut:
    """Leave-one-shape-out and leave-one-token-decade-out over every measured GPU time of ``profile``'s target."""
    cal = load_calibration(target)
    measured = _measured(TargetModel(cal, profile))
    points: list[HeldOutPoint] = []
    untestable: list[tuple[str, str, str]] = []
    for grouping, name, group in hold_out_groups(sorted({key for _, key in measured})):
        model = TargetModel(cal, profile, exclude=group)
        for path in ("dense", "sparse"):
            keys = sorted(key for (p, key) in measured if p == path and key in group)
            if not keys:
                continue
            for key in keys:
                out, k, tokens, dtype = key
                fig = model.dense_gpu(out, k, tokens, dtype) if path == "dense" else model.sparse_gpu(out, k, tokens, dtype)
                if fig is None:
                    untestable.append((path, grouping, name))
                    break
                points.append(
                    HeldOutPoint(grouping, name, path, (out, k), tokens, dtype, measured[(path, key)], fig.ms, fig.low, fig.high, fig.away.total)
                )
    return HeldOut(points, untestable)


def leave_one_out(profile: str, target: str = "h200") -> list[LooError]:
    """Leave-one-out errors over every timed gemm row of ``profile``'s sparse backend (dense and sparse path)."""
    cal = load_calibration(target)
    backend = cal.source.profiles[profile]
    out: list[LooError] = []
    for row in cal.gemm:
        if row.backend != backend or row.dense_ms is None or row.sparse_ms is None:
            continue
        model = TargetModel(cal, profile, exclude=frozenset({(row.out, row.k, row.tokens, row.dtype)}))
        layer = model.linear(LinearCall("loo", row.out, row.k, row.tokens, row.dtype, "sparse"), "eager")
        for path, measured, projected in (
            ("dense", row.dense_ms, layer.dense.per_call_ms if layer.dense else None),
            ("sparse", row.sparse_ms, layer.sparse.per_call_ms if layer.sparse else None),
        ):
            if projected is not None:
                basis = (layer.dense if path == "dense" else layer.sparse).basis  # type: ignore[union-attr]
                out.append(LooError(row.index, (row.out, row.k), row.tokens, row.dtype, path, measured, projected, basis))
    return out


def forward_checks(profile: str, target: str = "h200") -> list[ForwardCheck]:
    """Every measured whole forward of the target source against the model's projection."""
    cal = load_calibration(target)
    model = TargetModel(cal, profile)
    checks = []
    for spec, path, measured, source in cal.forwards:
        workload = load_workload(path)
        paths = {layer.name: ("sparse" if layer.pattern is not None else "dense") for layer in workload.layers if layer.op == "linear"}
        _, forward = project_calls(model, workload_calls(workload, paths), spec.launch)
        projected = forward.candidate.total_ms if forward.candidate is not None else None
        checks.append(ForwardCheck(workload.name, spec.launch, measured, projected, source))
    return checks


def trace_checks(profile: str, target: str = "h200") -> list[ForwardCheck]:
    """Each traced forward (median iteration latency of the profiler trace) against the projection: a reference.

    The traces calibrate the model (kernel times, rates, host costs), so these are
    not independent checks; they show how the projection compares with the forward
    as the profiler saw it.
    """
    from sparsedebug.core.resources import data_file
    from sparsedebug.sources.importers.trace.importer import import_trace

    cal = load_calibration(target)
    model = TargetModel(cal, profile)
    checks = []
    for spec in cal.source.traces:
        record = import_trace(data_file(cal.source.data, spec.file))
        workload = load_workload(data_file("targets", spec.workload))
        paths = {layer.name: ("sparse" if layer.pattern is not None else "dense") for layer in workload.layers if layer.op == "linear"}
        _, forward = project_calls(model, workload_calls(workload, paths), spec.launch)
        projected = forward.candidate.total_ms if forward.candidate is not None else None
        measured = median(record.outcome.latency_samples_ms)
        checks.append(ForwardCheck(workload.name, spec.launch, measured, projected, f"{spec.file}: median iteration latency"))
    return checks


def summary(errors: list[LooError]) -> tuple[float, LooError]:
    """Median error and the worst row."""
    return median([e.error for e in errors]), max(errors, key=lambda e: e.error)
