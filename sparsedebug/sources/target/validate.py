"""Validation of a target cost model against its own measurements, the way its users would test it.

Two checks, printed by ``benchmarks/target_validation.py``:

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
