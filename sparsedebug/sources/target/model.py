"""The target cost model: latency of a layer and a forward on the GPU a backend profile models.

Built from the measurements of that GPU (:mod:`sparsedebug.sources.target.data`),
never from this machine. Host and GPU time are kept apart per call and never added:

**Dense linear, GPU time.** The per-call p50 of the dense ``results.json`` gemm
rows (and the GPU-only kernel times of the traces and the Nsight Compute file at
the same points), interpolated by :class:`~sparsedebug.sources.target.surface.Surface`
(roofline-shaped, piecewise in log tokens and log FLOPs). A dense call is
GPU-bound in all but the smallest rows, where the row bounds the kernel from above.

**Dense linear, host time (eager).** The smallest dense per-call p50 of that dtype:
no dense call measured faster, so the host cost of one dense call is at most that.

**Sparse linear, GPU time.** A model of the 2:4 kernel itself
(:mod:`sparsedebug.sources.target.sparse`): at least one wave of
``tile_m x tile_n`` tiles walking the whole reduction dimension (the tile
minimum: few tokens or a short reduction lose most of the 2:4 gain), over a
memory floor at the dense roofline's bandwidth; its one rate fitted to every
GPU-only sparse time (trace layers, Nsight Compute, per-call rows the kernel
sets). Never dense time x a ratio.

**Intervals.** Every GPU, host and per-call figure carries a 90% interval from
the fit's residuals and its distance from measured points
(:mod:`sparsedebug.sources.target.interval`); a dense per-call row that sits on
the launch floor bounds its kernel from above only, so its interval reaches down
to the datasheet bandwidth. The sparse host floor is a per-call cost, not the
problem's: off the measured shapes its interval spans the floors of all of them. The speedup's interval is dense low / sparse high to
dense high / sparse low, and the verdict is ``sparse wins`` or ``sparse loses``
only where it excludes 1.0, else ``uncertain here`` with what to measure.

**Sparse linear, host time (eager).** Below a few thousand tokens the sparse
per-call p50 is a fixed host cost (about 0.5 to 1 ms per ``F.linear`` on the H200),
not the kernel. A row is host-bound when the projected sparse kernel takes less
than 80% of its per-call time; the median of a shape's host-bound rows is its
host cost, interpolated across shapes along log weight size. Weights re-converted
on every call (``conversion: per_call``) add the measured conversion time here.

**Non-linear ops (estimate).** Bytes moved over the effective bandwidth of that op
family in the dense eager trace (norms, pointwise ops), FLOPs over the effective
attention throughput; host time per call from the same trace's CPU durations.

**Per call.** ``max(host, GPU)`` eager (the host prepares a call while the GPU runs
the previous one: what the gemm rows measure), GPU time under a CUDA graph.

**Whole forward.** Eager: a host clock and a GPU clock walk the layers in order;
each layer's kernel starts when the host has issued it (its host time plus the
measured host time between layers, module-call overhead) and the GPU is free, and
the GPU idles between dependent kernels for the measured launch gap. CUDA graph: one
graph launch on the host, then every layer's GPU time plus the graph's measured gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from sparsedebug.core.dtypes import canonical_dtype, dtype_info
from sparsedebug.core.stats import median
from sparsedebug.records.notes import Note, note
from sparsedebug.records.target import (
    Basis,
    ForwardTime,
    Launch,
    LayerProjection,
    PathTime,
    Provenance,
    Verdict,
    worst_basis,
)
from sparsedebug.sources.target.data import Calibration, GemmRow, Kind, family_of, load_calibration, sparse_tile
from sparsedebug.sources.target.interval import (
    FAR,
    Distance,
    Figure,
    Key,
    Spread,
    distance,
    hold_out_groups,
    per_decade_from,
    repeat_sigma,
)
from sparsedebug.sources.target.sparse import SparseKernelModel, SparsePoint, merge_points
from sparsedebug.sources.target.surface import Point, Roofline, Surface

# Which projection method the records name (render.words.targets.METHODS describes it): dense GPU time from a
# roofline-shaped interpolation of measured times, sparse GPU time from the 2:4 kernel model, host from the measured
# per-call floor, per call max(host, GPU) eager or GPU under a CUDA graph, 90% intervals, non-linear ops over trace rates.
METHOD = "roofline_dense+nm_kernel_model+host_floor"
# A sparse row is host-bound when the projected kernel takes less than this share of its per-call time.
HOST_BOUND_SHARE = 0.8



@dataclass(frozen=True)
class LinearCall:
    """One linear layer to project."""

    name: str
    out: int
    k: int
    tokens: int
    dtype: str
    path: str
    conversions_per_call: int = 0


@dataclass(frozen=True)
class OpCall:
    """One non-linear layer to project: its op, and the bytes and FLOPs of one call."""

    name: str
    op: str
    tokens: int
    dtype: str
    bytes: float
    flops: float
    fn: str | None = None


def _basis(exact: bool, extrapolated: bool) -> Basis:
    return "measured" if exact else ("extrapolated" if extrapolated else "interpolated")


class TargetModel:
    """The cost model of one backend profile on one GPU; ``exclude`` drops measured points (held-out validation)."""

    def __init__(self, cal: Calibration, profile: str, exclude: frozenset[Key] = frozenset()) -> None:
        self.cal = cal
        self.profile = profile
        self.device = cal.source.device
        self.backend = cal.source.profiles[profile]
        rows = [r for r in cal.gemm if (r.out, r.k, r.tokens, r.dtype) not in exclude]
        kernels = [p for p in cal.kernels if (p.out, p.k, p.tokens, p.dtype) not in exclude]
        self._dense_points: dict[str, list[Point]] = {}
        self._dense: dict[str, Surface] = {}
        self._dense_host: dict[str, tuple[float, str]] = {}
        repeats: dict[Key, list[float]] = {}
        for dtype in sorted({r.dtype for r in rows if r.dense_ms is not None}):
            pts = [Point(r.out, r.k, r.tokens, r.dense_ms, r.label("dense")) for r in rows if r.dtype == dtype and r.dense_ms is not None]
            pts += [Point(p.out, p.k, p.tokens, p.ms, p.label) for p in kernels if p.dtype == dtype and p.path == "dense"]
            for p in pts:
                repeats.setdefault((p.out, p.k, p.tokens, dtype), []).append(p.value)
            self._dense_points[dtype] = pts
            self._dense[dtype] = Surface(pts, itemsize=dtype_info(dtype).itemsize)
            fastest = min((r for r in rows if r.dtype == dtype and r.dense_ms is not None), key=lambda r: r.dense_ms or 0.0)
            assert fastest.dense_ms is not None
            self._dense_host[dtype] = (fastest.dense_ms, fastest.label("dense"))
        self._dense_sigma = repeat_sigma(repeats.values())
        self.per_decade = (0.0, 0.0)
        self.dense_spread = Spread(self._dense_sigma, 0.0, 0.0)
        self.sparse_spread = Spread(0.0, 0.0, 0.0)
        self._sparse_repeat_sigma = 0.0
        sparse_rows = [r for r in rows if r.backend == self.backend]
        self.sparse_errors = sorted({r.error for r in sparse_rows if r.error})
        timed = [r for r in sparse_rows if r.sparse_ms is not None and r.dense_ms is not None]
        self.tile = sparse_tile(cal)
        self._sparse_raw = [SparsePoint(p.out, p.k, p.tokens, p.dtype, p.ms, p.label) for p in kernels if p.path == "sparse"]
        self.sparse_model = self._fit_sparse(self._sparse_raw)
        self._host = self._host_table(timed)
        # rows well above their shape's host floor are GPU-bound: the kernel sets their per-call time
        bound = [r for r in timed if self._gpu_bound(r)]
        if bound:
            self._sparse_raw += [SparsePoint(r.out, r.k, r.tokens, r.dtype, r.sparse_ms or 0.0, r.label("sparse") + " (GPU-bound)") for r in bound]
            self.sparse_model = self._fit_sparse(self._sparse_raw)
            self._host = self._host_table(timed)
        groups: dict[Key, list[float]] = {}
        for sp in self._sparse_raw:
            groups.setdefault((sp.out, sp.k, sp.tokens, sp.dtype), []).append(sp.ms)
        self._sparse_repeat_sigma = repeat_sigma(groups.values())
        fitted = self.sparse_model.sigma() if self.sparse_model is not None else None
        self._sparse_sigma = max(fitted or 0.0, self._sparse_repeat_sigma)
        self.per_decade = self._per_decade()
        self.dense_spread = Spread(self._dense_sigma, *self.per_decade)
        self.sparse_spread = Spread(self._sparse_sigma, *self.per_decade)

    def dense_surfaces(self) -> dict[str, Surface]:
        """The dense GPU-time surface per dtype (its points are the merged measurements)."""
        return dict(self._dense)

    # ------------------------------------------------------------------ fitting

    def _fit_sparse(self, raw: list[SparsePoint]) -> SparseKernelModel | None:
        """The 2:4 kernel model over ``raw`` (None without a traced tile, points or a 16-bit dense roofline)."""
        roof = next((self._dense[d].roofline for d in ("float16", "bfloat16") if d in self._dense), None)
        if self.tile is None or not raw or roof is None:
            return None
        return SparseKernelModel(merge_points(raw), self.tile, roof.bytes_per_ms, roof.itemsize)

    def _per_decade(self) -> tuple[float, float]:
        """Log error per decade of token and shape distance, from holding out whole shapes and token decades of this
        model's own data."""
        errors: list[tuple[float, Distance, float]] = []
        for dtype, pts in self._dense_points.items():
            for _, _, group in hold_out_groups(sorted({(p.out, p.k, p.tokens, dtype) for p in pts})):
                kept = [p for p in pts if (p.out, p.k, p.tokens, dtype) not in group]
                if not kept:
                    continue
                surface = Surface(kept, itemsize=dtype_info(dtype).itemsize)
                coords = [(p.out, p.k, p.tokens) for p in surface.points]
                for p in Surface([p for p in pts if (p.out, p.k, p.tokens, dtype) in group]).points:
                    d = distance((p.out, p.k, p.tokens), coords)
                    errors.append((math.log(surface.at(p.out, p.k, p.tokens).value / p.value), d, self._dense_sigma))
        if self.sparse_model is not None:
            points = self.sparse_model.points
            for _, _, group in hold_out_groups(sorted({(sp.out, sp.k, sp.tokens, sp.dtype) for sp in points})):
                kept_raw = [sp for sp in self._sparse_raw if (sp.out, sp.k, sp.tokens, sp.dtype) not in group]
                fit = self._fit_sparse(kept_raw)
                if fit is None:
                    continue
                coords = [(sp.out, sp.k, sp.tokens) for sp in fit.points]
                for sp in points:
                    if (sp.out, sp.k, sp.tokens, sp.dtype) in group:
                        d = distance((sp.out, sp.k, sp.tokens), coords)
                        errors.append((math.log(fit.at(sp.out, sp.k, sp.tokens).ms / sp.ms), d, self._sparse_sigma))
        return per_decade_from(errors)

    def _gpu_bound(self, row: GemmRow) -> bool:
        """A sparse row whose per-call time is well above its shape's host floor (the kernel sets it)."""
        host = self._sparse_host(row.out, row.k, row.dtype)
        return host is not None and host.prov.basis == "measured" and (row.sparse_ms or 0.0) * HOST_BOUND_SHARE > host.ms

    def _host_table(self, rows: list[GemmRow]) -> dict[str, tuple[Surface, float]]:
        """Per dtype: the host floor per shape (median of its host-bound rows) and the pooled log spread around it."""
        host: dict[str, list[Point]] = {}
        for r in rows:
            assert r.sparse_ms is not None and r.dense_ms is not None
            kernel = self.sparse_gpu(r.out, r.k, r.tokens, r.dtype)
            if kernel is None or kernel.ms >= HOST_BOUND_SHARE * r.sparse_ms:
                continue
            host.setdefault(r.dtype, []).append(Point(r.out, r.k, 1, r.sparse_ms, r.label("sparse")))
        tables: dict[str, tuple[Surface, float]] = {}
        for dtype, pts in host.items():
            shapes: dict[tuple[int, int], list[Point]] = {}
            for p in pts:
                shapes.setdefault((p.out, p.k), []).append(p)
            merged = [
                Point(o, k, 1, median([p.value for p in ps]), f"median of {len(ps)} host-bound rows: " + "; ".join(p.label for p in ps))
                for (o, k), ps in sorted(shapes.items())
            ]
            tables[dtype] = (Surface(merged, roofline=False), repeat_sigma([[p.value for p in ps] for ps in shapes.values()]))
        return tables

    # ------------------------------------------------------------------ pieces

    def dense_gpu(self, out: int, k: int, tokens: int, dtype: str) -> Figure | None:
        """GPU time of one dense call (None for a dtype never measured), with its interval and provenance."""
        surface = self._dense.get(dtype)
        if surface is None:
            return self._fp32_dense(out, k, tokens) if dtype == "float32" else None
        est = surface.at(out, k, tokens)
        roof = surface.roofline
        assert roof is not None
        d = distance((out, k, tokens), [(p.out, p.k, p.tokens) for p in surface.points])
        low, high = self.dense_spread.bounds(est.value, d)
        notes = [note("targets.dense_roofline", **roof.facts(), points=len(surface.points))]
        moved = roof.itemsize * (out * k + k * tokens + out * tokens)
        if roof.floor_ms >= max(moved / roof.bytes_per_ms, 2.0 * out * k * tokens / roof.flops_per_ms):
            from sparsedebug.core.gpus import find_gpu_peak

            peak = find_gpu_peak(self.device)
            if peak is not None:
                bound = max(moved / (peak.bandwidth_tbps * 1e9), 2.0 * out * k * tokens / (peak.tensor_16bit_tflops * 1e9))
                low = min(low, bound)
                notes.append(note("targets.launch_floor_bound", bound_us=bound * 1e3, reference=peak.reference))
        prov = Provenance(basis=_basis(est.exact, est.extrapolated), sources=list(est.labels), notes=notes)
        return Figure(est.value, low, high, d, prov)

    def _fp32_dense(self, out: int, k: int, tokens: int) -> Figure | None:
        """An fp32 GEMM, never measured: the 16-bit roofline with 4-byte elements and the datasheet FP32 throughput."""
        from sparsedebug.core.gpus import find_gpu_peak

        half = self._dense.get("float16") or self._dense.get("bfloat16")
        peak = find_gpu_peak(self.device)
        if half is None or half.roofline is None or peak is None:
            return None
        roof = half.roofline
        scaled = Roofline(roof.floor_ms, roof.bytes_per_ms, roof.flops_per_ms * peak.fp32_tflops / peak.tensor_16bit_tflops, 4)
        fp32 = note(
            "targets.fp32_scaled", **roof.facts(), fp32_tflops=peak.fp32_tflops, tensor_tflops=peak.tensor_16bit_tflops,
            reference=peak.reference,
        )
        prov = Provenance(basis="extrapolated", sources=[f"{len(half.points)} 16-bit dense points"], notes=[fp32])
        return Figure(scaled.at(out, k, tokens), 0.0, math.inf, FAR, prov)

    def sparse_gpu(self, out: int, k: int, tokens: int, dtype: str) -> Figure | None:
        """GPU time of one 2:4 call from the sparse kernel model (None without one), with its interval and provenance."""
        model = self.sparse_model
        if model is None or dtype not in self._dense:
            return None
        est = model.at(out, k, tokens)
        measured_dtypes = sorted({p.dtype for p in model.points})
        same = [p for p in model.points if p.dtype == dtype] or model.points
        d = distance((out, k, tokens), [(p.out, p.k, p.tokens) for p in same])
        exact = any((p.out, p.k, p.tokens, p.dtype) == (out, k, tokens, dtype) for p in model.points)
        tokens_in = min(p.tokens for p in model.points) <= tokens <= max(p.tokens for p in model.points)
        sizes = [p.out * p.k for p in model.points]
        inside = tokens_in and min(sizes) <= out * k <= max(sizes) and dtype in measured_dtypes
        value, notes = est.ms, [est.note]
        if exact:
            hit = next(p for p in model.points if (p.out, p.k, p.tokens, p.dtype) == (out, k, tokens, dtype))
            value, notes = hit.ms, [note("targets.sparse_measured", measured_us=hit.ms * 1e3, model_us=est.ms * 1e3), est.note]
            low, high = Spread(self._sparse_repeat_sigma, 0.0, 0.0).bounds(value, d)
        else:
            low, high = self.sparse_spread.bounds(value, d)
        if dtype not in measured_dtypes:
            notes.append(note("targets.sparse_dtypes_measured", dtypes=measured_dtypes))
        sources = [p.label for p in model.points if (p.out, p.k) == (out, k)] or [p.label for p in model.points]
        prov = Provenance(basis=_basis(exact, not inside), sources=[model.tile.label, *sources], notes=notes)
        return Figure(value, low, high, d, prov)

    def _sparse_host(self, out: int, k: int, dtype: str) -> Figure | None:
        entry = self._host.get(dtype)
        if entry is None:
            return None
        table, sigma = entry
        est = table.at(out, k, 1)
        d = distance((out, k, 1), [(p.out, p.k, 1) for p in table.points])
        spread = Spread(sigma, 0.0, 0.0)
        if d.total == 0.0:
            low, high = spread.bounds(est.value, d)
        else:
            # a per-call cost, not the problem's: bounded by the floors measured on every shape, not grown with distance
            low = spread.bounds(min(p.value for p in table.points), d)[0]
            high = spread.bounds(max(p.value for p in table.points), d)[1]
        floor = note("targets.sparse_host_floor")
        prov = Provenance(basis=_basis(est.exact, est.extrapolated), sources=list(est.labels), notes=[floor])
        return Figure(est.value, low, high, d, prov)

    def _conversion(self, out: int, k: int, dtype: str) -> tuple[float, str] | None:
        """Per-call weight conversion time: the median over the measured rows of the nearest shape (in log weight
        size; single rows include first-call outliers of ~50 ms), scaled by weight size (conversion streams the weight)."""
        rows = [r for r in self.cal.gemm if r.backend == self.backend and r.dtype == dtype and r.convert_ms is not None]
        if not rows:
            return None
        size = max(out * k, 1)
        shape = min({(r.out, r.k) for r in rows}, key=lambda s: abs(math.log(s[0] * s[1]) - math.log(size)))
        values = [float(r.convert_ms) for r in rows if (r.out, r.k) == shape and r.convert_ms is not None]
        mid = median(values)
        scale = size / (shape[0] * shape[1])
        note = f"results.json gemm convert_ms median {mid:.3f} over {len(values)} rows of {shape[0]}x{shape[1]}"
        return mid * scale, note + (f", scaled by weight size x{scale:.3g}" if scale != 1.0 else "")

    # ------------------------------------------------------------------ layers

    def _path(self, gpu: Figure, host: Figure, launch: Launch) -> PathTime:
        if launch == "eager":
            per_call = max(host.ms, gpu.ms)
            low, high = max(host.low, gpu.low), max(host.high, gpu.high)
            basis = host.prov.basis if host.ms > gpu.ms else gpu.prov.basis
            host_ms, host_prov = host.ms, host.prov
        else:
            per_call, low, high, basis = gpu.ms, gpu.low, gpu.high, gpu.prov.basis
            host_ms, host_prov = 0.0, Provenance(basis="measured", notes=[note("targets.graph_no_host")])
        finite = math.isfinite(high)
        return PathTime(
            gpu_ms=gpu.ms, host_ms=host_ms, per_call_ms=per_call, gpu=gpu.prov, host=host_prov, basis=basis,
            gpu_low_ms=gpu.low if math.isfinite(gpu.high) else None, gpu_high_ms=gpu.high if math.isfinite(gpu.high) else None,
            per_call_low_ms=low if finite else None, per_call_high_ms=high if finite else None,
            decades_from_measured=gpu.away.total if math.isfinite(gpu.away.total) else None,
        )

    def linear(self, call: LinearCall, launch: Launch) -> LayerProjection:
        """Dense and sparse time of one linear layer on the target, with intervals, a verdict and provenance."""
        dtype = dtype_info(call.dtype).torch_name
        common = dict(name=call.name, op="linear", shape=[call.out, call.k], tokens=call.tokens, dtype=dtype)
        dense_gpu = self.dense_gpu(call.out, call.k, call.tokens, dtype)
        if dense_gpu is None:
            missing = note("targets.no_dtype_rows", dtype=dtype, measured=sorted(self._dense))
            return LayerProjection(**common, path="dense", basis="unavailable", notes=[missing])
        measured_host = self._dense_host.get(dtype)
        basis: Basis = "measured" if measured_host is not None else "extrapolated"
        host_ms, host_label = measured_host or min(self._dense_host.values())
        host_prov = Provenance(basis=basis, sources=[host_label], notes=[note("targets.dense_host_bound")])
        host = Figure(host_ms, 0.0, host_ms, Distance(0.0, 0.0, None), host_prov)
        dense = self._path(dense_gpu, host, launch)
        sparse, why = self._sparse_path(call, dtype, launch)
        bases = [dense.basis] + ([sparse.basis] if sparse is not None else [])
        path = "sparse" if call.path == "sparse" and sparse is not None else "dense"
        if sparse is None:
            return LayerProjection(**common, path=path, dense=dense, basis=worst_basis(bases), notes=why)
        speedup = dense.per_call_ms / sparse.per_call_ms
        low = high = None
        if dense.per_call_low_ms is not None and dense.per_call_high_ms is not None and sparse.per_call_high_ms and sparse.per_call_low_ms:
            low, high = dense.per_call_low_ms / sparse.per_call_high_ms, dense.per_call_high_ms / sparse.per_call_low_ms
        verdict, measure = self._verdict(call, launch, low, high)
        return LayerProjection(
            **common, path=path, dense=dense, sparse=sparse, speedup=speedup, speedup_low=low, speedup_high=high,
            verdict=verdict, measure=measure, basis=worst_basis(bases), notes=why,
        )

    def _verdict(self, call: LinearCall, launch: Launch, low: float | None, high: float | None) -> tuple[Verdict, Note | None]:
        """``sparse wins`` / ``sparse loses`` only where the interval excludes 1.0; else what to measure."""
        if low is not None and low > 1.0:
            return "sparse wins", None
        if high is not None and high < 1.0:
            return "sparse loses", None
        near: dict[str, float | int | None] = {"nearest_out": None, "nearest_k": None, "nearest_tokens": None, "decades": None}
        if self.sparse_model is not None:
            d = distance((call.out, call.k, call.tokens), [(p.out, p.k, p.tokens) for p in self.sparse_model.points])
            if d.nearest is not None:
                o, k, t = d.nearest
                near = {"nearest_out": o, "nearest_k": k, "nearest_tokens": t, "decades": d.total}
        return "uncertain here", note("targets.measure_layer", out=call.out, k=call.k, tokens=call.tokens, launch=launch, **near)

    def _sparse_path(self, call: LinearCall, dtype: str, launch: Launch) -> tuple[PathTime | None, list[Note]]:
        if self.sparse_errors and not self._host.get(dtype):
            return None, [note("targets.sparse_raises", backend=self.backend, error=self.sparse_errors[0])]
        gpu = self.sparse_gpu(call.out, call.k, call.tokens, dtype)
        host = self._sparse_host(call.out, call.k, dtype)
        if gpu is None or host is None:
            return None, [note("targets.no_sparse_rows", dtype=dtype, backend=self.backend)]
        if call.conversions_per_call:
            conv = self._conversion(call.out, call.k, dtype)
            if conv is not None:
                extra = conv[0] * call.conversions_per_call
                notes = [*host.prov.notes, note("targets.reconversion_every_call")]
                prov = host.prov.model_copy(update={"sources": host.prov.sources + [conv[1]], "notes": notes})
                host = Figure(host.ms + extra, host.low + extra, host.high + extra, host.away, prov)
                if launch == "cuda_graph":
                    gpu = gpu.plus(extra)
        return self._path(gpu, host, launch), []

    def op(self, call: OpCall, launch: Launch) -> LayerProjection:
        """A non-linear op on the target: bytes (attention FLOPs) over a trace-measured rate, marked ``estimate``."""
        family: Kind = family_of(call.op) or "pointwise"
        rate = self.cal.rates.get(family)
        dtype = canonical_dtype(call.dtype) or call.dtype
        common = dict(name=call.name, op=call.op, tokens=call.tokens, dtype=dtype_info(dtype).torch_name, path="dense")
        if rate is None:
            return LayerProjection(**common, basis="unavailable", notes=[note("targets.no_rate", family=family)])
        amount = call.flops if rate.unit == "flops" else call.bytes
        gpu_ms = amount / rate.per_ms
        unit = "FLOPs" if rate.unit == "flops" else "bytes"
        gpu_prov = Provenance(basis="estimate", sources=[rate.label], notes=[note("targets.op_rate", amount=amount, unit=unit, family=family)])
        gpu = Figure(gpu_ms, 0.0, math.inf, FAR, gpu_prov)
        host_kind = call.op if call.op in self.cal.host else ("elementwise" if call.op != "activation" else "activation")
        cost = self.cal.host.get(host_kind)
        host_prov = Provenance(basis="estimate", sources=[cost.label] if cost else [], notes=[note("targets.op_host", kind=host_kind)])
        host_ms = cost.ms if cost else 0.0
        path = self._path(gpu, Figure(host_ms, 0.0, math.inf, FAR, host_prov), launch)
        return LayerProjection(**common, dense=path, basis="estimate")

    # ------------------------------------------------------------------ forward

    def forward(self, layers: list[LayerProjection], launch: Launch, *, dense: bool) -> ForwardTime | None:
        """Whole-forward time of ``layers`` (their dense paths with ``dense``, else the chosen ones); None if any is unavailable."""
        times = [layer.dense if dense else layer.chosen() for layer in layers]
        if any(t is None for t in times):
            return None
        gap = self.cal.gaps.get(launch)
        per_layer_gap = gap.ms if gap is not None else 0.0
        gpu_total = sum(t.gpu_ms for t in times if t is not None)
        host_total = sum(t.host_ms for t in times if t is not None)
        if launch == "eager":
            between = self.cal.host_between.ms if self.cal.host_between is not None else 0.0
            host_total += between * len(times)
            host_clock = gpu_free = 0.0
            for t in times:
                assert t is not None
                host_clock += t.host_ms + between
                gpu_free = max(host_clock, gpu_free) + t.gpu_ms + per_layer_gap
            total = gpu_free
        else:
            launch_ms = self.cal.graph_launch.ms if self.cal.graph_launch is not None else 0.0
            host_total += launch_ms
            total = launch_ms + gpu_total + per_layer_gap * len(times)
        return ForwardTime(total_ms=total, gpu_ms=gpu_total, host_ms=host_total, idle_ms=max(total - gpu_total, 0.0))


@lru_cache(maxsize=8)
def target_model(profile: str) -> TargetModel | None:
    """The cost model of backend ``profile``, or None for a profile without a target (``cpu-numpy``)."""
    from sparsedebug.sources.workload.lowering import get_profile

    source = get_profile(profile).target
    if source is None:
        return None
    return TargetModel(load_calibration(source), profile)
