"""Figures derived from run records, shared by the gate, the memo and the deployment report.

All pure functions over ``RunRecord``: nothing here measures, everything is
computed from the samples and per-layer entries a record already carries. A
figure that the record cannot support is ``None``, never a guess.
"""

from __future__ import annotations

from sparsedebug.core.paired import paired_ratio
from sparsedebug.core.patterns import declared_sparse, fallback_flop_share, is_fallback, kernel_named, kernel_time_shares
from sparsedebug.core.stats import Percentiles, median, percentiles
from sparsedebug.kernels.masks import intent_pattern
from sparsedebug.locate.reference import session_block
from sparsedebug.records.basis import Basis
from sparsedebug.records.equal_latency import equal_latency_values
from sparsedebug.records.figures import Clock, FallbackSummary, LayerRow, RealityFigures
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import EqualLatencyQuality, KernelPath, OpKind, RunRecord
from sparsedebug.sources.registry import capabilities, replayed


def run_clock(run: RunRecord) -> Clock:
    """The clock of a run's own latency samples: measured (a replay on this CPU), untraced (timed on the device with the
    profiler off, ``--latency``), traced (a profiler trace's iterations) or profiled (an engine's profile)."""
    if replayed(run):
        return "measured"
    if run.outcome.latency_timing == "untraced":
        return "untraced"
    return "traced" if capabilities(run).timeline else "profiled"


def nominal_factor(pattern: str) -> float | None:
    """Multiply reduction an ``N:M`` or ``V:N:M`` pattern promises (M/N); ``None`` for dense or unknown."""
    parsed = intent_pattern(pattern)
    return None if parsed is None else 1.0 / parsed.density


def equal_latency_note(eq: EqualLatencyQuality, run: str = "candidate") -> Note:
    """The equal-latency comparison as a note (``signoff.equal_latency``)."""
    return note("signoff.equal_latency", **equal_latency_values(eq, run))


def latency(run: RunRecord) -> Percentiles | None:
    """p50/p95/p99 of the whole-forward latency samples, or ``None`` without samples."""
    samples = run.outcome.latency_samples_ms
    return percentiles(samples) if samples else None


def layer_rows(run: RunRecord) -> list[LayerRow]:
    """Every graph layer in order, with its lowering decision and kernel figures where recorded."""
    lower = {layer.name: layer for layer in run.lower.layers}
    kernel = {layer.name: layer for layer in run.kernel.layers}
    rows = []
    for g in run.graph.layers:
        lo = lower.get(g.name)
        k = kernel.get(g.name)
        rows.append(
            LayerRow(
                name=g.name,
                op=g.op.value,
                weight_shape=g.weight_shape,
                input_shape=g.input_shape,
                dtype=g.dtype,
                intended=g.intended,
                path=lo.path.value if lo is not None else None,
                reason=lo.reason.value if lo is not None and lo.reason is not None else None,
                detail=lo.detail if lo is not None else None,
                flops=g.flops,
                time_ms=median(k.samples_ms) if k is not None and k.samples_ms else None,
                dense_time_ms=median(k.dense_samples_ms) if k is not None and k.dense_samples_ms else None,
                precision=k.precision if k is not None else None,
                rel_err=k.rel_err if k is not None else None,
                conversions_per_call=lo.conversions_per_call if lo is not None else 0,
                conversion_ms=lo.conversion_ms if lo is not None else None,
                metadata_bytes=lo.metadata_bytes if lo is not None else None,
                value_bytes=lo.value_bytes if lo is not None else None,
                meant_sparse=declared_sparse(g.intended),
                fell_back=is_fallback(g.intended, lo.path.value if lo is not None else None,
                                      lo.reason.value if lo is not None and lo.reason is not None else None),
            )
        )
    return rows


def _sparse_kernel_speedup(meant: list[LayerRow]) -> tuple[float | None, Note | None]:
    """Dense/sparse kernel time over the meant-sparse layers that ran sparse, from their own paired dense samples
    (a per-call conversion is never in the kernel samples), and how; None without such pairs."""
    pairs = [r for r in meant if r.path == KernelPath.SPARSE.value and r.time_ms and r.dense_time_ms]
    if pairs and sum(r.time_ms or 0.0 for r in pairs) > 0:
        speedup = sum(r.dense_time_ms or 0.0 for r in pairs) / sum(r.time_ms or 0.0 for r in pairs)
        converting = sum(1 for r in pairs if r.conversion_per_call_ms > 0)
        return speedup, note("signoff.speedup_own_pairs", layers=len(pairs), converting=converting)
    return None, None


def baseline_dense_pairs(run: RunRecord, baseline: RunRecord) -> list[tuple[str, float, float]]:
    """(layer, dense p50, sparse p50) for each layer ``run`` runs sparse that ``baseline`` ran dense, both timed.

    Layers are paired by op and shape (``locate.comparable.match_layers``, never by name), so an
    annotated run pairs with its stripped copy; records whose layers are kernel names (a CUDA-graph
    replay) have no shapes to pair and give no pairs here (:func:`op_paired_speedup` pairs them by op).
    """
    from sparsedebug.locate.comparable import match_layers

    if kernel_named(run) or kernel_named(baseline):
        return []
    baseline, run, _match = match_layers(baseline, run)
    base_lower = {lo.name: lo for lo in baseline.lower.layers}
    base_ms = {k.name: median(k.samples_ms) for k in baseline.kernel.layers if k.samples_ms}
    cand_ms = {k.name: median(k.samples_ms) for k in run.kernel.layers if k.samples_ms}
    return [
        (lo.name, base_ms[lo.name], cand_ms[lo.name])
        for lo in run.lower.layers
        if lo.path == KernelPath.SPARSE and lo.name in cand_ms and lo.name in base_ms
        and lo.name in base_lower and base_lower[lo.name].path == KernelPath.DENSE and cand_ms[lo.name] > 0
    ]


def _gemm_work(run: RunRecord) -> tuple[int, int, float, float]:
    """Per iteration of ``run``: GEMM calls (dense, sparse) and GEMM kernel ms (dense, sparse), from its linear layers.

    A kernel-named layer holds every GEMM of other shapes that ran that kernel, so its time per
    iteration is the median of its per-iteration sums, not its median call times the calls.
    """
    from sparsedebug.locate.common import calls_per_iteration, iteration_count

    linear = {g.name for g in run.graph.layers if g.op is OpKind.LINEAR}
    lower = {lo.name: lo for lo in run.lower.layers}
    iterations = iteration_count(run)
    calls = [0, 0]
    ms = [0.0, 0.0]
    for k in run.kernel.layers:
        if k.name not in linear or not k.samples_ms or k.name not in lower:
            continue
        side = 1 if lower[k.name].path == KernelPath.SPARSE else 0
        per = calls_per_iteration(k.samples_ms, iterations)
        calls[side] += per
        if len(k.samples_ms) == per * iterations:
            ms[side] += median([sum(k.samples_ms[i * per : (i + 1) * per]) for i in range(iterations)])
        else:
            ms[side] += sum(k.samples_ms) / max(iterations, 1)
    return calls[0], calls[1], ms[0], ms[1]


def op_paired_speedup(run: RunRecord, baseline: RunRecord) -> tuple[float | None, Note]:
    """The sparse kernel speedup of a run whose layers are kernel names (a CUDA-graph replay), paired by op.

    Without shapes, the GEMM work of the two runs pairs as a whole: when both run the same number of
    GEMM calls per iteration, the dense time of the work that moved onto the sparse kernels is the
    baseline's GEMM time per iteration less the candidate's remaining dense GEMMs, and the speedup is
    that over the candidate's sparse GEMM time. Returns ``(None, why)`` when the work does not pair.
    """
    b_dense_calls, b_sparse_calls, b_dense_ms, _ = _gemm_work(baseline)
    c_dense_calls, c_sparse_calls, c_dense_ms, c_sparse_ms = _gemm_work(run)
    if not c_sparse_calls or c_sparse_ms <= 0:
        return None, note("signoff.speedup_no_sparse_gemm")
    if b_sparse_calls:
        return None, note("signoff.speedup_baseline_sparse", base_sparse_calls=b_sparse_calls)
    if b_dense_calls != c_dense_calls + c_sparse_calls:
        return None, note("signoff.speedup_gemm_unpaired", base_calls=b_dense_calls, calls=c_dense_calls + c_sparse_calls, sparse_calls=c_sparse_calls)
    moved = b_dense_ms - c_dense_ms
    figures = {"base_calls": b_dense_calls, "base_ms": b_dense_ms, "dense_calls": c_dense_calls, "dense_ms": c_dense_ms}
    if moved <= 0:
        return None, note("signoff.speedup_no_dense_left", **figures)
    return moved / c_sparse_ms, note("signoff.speedup_by_op", **figures, sparse_calls=c_sparse_calls, sparse_ms=c_sparse_ms)


def fallback_summary(run: RunRecord, baseline: RunRecord | None = None) -> FallbackSummary:
    """Fallback counts, dense shares of FLOPs and time, and the Amdahl cost of the fallbacks.

    ``sparse_kernel_speedup`` is the measured dense/sparse kernel time ratio over
    the layers that did run sparse (from their paired dense samples; else the same
    layers of ``baseline`` run dense, paired by op and shape; else, for kernel-named
    CUDA-graph records, the GEMM work paired by op: :func:`op_paired_speedup`); never
    the nominal M/N: without a measurement it is None and the source says why.
    ``speedup_left_on_table`` is the
    whole-model kernel-time speedup the fallbacks forfeit: kernel time now divided
    by kernel time if every fallback layer ran at that sparse speedup (Amdahl).
    ``amdahl_ceiling`` is the kernel-time speedup over all-dense if every layer
    meant to be sparse got the nominal M/N and everything else stayed as is (a bound, labelled so).
    """
    rows = layer_rows(run)
    meant = [r for r in rows if r.meant_sparse]
    fell = [r for r in meant if r.fell_back]
    reasons: dict[str, int] = {}
    for r in fell:
        key = r.reason or "unknown"
        reasons[key] = reasons.get(key, 0) + 1
    total_flops = sum(r.flops for r in rows)
    dense_rows = [r for r in rows if r.path == KernelPath.DENSE.value]
    dense_flop_share = sum(r.flops for r in dense_rows) / total_flops if total_flops > 0 else None
    fb_all_share = sum(r.flops for r in fell) / total_flops if total_flops > 0 and rows else None
    shares = kernel_time_shares(run)
    dense_time_share = shares.dense_share if shares is not None else None
    fb_time_share = shares.fallback_share if shares is not None else None

    speedup, source = _sparse_kernel_speedup(meant)
    if speedup is None and baseline is not None and (pairs := baseline_dense_pairs(run, baseline)):
        speedup = sum(p[1] for p in pairs) / sum(p[2] for p in pairs)
        source = note("signoff.speedup_baseline_pairs", layers=len(pairs))
    elif speedup is None and baseline is not None and (kernel_named(run) or kernel_named(baseline)):
        speedup, source = op_paired_speedup(run, baseline)
    if speedup is None and meant and not any(r.path == KernelPath.SPARSE.value for r in meant):
        source = note("signoff.speedup_none_sparse")
    elif speedup is None and meant and source is None:
        source = note("signoff.speedup_no_pairs", baseline=baseline is not None)

    left: float | None = None
    if fb_time_share is not None and speedup is not None and speedup > 0:
        left = 1.0 / (1.0 - fb_time_share + fb_time_share / speedup)

    ceiling: float | None = None
    if meant:  # every layer needs a dense time (its own, or its paired dense samples): the loop stops at the first without
        dense_total = 0.0
        ideal_total = 0.0
        ok = True
        for r in rows:
            dense_t = r.dense_time_ms if r.dense_time_ms is not None else (r.time_ms if r.path == "dense" else None)
            if dense_t is None:
                ok = False
                break
            dense_total += dense_t
            factor = nominal_factor(r.intended) if r.meant_sparse else None
            ideal_total += dense_t / factor if factor else dense_t
        if ok and ideal_total > 0:
            ceiling = dense_total / ideal_total

    return FallbackSummary(
        meant_sparse=len(meant),
        fell_back=len(fell),
        rate=len(fell) / len(meant) if meant else None,
        reasons=reasons,
        fallback_layers=[r.name for r in fell],
        dense_flop_share=dense_flop_share,
        dense_time_share=dense_time_share,
        fallback_time_share=fb_time_share,
        fallback_flop_share=fallback_flop_share(run),
        fallback_share_of_all_flops=fb_all_share,
        sparse_kernel_speedup=speedup,
        sparse_kernel_speedup_source=source,
        amdahl_ceiling=ceiling,
        speedup_left_on_table=left,
    )


def has_fallback_evidence(run: RunRecord) -> bool:
    """The record says, per layer, which path each layer took (and why when dense)."""
    if not run.lower.layers:
        return False
    names = {g.name for g in run.graph.layers}
    decided = {lo.name for lo in run.lower.layers}
    dense_without_reason = [lo for lo in run.lower.layers if lo.path == KernelPath.DENSE and lo.reason is None]
    return names <= decided and not dense_without_reason


def has_quality_evidence(run: RunRecord) -> bool:
    """The record carries a quality measurement against the dense model."""
    return run.outcome.quality is not None


def _speedup_block(base: RunRecord, run: RunRecord) -> int | None:
    """The rounds per block the speedup of ``run`` over ``base`` is paired by (one interleaved session), else None."""
    b, c = base.outcome.latency_samples_ms, run.outcome.latency_samples_ms
    return session_block(base, run) if b and c and len(b) == len(c) else None


def p50_speedup(base: RunRecord, run: RunRecord) -> float | None:
    """The whole-forward speedup of ``run`` over ``base``: for two runs replayed in one interleaved session, the paired
    estimate over their rounds (``core.paired.paired_ratio``, free of the drift both sides saw); otherwise baseline p50
    over run p50 (:func:`speedup_basis` says which). None without samples on either side. The one definition the
    gate, the decision and the memo print."""
    b, c = base.outcome.latency_samples_ms, run.outcome.latency_samples_ms
    if not b or not c:
        return None
    block = _speedup_block(base, run)
    if block is not None:
        return 1.0 / paired_ratio(b, c, block)
    return median(b) / median(c)


def speedup_basis(base: RunRecord, run: RunRecord) -> Basis:
    """What :func:`p50_speedup` of ``run`` over ``base`` is taken over: ``paired_rounds`` (the paired estimate over the
    rounds of one interleaved session) or ``per_forward`` (baseline p50 over run p50)."""
    return "paired_rounds" if _speedup_block(base, run) is not None else "per_forward"


SPEEDUP_FIELD: dict[Basis, str] = {
    "paired_rounds": "1 / core.paired.paired_ratio(outcome.latency_samples_ms)",
    "per_forward": "outcome.latency_samples_ms p50s: baseline/run",
}
"""Where a speedup figure comes from, by its basis (the provenance the memo's figures carry)."""


def reality_figures(base: RunRecord, run: RunRecord) -> RealityFigures | None:
    """Nominal, ceiling and real speedup and the fallback and dense time shares; None when no N:M pattern is declared."""
    factors = {f for f in (nominal_factor(g.intended) for g in run.graph.layers) if f is not None}
    if not factors:
        return None
    b, c = base.outcome.latency_samples_ms, run.outcome.latency_samples_ms
    real = p50_speedup(base, run) if b and c else run.outcome.effective_speedup
    fb = fallback_summary(run)
    return RealityFigures(
        nominal=max(factors), ceiling=fb.amdahl_ceiling, real=real,
        fallback_time_share=fb.fallback_time_share, dense_time_share=fb.dense_time_share,
    )
