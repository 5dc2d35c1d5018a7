"""Synthetic PyTorch profiler (Kineto) traces: N layers x M calls x K iterations of a training loop.

The output is the Chrome-trace JSON that ``torch.profiler`` writes (event fields,
categories and flows copied from the H200 traces in ``fixtures/h200``): ``X``
events of cat ``cpu_op``, ``user_annotation``, ``gpu_user_annotation``,
``cuda_runtime``, ``kernel``, ``gpu_memcpy``, ``gpu_memset``; ``ac2g`` flow pairs
(``s`` on the launching thread, ``f`` on the stream, id = correlation); ``M``
process/thread metadata; the top-level ``deviceProperties`` and friends.

One iteration (``ProfilerStep#N``, a ``user_annotation`` on the main thread):

* copy: ``aten::to`` -> ``cudaMemcpyAsync`` -> ``Memcpy HtoD (Pageable -> Device)``;
* forward, M times over the N layers: ``aten::linear`` (with ``Input Dims`` when
  ``record_shapes``) -> ``aten::addmm`` -> a GEMM kernel (``nvjet_*`` dense, or a
  cuSPARSELt ``xmma_sparse_gemm`` for ``sparse_layers``, with ``sparse_host_us``
  of extra host time per call), then a GELU kernel; optional ``record_function``
  annotations ``layers.{b}.mlp.{gate,up,down}_proj``; optional DtoD copies per
  call (``copies_per_call``); layer ``i`` runs on compute stream ``i % streams``;
* autograd sequence numbers as PyTorch records them: every forward op
  dispatched through autograd with grad mode on carries the thread's next
  ``Sequence number`` (``aten::linear`` and its ``aten::t`` share one, ops
  nested below autograd such as ``aten::copy_`` under ``aten::to`` have none),
  and an op that creates an autograd node (``aten::t``, ``aten::addmm``,
  ``aten::gelu``, ``aten::mse_loss``) moves it on; the optimizer step runs
  under ``no_grad`` (no numbers);
* backward on the autograd thread (its own ``tid``, ``pt_autograd_0``), in the
  reverse order of the forward calls: per layer call an
  ``autograd::engine::evaluate_function: GeluBackward0`` range (one GELU backward
  kernel), one for ``AddmmBackward0`` with two ``aten::mm`` GEMMs and one for
  ``TBackward0`` (no kernel), each with the ``Sequence number`` of the forward op
  that created its node and ``Fwd thread id``; after the last use of a layer's
  weight one ``AccumulateGrad`` (no sequence number); every ``bucket`` layers an
  ``nccl:all_reduce`` range launches ``ncclDevKernel_AllReduce_Sum_f16_RING_LL``
  on the communication stream;
* optimizer: ``aten::zero_`` (memset) then ``Optimizer.step#AdamW.step`` with
  ``multi_tensor_apply_kernel`` launches after the all-reduces finish;
* ``aten::item``: a DtoH copy and ``cudaStreamSynchronize`` (the host waits).

With ``attention`` set, every block (three layers) starts with an attention call,
annotated ``layers.{b}.self_attn.sdpa``: ``aten::scaled_dot_product_attention`` on
``[1, heads, tokens, hidden / heads]`` half-precision query, key and value, dispatched
to that backend as PyTorch 2.x records it: ``cudnn``, ``flash`` and ``efficient`` as
their backend op and one fused kernel; ``math`` as the decomposed sequence under
``aten::_scaled_dot_product_attention_math``: the inputs upcast to fp32 (``aten::to``,
copy kernels), the scale (``aten::mul``), ``aten::matmul``/``aten::bmm`` on an fp32 SIMT
GEMM, ``aten::_softmax``, the second ``bmm``, and the cast back. With
``attention_noncontig`` the query arrives with its last dimension strided (a producer's
transposed output), the layout that keeps the fused kernels off. Attention is forward
only (no autograd nodes).

Host times are kept as the profiler writes them: ``ts`` and ``dur`` of a range
come from its start and end rounded to the nanosecond (so ``ts + dur`` is its
end), and consecutive calls on a thread are a little apart (``HOST_GAP_US``, the
interpreter's time between two calls; the shortest such gap in the H200 traces
is 0.75 us), so a range never overlaps the one before it.

``generate(spec)`` returns the trace document and the ground truth (every GPU
op's interval, so busy and span can be checked independently);
``write_trace(path, spec)`` writes ``.json`` or ``.json.gz``. ``spec_for_events``
sizes a spec to about a target event count. ``strip`` writes variations of an
existing trace (annotations, flows, shapes removed; events shuffled; bare array).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path
from typing import Any

PID = 4242
AUTOGRAD_TID = 4299
COMM_STREAM = 21
HOST_GAP_US = 1.0
"""Host time between two consecutive calls on one thread (before jitter)."""
FWD_THREAD_ID = 1
"""``Fwd thread id`` of backward events: the profiler's id of the thread that ran the forward (forward ops record 0)."""
_BASE_TS = 6_000_000_000.0
_GEMM_FLOPS_PER_US = 2.5e8  # ~250 TFLOP/s fp16 dense
_DENSE_GEMM = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT"
_SPARSE_GEMM = "sm90_xmma_sparse_gemm_f16f16_f16f32_f32_tn_t_tilesize128x256x64_cgasize4x1x1_warpgroupsize2x1x1_execute_segment_k_off_kernel_5x_cusparselt"
_GELU = "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul>)"
_GELU_BWD = "void at::native::vectorized_elementwise_kernel<8, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half, c10::Half)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::Half, c10::Half)#1}, std::array<char*, 3ul>)"
_ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::Half, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::Half, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, double, bool, float*, float*)"
_LOSS = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)"
_NCCL = "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
_ROLES = ("gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class TraceSpec:
    """What to generate. Times in microseconds; sizes in elements."""

    layers: int = 6
    calls: int = 1
    iterations: int = 4
    streams: int = 2
    backward: bool = True
    optimizer: bool = True
    nccl: bool = True
    bucket: int = 4
    memcpy: bool = True
    copies_per_call: int = 0
    annotations: bool = True
    record_shapes: bool = True
    tokens: int = 4096
    hidden: int = 2048
    sparse_layers: frozenset[int] = frozenset()
    sparse_kernel_scale: float = 0.7
    sparse_host_us: float = 0.0
    kernel_scale: float = 1.0
    slow_layers: frozenset[int] = frozenset()
    slow_factor: float = 1.0
    jitter: float = 0.03
    first_step: int = 1
    seed: int = 0
    name: str = "synthetic"
    attention: str | None = None
    """``cudnn``, ``flash``, ``efficient`` (one fused kernel) or ``math`` (the decomposed fp32 sequence); None: no attention."""
    attention_noncontig: bool = False
    attention_scale: float = 1.0
    """Factor on the fused attention kernel's time (a slower backend)."""
    heads: int = 16
    attention_noncontig_qkv: bool = False
    """Query, key and value all arrive with their last dimension strided (a transposed fused-QKV producer)."""
    warmup_calls: int = 0
    """Forward calls over all layers before the first ``ProfilerStep`` (outside every step), as a warm-up runs them."""
    warmup_scale: float = 1.0
    """Factor on the warm-up calls' kernel times (a cold first call)."""
    iteration_scale: tuple[float, ...] = ()
    """Factor on the kernel times of iteration ``k`` (``k`` past the tuple: 1.0): clocks that fall in some iterations."""
    attention_copies: int = 0
    """``.contiguous()`` calls before every attention call (inside its annotation), each one copy of a query-sized tensor."""
    copy_kernel: str = "elementwise"
    """The kernel of those copies: ``elementwise`` (``direct_copy_kernel_cuda``) or ``memcpy`` (a ``Memcpy DtoD``)."""
    copy_scale: float = 1.0
    """Factor on those copies' kernel times (a strided read is slower than a streaming one)."""
    step_gap_us: float = 0.0
    """Host time in every ``ProfilerStep`` after a device synchronize and before its closing ``aten::item`` (a sleep
    between steps, inside the step's GPU span, where the device waits on the host)."""


@dataclass
class GroundTruth:
    """The GPU ops the generator placed, as (start us, duration us, stream)."""

    gpu: list[tuple[float, float, int]] = field(default_factory=list)
    events: int = 0

    @property
    def busy_ms(self) -> float:
        """Length of the union of GPU op intervals."""
        return union_ms((ts, ts + dur) for ts, dur, _ in self.gpu)

    @property
    def span_ms(self) -> float:
        """First GPU op start to last GPU op end."""
        return (max(ts + dur for ts, dur, _ in self.gpu) - min(ts for ts, _, _ in self.gpu)) / 1e3


def union_ms(intervals: Iterable[tuple[float, float]]) -> float:
    """Length (ms) of the union of (start us, end us) intervals, plain Python."""
    total = 0.0
    cur_start = cur_end = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        elif end > cur_end:
            cur_end = end
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total / 1e3


class _Gen:
    """Event writer: one host clock per thread, one GPU clock per stream."""

    def __init__(self, spec: TraceSpec) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.events: list[dict[str, Any]] = []
        self.truth = GroundTruth()
        self.clock = {PID: _BASE_TS, AUTOGRAD_TID: _BASE_TS}
        self.free: dict[int, float] = {}
        self.ext = 0
        self.corr = 100
        self.seq = 0  # the forward thread's next autograd sequence number (at::sequence_number::peek())
        self.compute = [7 + 6 * i for i in range(max(1, spec.streams))]

    def _j(self, value: float) -> float:
        return max(0.2, value * self.rng.lognormvariate(0.0, self.spec.jitter))

    def host(self, tid: int, us: float) -> None:
        self.clock[tid] += self._j(us)

    def complete(self, cat: str, name: str, pid: int, tid: int, start: float, end: float, args: dict[str, Any]) -> None:
        """An ``X`` event with ``ts``/``dur`` from its start and end rounded to the nanosecond, as Kineto writes them."""
        ts = round(start, 3)
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": round(round(end, 3) - ts, 3), "args": args})

    @contextmanager
    def span(self, name: str, tid: int, cat: str = "cpu_op", args: dict[str, Any] | None = None) -> Iterator[None]:
        """An ``X`` range on a host thread around whatever the body does there."""
        self.ext += 1
        start, ext = self.clock[tid], self.ext
        self.host(tid, 1.5)
        yield
        self.host(tid, 1.0)
        body = {"External id": ext, "Record function id": 0, **(args or {})}
        self.complete(cat, name, PID, tid, start, self.clock[tid], body)
        self.host(tid, HOST_GAP_US)

    @contextmanager
    def op(
        self, name: str, tid: int, dims: list[list[int]] | None = None, args: dict[str, Any] | None = None, *, autograd: bool = True, node: bool = False,
        dtype: str = "c10::Half",
    ) -> Iterator[int]:
        """A ``cpu_op`` span with the shape fields of ``record_shapes=True``; yields its sequence number.

        On the forward thread an op dispatched through autograd (``autograd``)
        records the next sequence number; one that creates an autograd node
        (``node``) takes it, and the counter moves on when it returns. Backward
        events get theirs from ``args``.
        """
        extra: dict[str, Any] = dict(args or {})
        if dims is not None and self.spec.record_shapes:
            strides = [[prod(d[k + 1 :]) for k in range(len(d))] for d in dims]
            extra.update({"Input Dims": dims, "Input type": [dtype if d else "" for d in dims], "Input Strides": strides, "Concrete Inputs": ["" for _ in dims]})
        seq = self.seq
        if tid == PID and autograd:
            extra.update({"Fwd thread id": 0, "Sequence number": seq})
        with self.span(name, tid, "cpu_op", extra):
            yield seq
        if tid == PID and autograd and node:
            self.seq += 1

    def launch(self, tid: int, name: str, stream: int, dur: float, *, kind: str = "kernel", after: float = 0.0, nbytes: int = 0) -> float:
        """A runtime call on ``tid`` and the GPU op it enqueues on ``stream``; returns the op's end."""
        self.corr += 1
        call = {"kernel": "cudaLaunchKernel", "gpu_memcpy": "cudaMemcpyAsync", "gpu_memset": "cudaMemsetAsync"}[kind]
        ts = self.clock[tid]
        self.host(tid, 4.0)
        self.complete("cuda_runtime", call, PID, tid, ts, self.clock[tid], {"External id": self.ext, "cbid": 211, "correlation": self.corr})
        self.host(tid, HOST_GAP_US)
        start = round(max(self.free.get(stream, 0.0), ts + self._j(6.0), after), 3)
        dur = round(self._j(dur), 3)
        self.free[stream] = start + dur
        args: dict[str, Any] = {"External id": self.ext, "device": 0, "context": 1, "stream": stream, "correlation": self.corr}
        if kind == "kernel":
            args.update({"queued": 0, "registers per thread": 128, "shared memory": 0, "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 50})
        else:
            args.update({"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / max(dur, 1e-3) / 1e3})
        self.events.append({"ph": "X", "cat": kind, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur, "args": args})
        self.events.append({"ph": "s", "id": self.corr, "pid": PID, "tid": tid, "ts": round(ts, 3), "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": self.corr, "pid": 0, "tid": stream, "ts": start, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.truth.gpu.append((start, dur, stream))
        return start + dur

    def gpu_annotation(self, name: str, stream: int, start: float, end: float) -> None:
        self.complete("gpu_user_annotation", name, 0, stream, start, max(start, end), {"External id": self.ext})

    def sync(self, tid: int, name: str = "cudaStreamSynchronize") -> None:
        ts = self.clock[tid]
        self.clock[tid] = max(ts + 2.0, max(self.free.values(), default=ts) + 3.0)
        self.complete("cuda_runtime", name, PID, tid, ts, self.clock[tid], {"External id": self.ext, "cbid": 131, "correlation": 0})
        self.host(tid, HOST_GAP_US)


def layer_name(i: int) -> str:
    """The annotation name of layer ``i``: ``layers.{block}.mlp.{role}``."""
    return f"layers.{i // 3}.mlp.{_ROLES[i % 3]}"


def _gemm_us(spec: TraceSpec, i: int, sparse: bool) -> float:
    us = 2.0 * spec.tokens * spec.hidden * spec.hidden / _GEMM_FLOPS_PER_US * spec.kernel_scale
    if sparse:
        us *= spec.sparse_kernel_scale
    if i in spec.slow_layers:
        us *= spec.slow_factor
    return us


@dataclass(frozen=True)
class _Nodes:
    """One forward layer call and the sequence numbers of the autograd nodes it created."""

    layer: int
    call: int
    t: int  # TBackward0 (aten::t of the weight, inside aten::linear)
    mm: int  # AddmmBackward0
    gelu: int  # GeluBackward0


ATTENTION_KERNELS = {
    "cudnn": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0",
    "flash": "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t, "
             "Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t> >, false, false, false, false, true, true, false, false>"
             "(pytorch_flash::Flash_fwd_params)",
    "efficient": "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, "
                 "cutlass::arch::Sm80, true, 64, 64, 128, true, true>::Params)",
}
"""The fused kernel each SDPA backend launches (names as the H200 traces and PyTorch 2.x record them)."""
ATTENTION_OPS = {
    "cudnn": ("aten::_scaled_dot_product_cudnn_attention", "aten::_cudnn_attention_forward"),
    "flash": ("aten::_scaled_dot_product_flash_attention", "aten::_flash_attention_forward"),
    "efficient": ("aten::_scaled_dot_product_efficient_attention", "aten::_efficient_attention_forward"),
}
_COPY = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}"
         "::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, "
         "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
         "at::native::memory::StoreWithCast<1> >(int)")
_COPY_HALF = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda"
              "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1}>"
              "(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const"
              "::{lambda()#7}::operator()() const::{lambda(c10::Half)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast"
              "<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
              "const::{lambda(c10::Half)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
              "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1} const&)::{lambda(int)#1})")
_MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int)")
_SOFTMAX = "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
_SGEMM = "ampere_sgemm_128x64_tn"


def attention_name(block: int) -> str:
    """The annotation name of block ``block``'s attention: ``layers.{block}.self_attn.sdpa``."""
    return f"layers.{block}.self_attn.sdpa"


def _attention_ops(g: _Gen, stream: int) -> None:
    """One SDPA call: the op with its inputs, then the backend's fused kernel or the decomposed fp32 sequence."""
    spec, tid = g.spec, PID
    head_dim = spec.hidden // spec.heads
    qkv = [1, spec.heads, spec.tokens, head_dim]
    contiguous = [spec.heads * spec.tokens * head_dim, spec.tokens * head_dim, head_dim, 1]
    # a transposed producer: the query's last dimension strided (tokens x heads x head_dim laid out token-minor)
    strided = [spec.heads * spec.tokens * head_dim, spec.tokens * head_dim, 1, spec.tokens]
    query = strided if spec.attention_noncontig or spec.attention_noncontig_qkv else contiguous
    other = strided if spec.attention_noncontig_qkv else contiguous
    half = ["c10::Half"] * 3 + ["", "Scalar", "Scalar", "", "Scalar"]
    sdpa_args = {
        "Input Dims": [qkv, qkv, qkv, [], [], [], [], []], "Input type": half,
        "Input Strides": [query, other, other, [], [], [], [], []],
        "Concrete Inputs": ["", "", "", "", "0.", "False", "", "False"],
    }
    shaped = sdpa_args if spec.record_shapes else {}
    attention_us = 4.0 * spec.tokens * spec.tokens * spec.hidden / _GEMM_FLOPS_PER_US * spec.kernel_scale * spec.attention_scale
    for _ in range(spec.attention_copies):  # q.contiguous(): a strided view copied to a fresh tensor
        with g.op("aten::contiguous", tid, [qkv], autograd=False), g.op("aten::clone", tid, [qkv], autograd=False), \
                g.op("aten::copy_", tid, [qkv, qkv], autograd=False):
            nbytes = 2 * prod(qkv)
            if spec.copy_kernel == "memcpy":
                g.launch(tid, "Memcpy DtoD (Device -> Device)", stream, nbytes / 2.0e6 * spec.copy_scale, kind="gpu_memcpy", nbytes=nbytes)
            else:
                g.launch(tid, _COPY_HALF, stream, nbytes / 1.5e6 * spec.copy_scale)
    with g.op("aten::scaled_dot_product_attention", tid, None, shaped, autograd=False):
        if spec.attention in ATTENTION_OPS:
            outer, inner = ATTENTION_OPS[spec.attention]
            with g.op(outer, tid, None, shaped, autograd=False), g.op(inner, tid, None, shaped, autograd=False):
                g.launch(tid, ATTENTION_KERNELS[spec.attention], stream, attention_us)
            return
        scores = [1, spec.heads, spec.tokens, spec.tokens]
        fp32 = "float"
        gemm_us = attention_us / 2.0 * 5.0  # each of the two fp32 SIMT GEMMs at a fifth of the tensor-core rate
        with g.op("aten::_scaled_dot_product_attention_math", tid, None, shaped, autograd=False):
            for _ in range(3):  # query, key, value upcast to fp32
                with g.op("aten::to", tid, [qkv], autograd=False), g.op("aten::copy_", tid, [qkv, qkv], autograd=False):
                    g.launch(tid, _COPY, stream, 6.0 * prod(qkv) / 2.0e6)
            with g.op("aten::mul", tid, [qkv, []], autograd=False, dtype=fp32):
                g.launch(tid, _MUL, stream, 8.0 * prod(qkv) / 2.0e6)
            keys = [qkv, [1, spec.heads, head_dim, spec.tokens]]
            with g.op("aten::matmul", tid, keys, autograd=False, dtype=fp32), g.op("aten::bmm", tid, keys, autograd=False, dtype=fp32):
                g.launch(tid, _SGEMM, stream, gemm_us)
            with g.op("aten::_softmax", tid, [scores, [], []], autograd=False, dtype=fp32):
                g.launch(tid, _SOFTMAX, stream, 8.0 * prod(scores) / 3.0e6)
            values = [scores, qkv]
            with g.op("aten::matmul", tid, values, autograd=False, dtype=fp32), g.op("aten::bmm", tid, values, autograd=False, dtype=fp32):
                g.launch(tid, _SGEMM, stream, gemm_us)
            with g.op("aten::to", tid, [qkv], autograd=False, dtype=fp32), g.op("aten::copy_", tid, [qkv, qkv], autograd=False, dtype=fp32):
                g.launch(tid, _COPY, stream, 6.0 * prod(qkv) / 2.0e6)


def _attention_call(g: _Gen, block: int) -> None:
    spec, tid = g.spec, PID
    stream = g.compute[(3 * block) % len(g.compute)]
    name = attention_name(block)
    ann: AbstractContextManager[None] = g.span(name, tid, "user_annotation") if spec.annotations else nullcontext()
    gpu_start = max(g.free.get(stream, 0.0), g.clock[tid])
    with ann:
        _attention_ops(g, stream)
    if spec.annotations:
        g.gpu_annotation(name, stream, gpu_start, g.free[stream])


def _forward_call(g: _Gen, i: int, call: int) -> _Nodes:
    spec, tid = g.spec, PID
    if spec.attention is not None and i % 3 == 0:
        _attention_call(g, i // 3)
    stream = g.compute[i % len(g.compute)]
    sparse = i in spec.sparse_layers
    act = [spec.tokens, spec.hidden]
    ann: AbstractContextManager[None] = g.span(layer_name(i), tid, "user_annotation") if spec.annotations else nullcontext()
    gpu_start = max(g.free.get(stream, 0.0), g.clock[tid])
    with ann:
        nodes = _forward_ops(g, i, call, stream, sparse, act)
    if spec.annotations:
        g.gpu_annotation(layer_name(i), stream, gpu_start, g.free[stream])
    return nodes


def _forward_ops(g: _Gen, i: int, call: int, stream: int, sparse: bool, act: list[int]) -> _Nodes:
    spec, tid = g.spec, PID
    with g.op("aten::linear", tid, [act, [spec.hidden, spec.hidden], [spec.hidden]]):
        with g.op("aten::t", tid, [[spec.hidden, spec.hidden]], node=True) as t_seq:
            g.host(tid, 3.0)
        inner = "aten::_cslt_sparse_mm" if sparse else "aten::addmm"
        with g.op(inner, tid, [[spec.hidden], act, [spec.hidden, spec.hidden]], node=True) as mm_seq:
            g.host(tid, 6.0 + (spec.sparse_host_us if sparse else 0.0))
            g.launch(tid, _SPARSE_GEMM if sparse else _DENSE_GEMM, stream, _gemm_us(spec, i, sparse))
    with g.op("aten::gelu", tid, [act], node=True) as gelu_seq:
        g.launch(tid, _GELU, stream, 2.0 * spec.tokens * spec.hidden / 1.5e6)
    for _ in range(spec.copies_per_call):
        with g.op("aten::copy_", tid, [act, act]):
            nbytes = 2 * spec.tokens * spec.hidden
            g.launch(tid, "Memcpy DtoD (Device -> Device)", stream, nbytes / 2.0e6, kind="gpu_memcpy", nbytes=nbytes)
    return _Nodes(i, call, t_seq, mm_seq, gelu_seq)


@contextmanager
def _evaluate(g: _Gen, node: str, seq: int | None, dims: list[list[int]]) -> Iterator[None]:
    """The autograd engine running one node: ``evaluate_function`` around the node's own op, with the forward's sequence number."""
    tid = AUTOGRAD_TID
    link = {} if seq is None else {"Fwd thread id": FWD_THREAD_ID, "Sequence number": seq}
    qualified = f"torch::autograd::{node}" if node == "AccumulateGrad" else node
    evaluate = g.span(f"autograd::engine::evaluate_function: {qualified}", tid, "cpu_op", link)
    with evaluate, g.op(qualified, tid, dims, link):
        yield


def _backward_call(g: _Gen, nodes: _Nodes, after: float) -> None:
    spec, tid = g.spec, AUTOGRAD_TID
    stream = g.compute[nodes.layer % len(g.compute)]
    act, weight = [spec.tokens, spec.hidden], [spec.hidden, spec.hidden]
    with _evaluate(g, "GeluBackward0", nodes.gelu, [act]), g.op("aten::gelu_backward", tid, [act, act]):
        g.launch(tid, _GELU_BWD, stream, 3.0 * spec.tokens * spec.hidden / 1.5e6, after=after)
    with _evaluate(g, "AddmmBackward0", nodes.mm, [act]):
        for dims in ([act, weight], [[spec.hidden, spec.tokens], act]):
            with g.op("aten::mm", tid, dims):
                g.launch(tid, _DENSE_GEMM, stream, _gemm_us(spec, nodes.layer, False), after=after)
    with _evaluate(g, "TBackward0", nodes.t, [weight]), g.op("aten::t", tid, [weight]):
        g.host(tid, 1.0)


def _all_reduce(g: _Gen, layers: int) -> float:
    spec, tid = g.spec, AUTOGRAD_TID
    nelems = layers * spec.hidden * spec.hidden
    ready = max(g.free.get(s, 0.0) for s in g.compute)
    comms = {"Collective name": "allreduce", "dtype": "Half", "In msg nelems": nelems, "Out msg nelems": nelems, "Group size": 8}
    with g.span("nccl:all_reduce", tid, "user_annotation"), g.op("record_param_comms", tid, None, comms):
        return g.launch(tid, _NCCL, COMM_STREAM, 2.0 * nelems / 1.0e5, after=ready)


def _backward(g: _Gen, forward: list[_Nodes], after: float) -> float:
    """Backward on the autograd thread, the forward calls in reverse; returns when the last all-reduce ends.

    A layer's weight gradient is accumulated (``AccumulateGrad``) after the
    backward of its first call, the last to run; the all-reduce of a bucket
    follows the last accumulation in it.
    """
    spec, tid = g.spec, AUTOGRAD_TID
    g.clock[tid] = max(g.clock[tid], g.clock[PID]) + 5.0
    comm_end = after
    done = 0
    for nodes in reversed(forward):
        _backward_call(g, nodes, after)
        if nodes.call > 0:
            continue
        with _evaluate(g, "AccumulateGrad", None, [[spec.hidden, spec.hidden]]), g.op("aten::detach", tid, [[spec.hidden, spec.hidden]]):
            g.host(tid, 2.0)
        done += 1
        if spec.nccl and (done % spec.bucket == 0 or done == spec.layers):
            comm_end = _all_reduce(g, min(done, spec.bucket))
    g.clock[PID] = max(g.clock[PID], g.clock[tid]) + 3.0
    return comm_end


def _optimizer(g: _Gen, after: float) -> None:
    spec, tid = g.spec, PID
    grads = spec.layers * spec.hidden * spec.hidden * 2
    with g.span("Optimizer.zero_grad#AdamW.zero_grad", tid, "user_annotation"), g.op("aten::zero_", tid, [[spec.layers * spec.hidden * spec.hidden]]):
        g.launch(tid, "Memset (Device)", g.compute[0], grads / 2.5e6, kind="gpu_memset", nbytes=grads)
    with g.span("Optimizer.step#AdamW.step", tid, "user_annotation"):
        for _chunk in range(max(1, spec.layers // 4)):
            with g.op("aten::_fused_adamw_", tid, [[spec.hidden, spec.hidden]] * 4, autograd=False):  # step() runs under no_grad
                g.launch(tid, _ADAM, g.compute[0], 4.0 * grads / 4 / 2.0e6, after=after)


def _iteration(g: _Gen, step: int) -> None:
    spec, tid = g.spec, PID
    with g.span(f"ProfilerStep#{step}", tid, "user_annotation"):
        gpu_start = max(g.free.values(), default=g.clock[tid])
        if spec.memcpy:
            with g.op("aten::to", tid, [[spec.tokens, spec.hidden]]), g.op("aten::copy_", tid, [[spec.tokens, spec.hidden]] * 2, autograd=False):
                nbytes = 2 * spec.tokens * spec.hidden
                g.launch(tid, "Memcpy HtoD (Pageable -> Device)", g.compute[0], nbytes / 2.0e4, kind="gpu_memcpy", nbytes=nbytes)
        forward = [_forward_call(g, i, call) for call in range(spec.calls) for i in range(spec.layers)]
        with g.op("aten::mse_loss", tid, [[spec.tokens, spec.hidden]] * 2, node=True):
            forward_end = g.launch(tid, _LOSS, g.compute[0], spec.tokens * spec.hidden / 2.0e6, after=max(g.free.values()))
        comm_end = _backward(g, forward, forward_end) if spec.backward else forward_end
        if spec.optimizer:
            _optimizer(g, max([comm_end, *g.free.values()]))
        if spec.step_gap_us:  # the device synchronized, then the host sleeps; the step's last copy comes after
            g.sync(tid, "cudaDeviceSynchronize")
            g.host(tid, spec.step_gap_us)
        with g.op("aten::item", tid, [[]]), g.op("aten::_local_scalar_dense", tid, [[]], autograd=False):
            g.launch(tid, "Memcpy DtoH (Device -> Pageable)", g.compute[0], 2.0, kind="gpu_memcpy", nbytes=4)
            g.sync(tid)
        g.gpu_annotation(f"ProfilerStep#{step}", g.compute[0], gpu_start, max(g.free.values()))
    g.host(tid, 20.0)


def _metadata(spec: TraceSpec, streams: list[int]) -> list[dict[str, Any]]:
    ts = round(_BASE_TS, 3)
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "ts": ts, "pid": PID, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": ts, "pid": PID, "tid": 0, "args": {"labels": "CPU"}},
        {"name": "process_name", "ph": "M", "ts": ts, "pid": 0, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": ts, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "thread_name", "ph": "M", "ts": ts, "pid": PID, "tid": PID, "args": {"name": f"thread {PID} (python3)"}},
        {"name": "thread_name", "ph": "M", "ts": ts, "pid": PID, "tid": AUTOGRAD_TID, "args": {"name": f"thread {AUTOGRAD_TID} (pt_autograd_0)"}},
    ]
    meta += [{"name": "thread_name", "ph": "M", "ts": ts, "pid": 0, "tid": s, "args": {"name": f"stream {s} "}} for s in streams]
    return meta


def generate(spec: TraceSpec) -> tuple[dict[str, Any], GroundTruth]:
    """The trace document (as ``json.dump`` will write it) and the ground truth of its GPU ops."""
    if spec.layers < 1 or spec.calls < 1 or spec.iterations < 1 or spec.streams < 1 or spec.bucket < 1:
        raise ValueError("layers, calls, iterations, streams and bucket must be at least 1")
    if spec.copy_kernel not in ("elementwise", "memcpy"):
        raise ValueError(f"copy_kernel {spec.copy_kernel!r}: expected elementwise or memcpy")
    if spec.attention is not None and spec.attention not in (*ATTENTION_KERNELS, "math"):
        raise ValueError(f"attention {spec.attention!r}: expected one of {', '.join((*ATTENTION_KERNELS, 'math'))}")
    g = _Gen(replace(spec, kernel_scale=spec.kernel_scale * spec.warmup_scale))
    for call in range(spec.warmup_calls):  # warm-up: before the first ProfilerStep, outside every step
        for i in range(spec.layers):
            _forward_call(g, i, call)
    for k in range(spec.iterations):
        scale = spec.iteration_scale[k] if k < len(spec.iteration_scale) else 1.0
        g.spec = replace(spec, kernel_scale=spec.kernel_scale * scale) if scale != 1.0 else spec
        _iteration(g, spec.first_step + k)
    g.spec = spec
    streams = sorted({s for _, _, s in g.truth.gpu})
    events = _metadata(spec, streams) + g.events
    g.truth.events = len(events)
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "record_shapes": int(spec.record_shapes),
        "cuda_driver_version": 13000,
        "cuda_runtime_version": 13000,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1790000000000000000,
        "traceEvents": events,
        "traceName": f"{spec.name}.json",
    }
    return doc, g.truth


def write_doc(path: Path, doc: dict[str, Any] | list[Any]) -> None:
    """Write a trace document one event per line, as Kineto does; gzip when the name ends in ``.gz``."""
    if isinstance(doc, list):
        body = "[\n" + ",\n".join(json.dumps(e) for e in doc) + "\n]\n"
    else:
        head = {k: v for k, v in doc.items() if k != "traceEvents"}
        parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
        events = ",\n".join("    " + json.dumps(e) for e in doc.get("traceEvents", []))
        body = "{\n" + ",\n".join(parts) + ',\n  "traceEvents": [\n' + events + "\n  ]\n}\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as handle:
            handle.write(body)
    else:
        path.write_text(body, encoding="utf-8")


def write_trace(path: Path, spec: TraceSpec) -> GroundTruth:
    """Generate ``spec`` and write it to ``path`` (``.json`` or ``.json.gz``); returns the ground truth."""
    doc, truth = generate(spec)
    write_doc(path, doc)
    return truth


def spec_for_events(target: int, **fields: Any) -> TraceSpec:
    """A spec with about ``target`` events: the iteration count scaled from a one-iteration probe."""
    probe = replace(TraceSpec(**fields), iterations=1)
    _, truth = generate(probe)
    per_iteration = max(1, truth.events - len(_metadata(probe, [])) - 4)
    return replace(probe, iterations=max(1, round(target / per_iteration)))


def read_doc(path: Path) -> dict[str, Any]:
    """Load a trace written by a profiler or by this module (whole document, for variations)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        doc = json.load(handle)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def strip(doc: dict[str, Any], variation: str, seed: int = 0) -> dict[str, Any] | list[Any]:
    """A variation of a trace document: ``no_annotations``, ``no_flows``, ``no_shapes``, ``shuffled``, ``bare_array``."""
    events = list(doc.get("traceEvents", []))
    if variation == "no_annotations":
        events = [e for e in events if e.get("cat") not in ("user_annotation", "gpu_user_annotation") or str(e.get("name", "")).startswith("ProfilerStep#")]
    elif variation == "no_flows":
        events = [e for e in events if e.get("cat") not in ("ac2g", "cuda_runtime", "cuda_driver")]
    elif variation == "no_shapes":
        events = [{**e, "args": {k: v for k, v in e["args"].items() if not k.startswith("Input")}} if isinstance(e.get("args"), dict) else e for e in events]
    elif variation == "shuffled":
        random.Random(seed).shuffle(events)
    elif variation == "bare_array":
        return events
    else:
        raise ValueError(f"unknown variation {variation!r}")
    return {**doc, "traceEvents": events}


VARIATIONS = ("no_annotations", "no_flows", "no_shapes", "shuffled", "bare_array")
"""Every variation ``strip`` knows."""


def insert_layout_ops(doc: dict[str, Any], before: str = "aten::scaled_dot_product_attention",
                      ops: tuple[str, ...] = ("aten::reshape", "aten::contiguous")) -> dict[str, Any]:
    """A copy of ``doc`` with layout/view ``cpu_op`` ranges (no kernels) inserted in the host gap before every ``before`` op.

    What the framework adds when a producer's output is no longer contiguous: the ops sit on
    the same thread, in the idle time before the op, each 1 us long and 0.5 us apart.
    """
    events = list(doc.get("traceEvents", []))
    added: list[dict[str, Any]] = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "cpu_op" or e.get("name") != before:
            continue
        dims = (e.get("args") or {}).get("Input Dims", [[]])[:1]
        for k, op in enumerate(ops):
            ts = round(float(e["ts"]) - 1.5 * (len(ops) - k), 3)
            added.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": e["pid"], "tid": e["tid"], "ts": ts, "dur": 1.0,
                          "args": {"External id": 0, "Input Dims": dims, "Input type": ["c10::Half"]}})
    return {**doc, "traceEvents": events + added}


FP32_GEMM = "ampere_sgemm_128x64_tn"
"""An fp32 SIMT GEMM kernel name (what a linear runs once its inputs are float)."""


def move_to_fp32(doc: dict[str, Any], layer: str) -> dict[str, Any]:
    """A copy of ``doc`` where the annotated ``layer`` runs in fp32: its GEMM kernels renamed to an fp32 SIMT
    GEMM and its ops' half-precision inputs recorded as ``float`` (generate it with ``slow_layers`` for the time)."""
    events = [dict(e) for e in doc.get("traceEvents", [])]
    gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "gpu_user_annotation" and e.get("name") == layer]
    host = [(e["ts"], e["ts"] + e["dur"], e.get("tid")) for e in events if e.get("cat") == "user_annotation" and e.get("name") == layer]
    for e in events:
        if e.get("cat") == "kernel" and e.get("name") == _DENSE_GEMM and any(a <= e["ts"] <= b for a, b in gpu):
            e["name"] = FP32_GEMM
        elif e.get("cat") == "cpu_op" and any(a <= e["ts"] <= b and e.get("tid") == t for a, b, t in host):
            args = dict(e.get("args") or {})
            if "Input type" in args:
                args["Input type"] = ["float" if v == "c10::Half" else v for v in args["Input type"]]
            e["args"] = args
    return {**doc, "traceEvents": events}


def reorder_host_ops(doc: dict[str, Any], first: str, second: str) -> dict[str, Any]:
    """A copy of ``doc`` where every top-level ``first`` op directly followed on its thread by a top-level ``second``
    runs after it instead: the two host ranges trade places, each with every host event inside it (child ops, the
    launch calls; their kernels keep their correlation ids and GPU times). The same ops, in another order."""
    events = [dict(e) for e in doc.get("traceEvents", [])]
    host = ("cpu_op", "cuda_runtime", "cuda_driver")
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"), key=lambda e: (e["tid"], e["ts"]))
    top: list[dict[str, Any]] = []
    for e in ops:  # top-level: inside no other op of its thread
        if not any(t["tid"] == e["tid"] and t["ts"] <= e["ts"] and e["ts"] + e["dur"] <= t["ts"] + t["dur"] for t in top[-3:]):
            top.append(e)
    moves: list[tuple[Any, float, float, float]] = []  # (tid, start, end, shift)
    for a, b in zip(top, top[1:], strict=False):
        if a["tid"] == b["tid"] and a["name"] == first and b["name"] == second:
            a0, a1, b0, b1 = a["ts"], a["ts"] + a["dur"], b["ts"], b["ts"] + b["dur"]
            moves += [(a["tid"], a0, a1, b1 - a1), (b["tid"], b0, b1, a0 - b0)]
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in host:
            for tid, start, end, shift in moves:
                if e.get("tid") == tid and start <= e["ts"] and e["ts"] + e.get("dur", 0) <= end:
                    e["ts"] = round(e["ts"] + shift, 3)
                    break
    return {**doc, "traceEvents": events}
