"""Reading checkpoints without torch: safetensors parsed directly (bf16 included), npz through numpy."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from sparsedebug.core.errors import UserError
from sparsedebug.sources.checkpoint import read_checkpoint


def _write_raw_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header, offset, body = {}, 0, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        body += raw
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + body)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=64))
def test_bf16_reads_exactly_as_the_fp64_value_of_its_bits(tmp_path_factory: pytest.TempPathFactory, values: list[float]) -> None:
    """A bf16 is the top 16 bits of an fp32: widening must reproduce the value exactly (fp64 reference)."""
    path = tmp_path_factory.mktemp("bf16") / "w.safetensors"
    fp32 = np.asarray(values, dtype=np.float32)
    bits = (fp32.view(np.uint32) >> 16).astype("<u2")
    _write_raw_safetensors(path, {"w": ("BF16", [len(values)], bits.tobytes())})
    (tensor,) = read_checkpoint(path)
    assert tensor.dtype == "bf16"
    expected = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    np.testing.assert_array_equal(tensor.values.astype(np.float64), expected)


def test_safetensors_written_by_the_library_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    tensors = {"a": rng.standard_normal((4, 8)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float16)}
    save_file(tensors, str(tmp_path / "m.safetensors"))
    read = {t.name: t for t in read_checkpoint(tmp_path / "m.safetensors")}
    assert read["a"].dtype == "fp32" and read["b"].dtype == "fp16"
    np.testing.assert_array_equal(read["a"].values, tensors["a"])
    np.testing.assert_array_equal(read["b"].values, tensors["b"])


def test_npz_keeps_dtype_names(tmp_path: Path) -> None:
    np.savez(tmp_path / "m.npz", w=np.ones((2, 4), dtype=np.float16))
    (tensor,) = read_checkpoint(tmp_path / "m.npz")
    assert tensor.dtype == "fp16" and tensor.values.shape == (2, 4)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x01\x02", "shorter than its 8-byte header length"),
        (struct.pack("<Q", 10**9) + b"{}", "does not fit the file"),
        (struct.pack("<Q", 4) + b"nope", "header is not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    ],
)
def test_broken_safetensors_is_one_user_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        read_checkpoint(path)


def test_shape_and_size_mismatch_names_the_tensor(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    _write_raw_safetensors(path, {"w": ("F32", [3, 3], b"\x00" * 8)})
    with pytest.raises(UserError, match="tensor 'w': 2 elements for shape \\[3, 3\\]"):
        read_checkpoint(path)


def test_other_suffix_is_refused(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(b"x")
    with pytest.raises(UserError, match="must be one of .safetensors, .npz"):
        read_checkpoint(tmp_path / "w.bin")
