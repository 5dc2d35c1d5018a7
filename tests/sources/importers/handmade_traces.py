"""Small hand-written Kineto traces with known structure: a training loop, module events, a torch.compile region.

Written as Python so the structure is readable; ``tests/sources/importers/golden.py``
saves them under ``fixtures/traces/``. Times are microseconds.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]

MAIN = (1, 1)
AUTOGRAD = (1, 2)
GEMM_F16 = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::threshold_kernel_impl<c10::Half>, std::array<char*, 3ul> >(int, at::native::threshold_kernel_impl<c10::Half>, std::array<char*, 3ul>)"
REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float>)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)"
NCCL = "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::Half, 4> >(...)"


class _Builder:
    def __init__(self) -> None:
        self.events: list[Event] = [
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "pt_main_thread"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "pt_autograd_0"}},
        ]
        self.corr = 0

    def host(self, cat: str, name: str, thread: tuple[int, int], ts: float, dur: float, **args: Any) -> None:
        event: Event = {"ph": "X", "cat": cat, "name": name, "pid": thread[0], "tid": thread[1], "ts": ts, "dur": dur}
        if args:
            event["args"] = args
        self.events.append(event)

    def op(self, name: str, thread: tuple[int, int], ts: float, dur: float, seq: int | None = None, **shape: Any) -> None:
        args: dict[str, Any] = {}
        if seq is not None:
            args["Sequence number"] = seq
            args["Fwd thread id"] = 0
        for key, value in shape.items():
            args[{"dims": "Input Dims", "types": "Input type", "strides": "Input Strides", "concrete": "Concrete Inputs"}[key]] = value
        self.host("cpu_op", name, thread, ts, dur, **args)

    def launch(self, thread: tuple[int, int], ts: float, gpu_name: str, gpu_ts: float, gpu_dur: float, *, stream: int = 7,
               cat: str = "kernel", call: str = "cudaLaunchKernel") -> int:
        self.corr += 1
        self.host("cuda_runtime", call, thread, ts, 3.0, correlation=self.corr)
        self.events.append({"ph": "X", "cat": cat, "name": gpu_name, "pid": 0, "tid": stream, "ts": gpu_ts, "dur": gpu_dur,
                            "args": {"device": 0, "stream": stream, "correlation": self.corr}})
        return self.corr

    def doc(self, name: str) -> dict[str, Any]:
        return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Handmade GPU"}], "traceName": name, "traceEvents": self.events}


_H = ["c10::Half", "c10::Half", "c10::Half"]


def _forward(b: _Builder, o: float, s: int) -> None:
    b.op("aten::copy_", MAIN, o + 5, 4, dims=[[8, 16], [8, 16], []], types=["c10::Half", "c10::Half", "Scalar"], strides=[[16, 1], [16, 1], []])
    b.launch(MAIN, o + 6, "Memcpy HtoD (Pageable -> Device)", o + 30, 20, cat="gpu_memcpy", call="cudaMemcpyAsync")
    b.op("aten::linear", MAIN, o + 10, 50, dims=[[8, 16], [32, 16], [32]], types=_H, strides=[[16, 1], [16, 1], [1]])
    b.op("aten::t", MAIN, o + 12, 2, seq=100 * s + 1, dims=[[32, 16]], types=["c10::Half"], strides=[[16, 1]])
    b.op("aten::addmm", MAIN, o + 15, 40, seq=100 * s + 2, dims=[[32], [8, 16], [16, 32]], types=_H, strides=[[1], [16, 1], [1, 16]])
    b.launch(MAIN, o + 20, GEMM_F16, o + 100, 40)
    b.op("aten::relu", MAIN, o + 70, 20, seq=100 * s + 3, dims=[[8, 32]], types=["c10::Half"], strides=[[32, 1]])
    b.launch(MAIN, o + 75, RELU, o + 145, 5)
    b.op("aten::mse_loss", MAIN, o + 100, 20, seq=100 * s + 4, dims=[[8, 32], [8, 32], []], types=["c10::Half", "c10::Half", "Scalar"], strides=[[32, 1], [32, 1], []])
    b.launch(MAIN, o + 105, REDUCE, o + 155, 5)


def _backward(b: _Builder, o: float, s: int) -> None:
    ev = "autograd::engine::evaluate_function: "
    b.op(ev + "MseLossBackward0", AUTOGRAD, o + 200, 30, seq=100 * s + 4)
    b.op("MseLossBackward0", AUTOGRAD, o + 201, 28, seq=100 * s + 4)
    b.launch(AUTOGRAD, o + 210, ADD, o + 240, 10)
    b.op(ev + "ReluBackward0", AUTOGRAD, o + 240, 30, seq=100 * s + 3)
    b.op("aten::threshold_backward", AUTOGRAD, o + 245, 20, dims=[[8, 32], [8, 32], []], types=["c10::Half", "c10::Half", "Scalar"], strides=[[32, 1], [32, 1], []])
    b.launch(AUTOGRAD, o + 250, RELU, o + 255, 7)
    b.op(ev + "AddmmBackward0", AUTOGRAD, o + 280, 60, seq=100 * s + 2)
    b.op("AddmmBackward0", AUTOGRAD, o + 281, 58, seq=100 * s + 2)
    b.op("aten::mm", AUTOGRAD, o + 285, 20, dims=[[8, 32], [32, 16]], types=["c10::Half", "c10::Half"], strides=[[32, 1], [16, 1]])
    b.launch(AUTOGRAD, o + 290, "Memset (Device)", o + 296, 1, cat="gpu_memset", call="cudaMemsetAsync")
    b.launch(AUTOGRAD, o + 295, GEMM_F16, o + 300, 30)
    b.op("aten::mm", AUTOGRAD, o + 310, 20, dims=[[32, 8], [8, 16]], types=["c10::Half", "c10::Half"], strides=[[1, 32], [16, 1]])
    b.launch(AUTOGRAD, o + 315, GEMM_F16, o + 331, 19)
    b.op(ev + "torch::autograd::AccumulateGrad", AUTOGRAD, o + 350, 20)
    b.op("aten::add_", AUTOGRAD, o + 352, 15, dims=[[32, 16], [32, 16], []], types=["c10::Half", "c10::Half", "Scalar"], strides=[[16, 1], [16, 1], []])
    b.launch(AUTOGRAD, o + 355, ADD, o + 380, 5)
    b.host("user_annotation", "nccl:all_reduce", AUTOGRAD, o + 372, 18)
    b.op("record_param_comms", AUTOGRAD, o + 373, 16)
    b.launch(AUTOGRAD, o + 375, NCCL, o + 390, 130, stream=20)


def _step_end(b: _Builder, o: float) -> None:
    b.corr += 1
    b.host("cuda_runtime", "cudaStreamSynchronize", MAIN, o + 515, 16, correlation=b.corr)
    b.events.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 20, "ts": o + 520, "dur": 10,
                     "args": {"cuda_sync_kind": "Stream Sync", "stream": 20, "correlation": b.corr, "device": 0}})
    b.host("user_annotation", "Optimizer.step#SGD.step", MAIN, o + 600, 100)
    b.op("aten::_foreach_add_", MAIN, o + 610, 40, dims=[[]], types=["TensorList"])
    b.launch(MAIN, o + 620, ADAM, o + 640, 20)


def training_trace() -> dict[str, Any]:
    """Three ProfilerSteps of a linear-relu-mse training loop: backward on the autograd thread, NCCL, memcpy, memset, SGD."""
    b = _Builder()
    for s in (1, 2, 3):
        o = 1000.0 * (s - 1)
        b.host("user_annotation", f"ProfilerStep#{s}", MAIN, o, 1000)
        _forward(b, o, s)
        _backward(b, o, s)
        _step_end(b, o)
    return b.doc("training_step")


def _module(b: _Builder, name: str, ts: float, dur: float) -> None:
    b.host("python_function", f"nn.Module: {name}", MAIN, ts, dur, **{"Python id": 0})


def _linear(b: _Builder, ts: float, out: int) -> None:
    b.op("aten::linear", MAIN, ts, 30, dims=[[16, 64], [out, 64], []], types=["c10::BFloat16", "c10::BFloat16", ""], strides=[[64, 1], [64, 1], []])
    b.launch(MAIN, ts + 5, "nvjet_sm90_bsb_128x64_64x5_1x1_v_bz_TNT", ts + 40, 10)


def _block(b: _Builder, o: float, index: int) -> None:
    _module(b, f"Block_{index}", o, 230)
    b.host("python_function", "torch/nn/modules/module.py(1762): _call_impl", MAIN, o + 1, 228)
    _module(b, f"RMSNorm_{index}", o + 5, 40)
    b.op("aten::mul", MAIN, o + 10, 20, dims=[[16, 64], [64]], types=["c10::BFloat16", "c10::BFloat16"], strides=[[64, 1], [1]])
    b.launch(MAIN, o + 15, ADD.replace("CUDAFunctor_add", "MulFunctor"), o + 30, 4)
    _module(b, f"Linear_{2 * index}", o + 50, 40)
    _linear(b, o + 55, 64)
    _module(b, f"Linear_{2 * index + 1}", o + 100, 40)
    _linear(b, o + 105, 256)
    b.op("aten::scaled_dot_product_attention", MAIN, o + 150, 60, dims=[[1, 4, 16, 16]] * 3 + [[], [], [], [], []],
         types=["c10::BFloat16"] * 3 + ["", "Scalar", "Scalar", "", "Scalar"], strides=[[1024, 16, 64, 1]] * 3 + [[], [], [], [], []],
         concrete=["", "", "", "", "0.", "True", "", "False"])
    b.op("aten::_scaled_dot_product_flash_attention", MAIN, o + 152, 55, dims=[[1, 4, 16, 16]] * 3, types=["c10::BFloat16"] * 3)
    b.launch(MAIN, o + 160, "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)", o + 170, 12)


def module_trace() -> dict[str, Any]:
    """Two forwards of a two-block model recorded with module events (with_stack): Linear, RMSNorm, SDPA in the block's own forward."""
    b = _Builder()
    for it in (0, 1):
        o = 1000.0 * it
        _module(b, "TinyModel_0", o, 600)
        _block(b, o + 10, 0)
        _block(b, o + 300, 1)
    return b.doc("module_trace")


def compiled_trace() -> dict[str, Any]:
    """Two calls of a torch.compile region: an Inductor pointwise kernel, an extern mm, a reduction."""
    b = _Builder()
    for it in (0, 1):
        o = 1000.0 * it
        b.op("TorchDynamo Cache Lookup", MAIN, o, 5)
        b.op("Torch-Compiled Region: 0/0", MAIN, o + 10, 400)
        b.op("triton_poi_fused_add_cos_sin_0", MAIN, o + 20, 30, dims=[[10, 10], [10, 10]], types=["float", "float"], strides=[[10, 1], [10, 1]])
        b.launch(MAIN, o + 25, "triton_poi_fused_add_cos_sin_0", o + 60, 2, call="cuLaunchKernel")
        b.op("aten::mm", MAIN, o + 100, 40, dims=[[10, 10], [10, 10]], types=["float", "float"], strides=[[10, 1], [10, 1]])
        b.launch(MAIN, o + 105, "ampere_sgemm_32x32_sliced1x4_tn", o + 120, 6)
        b.op("triton_red_fused_sum_1", MAIN, o + 200, 30, dims=[[10, 10]], types=["float"], strides=[[10, 1]])
        b.launch(MAIN, o + 205, "triton_red_fused_sum_1", o + 220, 3, call="cuLaunchKernel")
    return b.doc("compiled_region")
