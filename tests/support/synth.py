"""Small synthetic run records for renderer and gate tests (numbers chosen by the test, never measured)."""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.records.run import (
    FallbackReason,
    GraphLayer,
    GraphStage,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    QualityDelta,
    RunRecord,
    RunSource,
    ScheduleStage,
    WorkloadRef,
)


@dataclass
class L:
    """One layer spec: intended pattern, path taken, kernel time (dense time when paired)."""

    name: str
    intended: str = "dense"
    path: str = "dense"
    reason: str | None = None
    time_ms: float = 1.0
    dense_ms: float | None = None
    flops: float = 1e6
    precision: str | None = "fp32"
    rel_err: float | None = 1e-7
    op: str = "linear"
    conversions_per_call: int = 0


def spread(center: float, n: int = 30, width: float = 0.02) -> list[float]:
    """``n`` deterministic samples spread +-width around ``center``."""
    if n == 1:
        return [center]
    return [center * (1 - width + 2 * width * i / (n - 1)) for i in range(n)]


def make_run(
    name: str,
    layers: list[L],
    latency_ms: float,
    *,
    n: int = 30,
    quality: QualityDelta | None = None,
    budget_ms: float | None = None,
    effective_speedup: float | None = None,
    knobs: dict[str, str] | None = None,
) -> RunRecord:
    """A complete five-stage record from layer specs and a latency centre."""
    graph = [
        GraphLayer(
            name=l.name, op=OpKind(l.op), weight_shape=[64, 64] if l.op == "linear" else None,
            input_shape=[16, 64], dtype="float32", intended=l.intended, flops=l.flops,
        )
        for l in layers
    ]
    lower = []
    for l in layers:
        reason = l.reason
        if l.path == "dense" and reason is None:
            reason = FallbackReason.INTENDED_DENSE.value if l.intended == "dense" else FallbackReason.SHAPE_NOT_ALIGNED.value
        lower.append(
            LowerLayer(
                name=l.name, path=KernelPath(l.path), reason=FallbackReason(reason) if reason else None,
                conversions_per_call=l.conversions_per_call, metadata_bytes=512 if l.path == "sparse" else None,
                value_bytes=4096 if l.path == "sparse" else None,
            )
        )
    kernel = [
        KernelLayer(
            name=l.name, samples_ms=spread(l.time_ms, n), dense_samples_ms=spread(l.dense_ms, n) if l.dense_ms else None,
            precision=l.precision, rel_err=l.rel_err,
        )
        for l in layers
    ]
    lat = spread(latency_ms, n)
    busy = sum(l.time_ms for l in layers)
    return RunRecord(
        name=name,
        source=RunSource(kind="replay"),
        workload=WorkloadRef(name=name, seed=0, knobs=knobs or {}),
        graph=GraphStage(layers=graph, tokens=16),
        lower=LowerStage(backend="cpu-numpy", layers=lower),
        kernel=KernelStage(layers=kernel),
        schedule=ScheduleStage(span_samples_ms=lat, busy_samples_ms=[busy] * n, threads=1),
        outcome=OutcomeStage(
            latency_samples_ms=lat, budget_ms=budget_ms, quality=quality, effective_speedup=effective_speedup
        ),
    )


DENSE_LAYERS = [L("l0.up", time_ms=2.0), L("l0.act", op="activation", time_ms=0.2, rel_err=None), L("l0.down", time_ms=2.0)]


def dense_run(latency_ms: float = 5.0, n: int = 30) -> RunRecord:
    """A dense baseline: all linears dense as intended."""
    return make_run("dense", DENSE_LAYERS, latency_ms, n=n, quality=QualityDelta(cosine=1.0, rel_err=0.0))


def sparse_run(
    latency_ms: float = 3.5,
    *,
    fallback: bool = False,
    n: int = 30,
    cosine: float = 0.97,
    rel_err: float = 1e-7,
    precision: str = "fp32",
    quality: bool = True,
) -> RunRecord:
    """A 2:4 candidate; with ``fallback`` its down projection stays dense (shape not aligned)."""
    layers = [
        L("l0.up", intended="2:4", path="sparse", time_ms=1.2, dense_ms=2.0, precision=precision, rel_err=rel_err),
        L("l0.act", op="activation", time_ms=0.2, rel_err=None),
        L(
            "l0.down", intended="2:4", path="dense" if fallback else "sparse", time_ms=2.0 if fallback else 1.2,
            dense_ms=None if fallback else 2.0, precision=precision, rel_err=rel_err,
        ),
    ]
    q = QualityDelta(cosine=cosine, rel_err=1 - cosine) if quality else None
    return make_run("sparse" + ("_fallback" if fallback else ""), layers, latency_ms, n=n, quality=q)
