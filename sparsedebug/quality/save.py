"""Write a pruned model as safetensors: every checkpoint tensor, the pruned linears replaced.

fp32 or fp16 both keep pruned zeros exact. The pruning block rides along in
the file's metadata (``sparsedebug.pruning``, JSON), so the file says how it
was made. Files are written to a temporary name and renamed into place.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import plain_mode
from sparsedebug.records.quality import QualityRow
from sparsedebug.sources.models.base import Array
from sparsedebug.sources.models.load import LoadedModel

SAVE_DTYPES = {"fp32": np.float32, "fp16": np.float16}


def variant_filename(model: str, row: QualityRow) -> str:
    """``<model>-<method>-<N>of<M>-<selection>.safetensors``, with unsafe characters replaced."""
    assert row.pruning is not None
    pattern = row.pruning.pattern.replace(":", "of")
    stem = f"{model}-{row.pruning.method}-{pattern}-{row.pruning.layers}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem) + ".safetensors"


def check_save_target(directory: Path, dtype: str) -> None:
    """A ``UserError`` unless ``dtype`` is fp32 or fp16 and ``directory`` is a folder or can be made one.

    A missing folder is fine (:func:`save_pruned` creates it, parents too); a file in its
    place or on its path, or a parent this process cannot write to, is refused before any work.
    """
    if dtype not in SAVE_DTYPES:
        raise UserError(f"--save-dtype {dtype!r}: expected one of {', '.join(SAVE_DTYPES)}")
    if directory.is_dir():
        return
    if directory.exists():
        raise UserError(f"{directory} (--save): is a file, expected a folder to write the pruned models in")
    existing = next((p for p in directory.parents if p.exists()), Path("."))
    if not existing.is_dir():
        raise UserError(f"{directory} (--save): {existing} is a file, not a folder; choose another --save path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{directory} (--save): cannot create it in {existing}: permission denied")


def make_save_dir(directory: Path) -> None:
    """Create the ``--save`` folder (and its parents) when missing; mode from the umask."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{directory} (--save): cannot create the folder: {exc.strerror}") from None


def save_pruned(directory: Path, loaded: LoadedModel, row: QualityRow, pruned: Mapping[str, Array], dtype: str) -> Path:
    """Write the checkpoint with ``pruned`` weights into ``directory``; returns the file's path."""
    from safetensors.numpy import save_file

    check_save_target(directory, dtype)
    target = np.dtype(SAVE_DTYPES[dtype])
    tensors = {name: np.ascontiguousarray(value, dtype=target) for name, value in loaded.model.tensors.items()}
    for name, weight in pruned.items():
        tensors[f"{name}.weight"] = np.ascontiguousarray(weight, dtype=target)
    path = directory / variant_filename(loaded.name, row)
    assert row.pruning is not None
    metadata = {"sparsedebug.pruning": row.pruning.model_dump_json(), "sparsedebug.model": loaded.source, "format": "pt"}
    make_save_dir(directory)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=metadata)
        os.chmod(tmp, plain_mode())  # mkstemp makes it 0600; the file follows the umask like any other output
        os.replace(tmp, path)
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
