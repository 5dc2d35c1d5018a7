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

**Sparse linear, GPU time.** The dense GPU time times the sparse/dense kernel-time
ratio measured GPU-only (trace layers and ncu, same shape, tokens and dtype),
interpolated like the dense times and held constant outside the measured points
(``extrapolated`` there: at token counts and dtypes the ratio was not measured at).

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
from sparsedebug.records.target import (
    Basis,
    ForwardTime,
    Launch,
    LayerProjection,
    PathTime,
    Provenance,
    worst_basis,
)
from sparsedebug.sources.target.data import Calibration, GemmRow, Kind, family_of, load_calibration
from sparsedebug.sources.target.surface import Point, Roofline, Surface

METHOD = (
    "dense GPU time: roofline-shaped interpolation (log tokens, log FLOPs) of measured per-call p50 and trace kernel "
    "times; sparse GPU time: dense x measured sparse/dense kernel ratio; host: measured per-call host floor; per call "
    "max(host, GPU) eager, GPU under a CUDA graph; non-linear ops estimated as bytes (attention FLOPs) over trace rates"
)
HOST_BOUND_SHARE = 0.8
"""A sparse row is host-bound when the projected kernel takes less than this share of its per-call time."""

Key = tuple[int, int, int, str]
"""(out, in, tokens, torch dtype) of a measured point."""


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
    """The cost model of one backend profile on one GPU; ``exclude`` drops measured points (leave-one-out)."""

    def __init__(self, cal: Calibration, profile: str, exclude: frozenset[Key] = frozenset()) -> None:
        self.cal = cal
        self.profile = profile
        self.device = cal.source.device
        self.backend = cal.source.profiles[profile]
        rows = [r for r in cal.gemm if (r.out, r.k, r.tokens, r.dtype) not in exclude]
        kernels = [p for p in cal.kernels if (p.out, p.k, p.tokens, p.dtype) not in exclude]
        self._dense: dict[str, Surface] = {}
        self._dense_host: dict[str, tuple[float, str]] = {}
        for dtype in sorted({r.dtype for r in rows if r.dense_ms is not None}):
            pts = [Point(r.out, r.k, r.tokens, r.dense_ms, r.label("dense")) for r in rows if r.dtype == dtype and r.dense_ms is not None]
            pts += [Point(p.out, p.k, p.tokens, p.ms, p.label) for p in kernels if p.dtype == dtype and p.path == "dense"]
            self._dense[dtype] = Surface(pts, itemsize=dtype_info(dtype).itemsize)
            fastest = min((r for r in rows if r.dtype == dtype and r.dense_ms is not None), key=lambda r: r.dense_ms or 0.0)
            assert fastest.dense_ms is not None
            self._dense_host[dtype] = (fastest.dense_ms, fastest.label("dense"))
        sparse_rows = [r for r in rows if r.backend == self.backend]
        self.sparse_errors = sorted({r.error for r in sparse_rows if r.error})
        timed = [r for r in sparse_rows if r.sparse_ms is not None and r.dense_ms is not None]
        gpu_only: list[tuple[int, int, int, str, str, float, str]] = [(p.out, p.k, p.tokens, p.dtype, p.path, p.ms, p.label) for p in kernels]
        self._ratio, self._ratio_dtypes = self._ratios(gpu_only)
        self._host = self._host_table(timed)
        # rows well above their shape's host floor are GPU-bound: their per-call ratio is the kernel ratio
        bound = [r for r in timed if self._gpu_bound(r)]
        for r in bound:
            assert r.dense_ms is not None and r.sparse_ms is not None
            gpu_only.append((r.out, r.k, r.tokens, r.dtype, "dense", r.dense_ms, r.label("dense") + " (GPU-bound)"))
            gpu_only.append((r.out, r.k, r.tokens, r.dtype, "sparse", r.sparse_ms, r.label("sparse") + " (GPU-bound)"))
        if bound:
            self._ratio, self._ratio_dtypes = self._ratios(gpu_only)
            self._host = self._host_table(timed)

    # ------------------------------------------------------------------ fitting

    def _ratios(self, kernels: list[tuple[int, int, int, str, str, float, str]]) -> tuple[Surface | None, set[str]]:
        """Sparse/dense GPU-time ratio wherever both were measured GPU-only at the same point."""
        dense: dict[Key, list[tuple[float, str]]] = {}
        sparse: dict[Key, list[tuple[float, str]]] = {}
        for out, k, tokens, dtype, path, ms, label in kernels:
            (dense if path == "dense" else sparse).setdefault((out, k, tokens, dtype), []).append((ms, label))
        points = []
        for key in sorted(set(dense) & set(sparse)):
            d = median([v for v, _ in dense[key]])
            s = median([v for v, _ in sparse[key]])
            label = f"sparse/dense GPU ratio {s / d:.3f} at {key[0]}x{key[1]} T={key[2]} {key[3]} ({sparse[key][0][1]}; {dense[key][0][1]})"
            points.append(Point(key[0], key[1], key[2], s / d, label))
        if not points:
            return None, set()
        return Surface(points, roofline=False), {key[3] for key in set(dense) & set(sparse)}

    def _gpu_bound(self, row: GemmRow) -> bool:
        """A sparse row whose per-call time is well above its shape's host floor (the kernel sets it)."""
        host = self._sparse_host(row.out, row.k, row.dtype)
        return host is not None and host[1].basis == "measured" and (row.sparse_ms or 0.0) * HOST_BOUND_SHARE > host[0]

    def _host_table(self, rows: list[GemmRow]) -> dict[str, Surface]:
        host: dict[str, list[Point]] = {}
        for r in rows:
            assert r.sparse_ms is not None and r.dense_ms is not None
            kernel = self._sparse_gpu(r.out, r.k, r.tokens, r.dtype)
            if kernel is None or kernel[0] >= HOST_BOUND_SHARE * r.sparse_ms:
                continue
            host.setdefault(r.dtype, []).append(Point(r.out, r.k, 1, r.sparse_ms, r.label("sparse")))
        tables: dict[str, Surface] = {}
        for dtype, pts in host.items():
            shapes: dict[tuple[int, int], list[Point]] = {}
            for p in pts:
                shapes.setdefault((p.out, p.k), []).append(p)
            merged = [
                Point(o, k, 1, median([p.value for p in ps]), f"median of {len(ps)} host-bound rows: " + "; ".join(p.label for p in ps))
                for (o, k), ps in sorted(shapes.items())
            ]
            tables[dtype] = Surface(merged, roofline=False)
        return tables

    # ------------------------------------------------------------------ pieces

    def _dense_gpu(self, out: int, k: int, tokens: int, dtype: str) -> tuple[float, Provenance] | None:
        surface = self._dense.get(dtype)
        if surface is None:
            return self._fp32_dense(out, k, tokens) if dtype == "float32" else None
        est = surface.at(out, k, tokens)
        assert surface.roofline is not None
        note = f"{surface.roofline.describe()} over {len(surface.points)} points, residual interpolated"
        return est.value, Provenance(basis=_basis(est.exact, est.extrapolated), sources=list(est.labels), note=note)

    def _fp32_dense(self, out: int, k: int, tokens: int) -> tuple[float, Provenance] | None:
        """An fp32 GEMM, never measured: the 16-bit roofline with 4-byte elements and the datasheet FP32 throughput."""
        from sparsedebug.core.gpus import find_gpu_peak

        half = self._dense.get("float16") or self._dense.get("bfloat16")
        peak = find_gpu_peak(self.device)
        if half is None or half.roofline is None or peak is None:
            return None
        roof = half.roofline
        scaled = Roofline(roof.floor_ms, roof.bytes_per_ms, roof.flops_per_ms * peak.fp32_tflops / peak.tensor_16bit_tflops, 4)
        note = (
            f"float32 was never measured here: the 16-bit {roof.describe()} with 4-byte elements and its throughput "
            f"scaled by the datasheet FP32 / 16-bit tensor ratio {peak.fp32_tflops:g}/{peak.tensor_16bit_tflops:g} ({peak.reference})"
        )
        return scaled.at(out, k, tokens), Provenance(basis="extrapolated", sources=[f"{len(half.points)} 16-bit dense points"], note=note)

    def _sparse_gpu(self, out: int, k: int, tokens: int, dtype: str) -> tuple[float, Provenance] | None:
        dense = self._dense_gpu(out, k, tokens, dtype)
        if dense is None or self._ratio is None:
            return None
        est = self._ratio.at(out, k, tokens)
        other_dtype = dtype not in self._ratio_dtypes
        basis = worst_basis([dense[1].basis, _basis(est.exact and not other_dtype, est.extrapolated or other_dtype)])
        note = f"dense GPU time {dense[0]:.4f} ms x sparse/dense kernel ratio {est.value:.3f}"
        if other_dtype:
            note += f" (ratio measured for {', '.join(sorted(self._ratio_dtypes))} only)"
        return dense[0] * est.value, Provenance(basis=basis, sources=list(est.labels) + dense[1].sources, note=note)

    def _sparse_host(self, out: int, k: int, dtype: str) -> tuple[float, Provenance] | None:
        table = self._host.get(dtype)
        if table is None:
            return None
        est = table.at(out, k, 1)
        note = "per-call host floor of eager sparse F.linear (rows whose per-call time is not the kernel's)"
        return est.value, Provenance(basis=_basis(est.exact, est.extrapolated), sources=list(est.labels), note=note)

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

    def _path(self, gpu: tuple[float, Provenance], host: tuple[float, Provenance], launch: Launch) -> PathTime:
        host_ms = host[0] if launch == "eager" else 0.0
        host_prov = host[1] if launch == "eager" else Provenance(basis="measured", note="no host work per call inside a CUDA graph")
        per_call = max(host_ms, gpu[0]) if launch == "eager" else gpu[0]
        basis = host_prov.basis if launch == "eager" and host_ms > gpu[0] else gpu[1].basis
        return PathTime(gpu_ms=gpu[0], host_ms=host_ms, per_call_ms=per_call, gpu=gpu[1], host=host_prov, basis=basis)

    def linear(self, call: LinearCall, launch: Launch) -> LayerProjection:
        """Dense and sparse time of one linear layer on the target, with provenance."""
        dtype = dtype_info(call.dtype).torch_name
        common = dict(name=call.name, op="linear", shape=[call.out, call.k], tokens=call.tokens, dtype=dtype)
        dense_gpu = self._dense_gpu(call.out, call.k, call.tokens, dtype)
        if dense_gpu is None:
            measured = ", ".join(sorted(self._dense)) or "none"
            missing = f"no {dtype} rows measured on this GPU (measured: {measured})"
            return LayerProjection(**common, path="dense", basis="unavailable", note=missing)
        measured_host = self._dense_host.get(dtype)
        basis: Basis = "measured" if measured_host is not None else "extrapolated"
        host_ms, host_label = measured_host or min(self._dense_host.values())
        host = (host_ms, Provenance(basis=basis, sources=[host_label], note="fastest dense call measured bounds its host cost"))
        dense = self._path(dense_gpu, host, launch)
        sparse, note = self._sparse_path(call, dtype, launch)
        speedup = dense.per_call_ms / sparse.per_call_ms if sparse is not None else None
        bases = [dense.basis] + ([sparse.basis] if sparse is not None else [])
        path = "sparse" if call.path == "sparse" and sparse is not None else "dense"
        return LayerProjection(**common, path=path, dense=dense, sparse=sparse, speedup=speedup, basis=worst_basis(bases), note=note)

    def _sparse_path(self, call: LinearCall, dtype: str, launch: Launch) -> tuple[PathTime | None, str | None]:
        if self.sparse_errors and not self._host.get(dtype):
            return None, f"no sparse path: every {self.backend} row raises ({self.sparse_errors[0]})"
        gpu = self._sparse_gpu(call.out, call.k, call.tokens, dtype)
        host = self._sparse_host(call.out, call.k, dtype)
        if gpu is None or host is None:
            return None, f"no sparse {dtype} rows measured for {self.backend} on this GPU"
        if call.conversions_per_call:
            conv = self._conversion(call.out, call.k, dtype)
            if conv is not None:
                ms = host[0] + conv[0] * call.conversions_per_call
                prov = host[1].model_copy(update={"sources": host[1].sources + [conv[1]], "note": f"{host[1].note}; plus re-conversion every call"})
                host = (ms, prov)
                if launch == "cuda_graph":
                    gpu = (gpu[0] + conv[0] * call.conversions_per_call, gpu[1])
        return self._path(gpu, host, launch), None

    def op(self, call: OpCall, launch: Launch) -> LayerProjection:
        """A non-linear op on the target: bytes (attention FLOPs) over a trace-measured rate, marked ``estimate``."""
        family: Kind = family_of(call.op) or "pointwise"
        rate = self.cal.rates.get(family)
        dtype = canonical_dtype(call.dtype) or call.dtype
        common = dict(name=call.name, op=call.op, tokens=call.tokens, dtype=dtype_info(dtype).torch_name, path="dense")
        if rate is None:
            return LayerProjection(**common, basis="unavailable", note=f"no {family} rate measured on this GPU")
        amount = call.flops if rate.unit == "flops" else call.bytes
        gpu_ms = amount / rate.per_ms
        unit = "FLOPs" if rate.unit == "flops" else "bytes"
        gpu = (gpu_ms, Provenance(basis="estimate", sources=[rate.label], note=f"{amount:.4g} {unit} / effective {family} rate"))
        host_kind = call.op if call.op in self.cal.host else ("elementwise" if call.op != "activation" else "activation")
        cost = self.cal.host.get(host_kind)
        host_prov = Provenance(basis="estimate", sources=[cost.label] if cost else [], note=f"host time of one {host_kind} call")
        path = self._path(gpu, (cost.ms if cost else 0.0, host_prov), launch)
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
