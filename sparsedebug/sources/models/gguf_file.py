"""Read a GGUF checkpoint with the ``gguf`` package: metadata, and every tensor dequantized to fp32."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError


@dataclass(frozen=True)
class GGUFCheckpoint:
    """A GGUF file's key/value metadata and its tensors in numpy order ``(rows, cols)``."""

    path: Path
    metadata: dict[str, Any]
    tensors: dict[str, npt.NDArray[np.float32]]
    tensor_types: dict[str, str]

    def require(self, key: str) -> Any:
        """A metadata value; its absence is a ``UserError`` naming the key."""
        if key not in self.metadata:
            raise UserError(f"{self.path}: GGUF metadata has no {key!r}")
        return self.metadata[key]


def read_gguf(path: Path) -> GGUFCheckpoint:
    """Read ``path`` and dequantize every tensor to fp32 (any type the ``gguf`` package implements).

    GGUF lists dimensions fastest-first; tensors come back in numpy order, so a
    linear's weight is ``(out_features, in_features)``.
    """
    import gguf  # heavy: imported on use
    from gguf import quants

    if not path.is_file():
        raise UserError(f"{path}: file not found")
    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: not a readable GGUF file ({exc})") from None
    metadata: dict[str, Any] = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        metadata[key] = field.contents()
    tensors: dict[str, npt.NDArray[np.float32]] = {}
    types: dict[str, str] = {}
    for tensor in reader.tensors:
        shape = tuple(int(dim) for dim in reversed(tensor.shape.tolist()))
        try:
            values = quants.dequantize(tensor.data, tensor.tensor_type)
        except NotImplementedError:
            raise UserError(f"{path}: tensor {tensor.name}: type {tensor.tensor_type.name} cannot be dequantized") from None
        tensors[tensor.name] = np.ascontiguousarray(values, dtype=np.float32).reshape(shape)
        types[tensor.name] = tensor.tensor_type.name
    return GGUFCheckpoint(path=path, metadata=metadata, tensors=tensors, tensor_types=types)
