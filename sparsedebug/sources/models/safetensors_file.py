"""Read a ``.safetensors`` file directly: an 8-byte header length, a JSON header, then the raw little-endian buffer.

Every dtype it can hold is read, bf16 included (widened to fp32 exactly: a bf16 is the top
half of an fp32). A file cut short or with a header that does not fit it is one ``UserError``
line, never a traceback or a panic of a native reader.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError

_SAFETENSORS_DTYPES: dict[str, tuple[str, str]] = {
    # safetensors dtype -> (numpy dtype to read, canonical name)
    "F64": ("<f8", "fp64"), "F32": ("<f4", "fp32"), "F16": ("<f2", "fp16"), "BF16": ("<u2", "bf16"),
    "I64": ("<i8", "int64"), "I32": ("<i4", "int32"), "I16": ("<i2", "int16"), "I8": ("i1", "int8"),
    "U8": ("u1", "uint8"), "BOOL": ("?", "bool"), "F8_E4M3": ("u1", "fp8_e4m3"), "F8_E5M2": ("u1", "fp8_e5m2"),
}
_MAX_HEADER = 100 * 1024 * 1024


def _safetensors_header(path: Path, data: bytes) -> tuple[dict[str, Any], int]:
    if len(data) < 8:
        raise UserError(f"{path}: cannot read safetensors (shorter than its 8-byte header length)")
    (length,) = struct.unpack("<Q", data[:8])
    if length > _MAX_HEADER or 8 + length > len(data):
        raise UserError(f"{path}: cannot read safetensors (header length {length} does not fit the file)")
    try:
        header = json.loads(data[8 : 8 + length])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read safetensors (header is not JSON: {exc})") from None
    if not isinstance(header, dict):
        raise UserError(f"{path}: cannot read safetensors (header is not a JSON object)")
    return header, 8 + length


def _safetensor(path: Path, name: str, spec: Any, buffer: memoryview) -> tuple[str, npt.NDArray[Any], str]:
    if not isinstance(spec, dict) or not {"dtype", "shape", "data_offsets"} <= spec.keys():
        raise UserError(f"{path}: tensor {name!r}: header entry lacks dtype, shape or data_offsets")
    kind = _SAFETENSORS_DTYPES.get(str(spec["dtype"]))
    if kind is None:
        raise UserError(f"{path}: tensor {name!r}: dtype {spec['dtype']} is not supported")
    offsets, dims = spec["data_offsets"], spec["shape"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(x) is int for x in offsets)
            and isinstance(dims, list) and all(type(x) is int and x >= 0 for x in dims)):
        raise UserError(f"{path}: tensor {name!r}: data_offsets must be two integers and shape non-negative integers")
    start, end = offsets
    shape = tuple(dims)
    if not 0 <= start <= end <= len(buffer):
        raise UserError(f"{path}: tensor {name!r}: bytes {start}..{end} lie outside the file's {len(buffer)} data bytes (truncated?)")
    if (end - start) % np.dtype(kind[0]).itemsize:
        raise UserError(f"{path}: tensor {name!r}: {end - start} bytes is not a whole number of {spec['dtype']} elements")
    raw = np.frombuffer(buffer[start:end], dtype=kind[0])
    if raw.size != int(np.prod(shape, dtype=np.int64)):
        raise UserError(f"{path}: tensor {name!r}: {raw.size} elements for shape {list(shape)}")
    values = raw.reshape(shape)
    if kind[1] == "bf16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return name, values, kind[1]


def read_safetensors(path: Path) -> list[tuple[str, npt.NDArray[Any], str]]:
    """Every tensor of a ``.safetensors`` file: (name, values, canonical dtype name), in file order; a cut or
    malformed file is a one-line ``UserError`` naming it and the tensor."""
    data = path.read_bytes()
    header, body = _safetensors_header(path, data)
    buffer = memoryview(data)[body:]
    return [_safetensor(path, name, spec, buffer) for name, spec in header.items() if name != "__metadata__"]
