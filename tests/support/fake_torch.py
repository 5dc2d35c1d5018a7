"""A recording stand-in for the torch calls a generated ``repro.py`` makes (installed via ``sys.modules``).

Every tensor it hands out remembers its shape, stride and dtype; every call the script makes
(``empty_strided``, ``to_sparse_semi_structured``, ``F.linear``, ``F.scaled_dot_product_attention``,
CUDA events, the profiler) is appended to ``calls``. The profiler reports the backend op the last
profiled call would dispatch to, so the script's backend detection runs for real.
"""

from __future__ import annotations

import types
from typing import Any


class FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    def __init__(self, shape: tuple[int, ...], stride: tuple[int, ...] | None, dtype: FakeDtype, kind: str = "dense") -> None:
        self.shape = tuple(shape)
        self.stride_ = tuple(stride) if stride is not None else None
        self.dtype = dtype
        self.kind = kind

    def normal_(self) -> FakeTensor:
        assert self.dtype.name != "bool", "normal_ is not defined for bool tensors"
        return self

    def fill_(self, value: object) -> FakeTensor:
        return self

    def zero_(self) -> FakeTensor:
        return self

    def mul_(self, other: FakeTensor) -> FakeTensor:
        assert other.shape == self.shape, (other.shape, self.shape)
        return self

    def repeat(self, *sizes: int) -> FakeTensor:
        assert len(sizes) >= len(self.shape), "torch.Tensor.repeat needs at least as many sizes as dimensions"
        shape = (1,) * (len(sizes) - len(self.shape)) + self.shape
        return FakeTensor(tuple(a * b for a, b in zip(shape, sizes, strict=True)), None, self.dtype)


def make_fake_torch() -> tuple[types.ModuleType, dict[str, types.ModuleType], list[tuple[str, Any]]]:
    """The fake ``torch`` module, every submodule to install in ``sys.modules``, and the call log."""
    calls: list[tuple[str, Any]] = []
    last_op: list[str] = ["aten::mm"]
    torch = types.ModuleType("torch")
    for name in ("float16", "bfloat16", "float32", "int8", "float8_e4m3fn", "bool"):
        setattr(torch, name, FakeDtype(name))

    def empty_strided(shape: tuple[int, ...], stride: tuple[int, ...], device: str, dtype: FakeDtype) -> FakeTensor:
        calls.append(("empty_strided", {"shape": tuple(shape), "stride": tuple(stride), "device": device, "dtype": dtype.name}))
        return FakeTensor(shape, stride, dtype)

    def tensor(values: list[int], device: str, dtype: FakeDtype) -> FakeTensor:
        return FakeTensor((len(values),), (1,), dtype)

    torch.empty_strided = empty_strided  # type: ignore[attr-defined]
    torch.tensor = tensor  # type: ignore[attr-defined]
    torch.manual_seed = lambda seed: calls.append(("manual_seed", seed))  # type: ignore[attr-defined]

    cuda = types.ModuleType("torch.cuda")
    cuda.is_available = lambda: True  # type: ignore[attr-defined]
    cuda.synchronize = lambda: None  # type: ignore[attr-defined]

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            calls.append(("cuda.Event", enable_timing))

        def record(self) -> None:
            return None

        def elapsed_time(self, other: Event) -> float:
            return 1.0

    cuda.Event = Event  # type: ignore[attr-defined]
    torch.cuda = cuda  # type: ignore[attr-defined]

    nn = types.ModuleType("torch.nn")
    functional = types.ModuleType("torch.nn.functional")

    def linear(x: FakeTensor, weight: FakeTensor, bias: FakeTensor | None = None) -> FakeTensor:
        calls.append(("linear", {"x": x, "weight": weight, "bias": bias}))
        last_op[0] = {"cusparselt": "aten::_cslt_sparse_mm", "cutlass": "aten::_sparse_semi_structured_linear"}.get(weight.kind, "aten::mm")
        return FakeTensor(x.shape[:-1] + (weight.shape[0],), None, x.dtype)

    def sdpa(
        q: FakeTensor, k: FakeTensor, v: FakeTensor, attn_mask: FakeTensor | None = None, dropout_p: float = 0.0, is_causal: bool = False
    ) -> FakeTensor:
        assert attn_mask is None or not is_causal, "torch refuses an explicit attn_mask together with is_causal=True"
        calls.append(("sdpa", {"q": q, "k": k, "v": v, "attn_mask": attn_mask, "dropout_p": dropout_p, "is_causal": is_causal}))
        contiguous = attn_mask is None and all(t.stride_ is not None and t.stride_[-1] == 1 for t in (q, k, v))
        last_op[0] = "aten::_scaled_dot_product_flash_attention" if contiguous else "aten::_scaled_dot_product_efficient_attention"
        return q

    functional.linear = linear  # type: ignore[attr-defined]
    functional.scaled_dot_product_attention = sdpa  # type: ignore[attr-defined]
    nn.functional = functional  # type: ignore[attr-defined]
    torch.nn = nn  # type: ignore[attr-defined]

    sparse = types.ModuleType("torch.sparse")

    class SparseSemiStructuredTensor:
        _FORCE_CUTLASS = False

    def to_sparse_semi_structured(weight: FakeTensor) -> FakeTensor:
        backend = "cutlass" if SparseSemiStructuredTensor._FORCE_CUTLASS else "cusparselt"
        calls.append(("to_sparse_semi_structured", {"weight": weight, "backend": backend}))
        return FakeTensor(weight.shape, weight.stride_, weight.dtype, kind=backend)

    sparse.SparseSemiStructuredTensor = SparseSemiStructuredTensor  # type: ignore[attr-defined]
    sparse.to_sparse_semi_structured = to_sparse_semi_structured  # type: ignore[attr-defined]
    torch.sparse = sparse  # type: ignore[attr-defined]

    profiler = types.ModuleType("torch.profiler")

    class ProfilerActivity:
        CPU = "cpu"

    class _Average:
        def __init__(self, key: str) -> None:
            self.key = key

    class profile:  # noqa: N801 - torch's spelling
        def __init__(self, activities: list[str]) -> None:
            calls.append(("profiler", activities))

        def __enter__(self) -> profile:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def key_averages(self) -> list[_Average]:
            return [_Average("aten::linear"), _Average(last_op[0])]

    profiler.ProfilerActivity = ProfilerActivity  # type: ignore[attr-defined]
    profiler.profile = profile  # type: ignore[attr-defined]
    torch.profiler = profiler  # type: ignore[attr-defined]
    modules = {
        "torch": torch, "torch.cuda": cuda, "torch.nn": nn, "torch.nn.functional": functional,
        "torch.sparse": sparse, "torch.profiler": profiler,
    }
    return torch, modules, calls
