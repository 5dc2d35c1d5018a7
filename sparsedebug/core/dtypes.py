"""One table of the number formats sparsedebug meets, and every fact derived from it.

Workloads, traces (c10 type names such as ``c10::Half``), Nsight kernel names, TensorRT
logs and torch (``torch.float16``) all spell the same formats differently. Every caller
turns a spelling into the canonical short name with :func:`canonical_dtype` and reads
item size, unit roundoff, the torch name and the kernel-error tolerance from here.
"""

from __future__ import annotations

from typing import NamedTuple

from sparsedebug.core.errors import UserError


class DtypeInfo(NamedTuple):
    """Facts about one number format."""

    # Canonical short name (fp32, fp16, bf16, ...).
    name: str
    torch_name: str
    """PyTorch's name (float32, float16, ...)."""
    itemsize: int
    """Bytes per element."""
    # Significand bits including the implicit one (None for integers).
    mantissa_bits: int | None
    # Largest relative error vs an fp64 reference that computing in this format explains for one layer's GEMM (inputs
    # rounded, fp32 accumulation); None where not a compute format.
    kernel_tolerance: float | None


DTYPES: dict[str, DtypeInfo] = {
    info.name: info
    for info in (
        DtypeInfo("fp64", "float64", 8, 53, 1e-10),
        DtypeInfo("fp32", "float32", 4, 24, 1e-4),
        DtypeInfo("tf32", "float32", 4, 11, 1e-2),
        DtypeInfo("fp16", "float16", 2, 11, 1e-2),
        DtypeInfo("bf16", "bfloat16", 2, 8, 5e-2),
        DtypeInfo("fp8_e4m3", "float8_e4m3fn", 1, 4, None),
        DtypeInfo("fp8_e5m2", "float8_e5m2", 1, 3, None),
        DtypeInfo("int8", "int8", 1, None, None),
        DtypeInfo("uint8", "uint8", 1, None, None),
        DtypeInfo("int16", "int16", 2, None, None),
        DtypeInfo("int32", "int32", 4, None, None),
        DtypeInfo("int64", "int64", 8, None, None),
        DtypeInfo("bool", "bool", 1, None, None),
        DtypeInfo("complex64", "complex64", 8, None, None),
        DtypeInfo("complex128", "complex128", 16, None, None),
    )
}

_ALIASES: dict[str, str] = {
    # numpy / torch / C spellings
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "f32": "fp32",
    "float16": "fp16", "half": "fp16", "f16": "fp16", "c10::half": "fp16",
    "bfloat16": "bf16", "c10::bfloat16": "bf16",
    "float8_e4m3fn": "fp8_e4m3", "c10::float8_e4m3fn": "fp8_e4m3", "e4m3": "fp8_e4m3", "fp8": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2", "c10::float8_e5m2": "fp8_e5m2", "e5m2": "fp8_e5m2",
    "signed char": "int8", "char": "int8", "unsigned char": "uint8", "short": "int16",
    "int": "int32", "long int": "int64", "long": "int64", "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
}


def canonical_dtype(name: str | None) -> str | None:
    """The canonical short name (fp32, fp16, bf16, ...) of any spelling; None when unknown."""
    if name is None:
        return None
    key = name.strip().lower().removeprefix("torch.")
    if key in DTYPES:
        return key
    return _ALIASES.get(key)


def dtype_info(name: str) -> DtypeInfo:
    """Facts about a format by any spelling; ``UserError`` naming the known ones when unknown."""
    canonical = canonical_dtype(name)
    if canonical is None:
        raise UserError(f"dtype {name!r}: unknown (known: {', '.join(DTYPES)})")
    return DTYPES[canonical]


def itemsize(name: str | None) -> int | None:
    """Bytes per element of a format; None when unknown."""
    canonical = canonical_dtype(name)
    return None if canonical is None else DTYPES[canonical].itemsize


def unit_roundoff(name: str | None) -> float | None:
    """2**-p for a format with p significand bits; None for unknown or integer formats."""
    canonical = canonical_dtype(name)
    bits = None if canonical is None else DTYPES[canonical].mantissa_bits
    return None if bits is None else 2.0**-bits


def mantissa_bits(name: str | None) -> int | None:
    """Significand bits (with the implicit one) of a format; None for unknown or integer formats."""
    canonical = canonical_dtype(name)
    return None if canonical is None else DTYPES[canonical].mantissa_bits


def kernel_tolerance(name: str | None) -> float | None:
    """Largest per-layer relative error vs fp64 that computing in this format explains; None when unknown."""
    canonical = canonical_dtype(name)
    return None if canonical is None else DTYPES[canonical].kernel_tolerance


def torch_dtype_name(name: str) -> str:
    """PyTorch's name (``float16``...) for any spelling; ``UserError`` when unknown."""
    return dtype_info(name).torch_name


_IN_TEXT_ORDER: tuple[tuple[str, str], ...] = (
    ("bfloat16", "bf16"), ("bf16", "bf16"),
    ("float16", "fp16"), ("fp16", "fp16"), ("half", "fp16"),
    ("tf32", "tf32"),
    ("float32", "fp32"), ("fp32", "fp32"), ("float", "fp32"),
)


def dtype_in_text(text: str | None) -> str | None:
    """The format a free-text precision label names (``"fp16 in / fp32 acc"`` -> fp16); None when none.

    Exact spellings win; otherwise the first input format found in the text, narrowest
    spelling first so that ``bfloat16`` is not read as ``float16``.
    """
    if not text:
        return None
    exact = canonical_dtype(text)
    if exact is not None:
        return exact
    lowered = text.lower()
    for needle, canonical in _IN_TEXT_ORDER:
        if needle in lowered:
            return canonical
    return None
