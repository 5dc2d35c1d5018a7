"""Read the tensors of a checkpoint file, whatever its format, without torch.

``.safetensors`` is parsed directly (``sources.models.safetensors_file``: an 8-byte header
length, a JSON header, then the raw little-endian buffer), so every dtype it can hold is read, bf16 included
(widened to fp32 exactly: a bf16 is the top half of an fp32). ``.npz`` goes
through numpy. ``.gguf`` goes through the ``gguf`` package (every tensor dequantized to fp32;
the dtype is the stored type, ``q4_1`` for a quantized one). Each tensor comes back with the dtype name the file declared, so
an audit can report ``bf16`` even though the array it computes on is fp32.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.core.errors import UserError

CHECKPOINT_SUFFIXES = (".safetensors", ".npz", ".gguf")
"""Checkpoint formats this module reads."""


@dataclass(frozen=True)
class Tensor:
    """One checkpoint tensor: its values (fp8 kept as raw bytes) and the dtype the file declared."""

    name: str
    values: npt.NDArray[Any]
    dtype: str


def _read_safetensors(path: Path) -> list[Tensor]:
    from sparsedebug.sources.models.safetensors_file import read_safetensors

    return [Tensor(name=name, values=values, dtype=dtype) for name, values, dtype in read_safetensors(path)]


# How a zip file (and so a ``.npz``: a zip of ``.npy`` arrays) starts; an empty one starts with the end record.
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _check_npz_magic(path: Path) -> None:
    """Refuse a ``.npz`` that is not a zip by its first bytes, before numpy reads it as something else
    (numpy would read a ``.npy`` or try a pickle, and advise loading pickles unsafely)."""
    with path.open("rb") as handle:
        head = handle.read(6)
    if head.startswith(_ZIP_MAGIC):
        return
    if head.startswith(b"\x93NUMPY"):
        raise UserError(f"{path}: a single .npy array, not a .npz archive; write it with numpy.savez(file, name=array)")
    raise UserError(f"{path}: not a .npz archive (a .npz is a zip of .npy arrays, starting with 'PK'; this file starts with {head[:4]!r})")


def _read_npz(path: Path) -> list[Tensor]:
    try:
        _check_npz_magic(path)
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: np.asarray(archive[name]) for name in archive.files}
    except UserError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        if "pickle" in str(exc):
            raise UserError(f"{path}: holds object (pickled) arrays, which are never loaded; save numeric arrays with numpy.savez") from None
        raise UserError(f"{path}: not a readable .npz archive ({exc})") from None
    except Exception as exc:  # a damaged zip (zipfile.BadZipFile and the like)
        raise UserError(f"{path}: not a readable .npz archive ({type(exc).__name__}: {exc})") from None
    return [Tensor(name=n, values=a, dtype=canonical_dtype(a.dtype.name) or a.dtype.name) for n, a in arrays.items()]


def _read_gguf(path: Path) -> list[Tensor]:
    from sparsedebug.sources.models.gguf_file import read_gguf

    checkpoint = read_gguf(path)
    return [
        Tensor(name=name, values=values, dtype=canonical_dtype(checkpoint.tensor_types[name]) or checkpoint.tensor_types[name].lower())
        for name, values in checkpoint.tensors.items()
    ]


def read_checkpoint(path: Path) -> list[Tensor]:
    """Every tensor of a ``.safetensors``, ``.npz`` or ``.gguf`` file, in file order; a ``UserError`` naming the file otherwise."""
    if path.is_dir():
        raise UserError(f"{path}: is a directory; give a checkpoint file ({', '.join(CHECKPOINT_SUFFIXES)}) inside it")
    if not path.is_file():
        raise UserError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        return _read_safetensors(path)
    if suffix == ".npz":
        return _read_npz(path)
    if suffix == ".gguf":
        return _read_gguf(path)
    raise UserError(f"{path}: a checkpoint must be one of {', '.join(CHECKPOINT_SUFFIXES)}")
