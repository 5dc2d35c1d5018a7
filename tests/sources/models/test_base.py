"""The shared forward pieces: prepared (fused, transposed) linears, attention against fp64, the heap setting."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.heap import retain_freed_memory
from sparsedebug.sources.models.base import SOFTMAX_SHIFT_FLOOR, Batch, PreparedLinears, attention, exp_shifted
from sparsedebug.sources.models.bert import gelu, layer_norm
from sparsedebug.sources.models.load import load_model
from tests.sources.models.tiny import write_bert_folder


def reference_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, lengths: list[int], causal: bool) -> np.ndarray:
    """fp64, keys and values repeated per query head, the textbook softmax, one sequence at a time."""
    heads, dim = q.shape[1], q.shape[2]
    repeat = heads // k.shape[1]
    out = np.zeros((q.shape[0], heads * dim))
    start = 0
    for length in lengths:
        s = slice(start, start + length)
        qs, ks, vs = (a[s].astype(np.float64).transpose(1, 0, 2) for a in (q, k, v))
        ks, vs = np.repeat(ks, repeat, axis=0), np.repeat(vs, repeat, axis=0)
        scores = qs @ ks.transpose(0, 2, 1) / np.sqrt(dim)
        if causal:
            scores = scores + np.triu(np.full((length, length), -np.inf), 1)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out[s] = (probs @ vs).transpose(1, 0, 2).reshape(length, heads * dim)
        start += length
    return out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    kv_heads=st.sampled_from([1, 2, 4]),
    repeat=st.sampled_from([1, 3]),
    causal=st.booleans(),
    scale=st.sampled_from([0.1, 1.0, 30.0]),
)
def test_attention_matches_fp64_grouped_query_reference(
    seed: int, lengths: list[int], kv_heads: int, repeat: int, causal: bool, scale: float
) -> None:
    rng = np.random.default_rng(seed)
    tokens, dim = sum(lengths), 8
    q = (rng.standard_normal((tokens, kv_heads * repeat, dim)) * scale).astype(np.float32)
    k, v = ((rng.standard_normal((tokens, kv_heads, dim)) * scale).astype(np.float32) for _ in range(2))
    got = attention(q, k, v, Batch(ids=np.zeros(tokens, dtype=np.int64), lengths=tuple(lengths)), causal=causal)
    want = reference_attention(q, k, v, lengths, causal)
    assert got.dtype == np.float32
    # fp32 scores carry an absolute error of about eps32 * |score|, which exp turns into that relative error of
    # each probability (twice: the score and its shift): the tolerance grows with the largest score (|q| |k| / sqrt(dim)) times the largest value.
    largest_score = float(np.abs(np.einsum("thd,skd->tshk", q.astype(np.float64), k.astype(np.float64))).max() / np.sqrt(dim))
    atol = 2e-5 * scale + 2 * np.finfo(np.float32).eps * largest_score * float(np.abs(v).max())
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=atol)


def test_attention_shifts_each_row_when_one_row_lies_far_below_the_largest_score() -> None:
    """One query scores ~1e4 against a key, another scores ~0 everywhere: a shift by the largest score
    would underflow the second row to zeros; the per-row shift keeps it exact."""
    dim = 4
    q = np.zeros((3, 1, dim), dtype=np.float32)
    q[0, 0, 0] = 200.0
    q[1, 0, 1] = 1e-3
    q[2, 0, 2] = -1.0
    k = np.zeros((3, 1, dim), dtype=np.float32)
    k[0, 0, 0] = 100.0
    k[1:, 0, 1:] = np.array([[0.5, 0.1, 0.0], [0.2, 0.3, 0.0]], dtype=np.float32)
    v = np.arange(12, dtype=np.float32).reshape(3, 1, dim)
    scores = np.array([[1e4, 0.0]], dtype=np.float32)
    assert np.min(exp_shifted(scores.copy(), per_row=False)) >= SOFTMAX_SHIFT_FLOOR  # the row holding the max is fine
    low = np.array([[1e4, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert np.min(exp_shifted(low, per_row=False)) < SOFTMAX_SHIFT_FLOOR  # ... the other row underflows
    got = attention(q, k, v, Batch.of([[0, 0, 0]]), causal=False)
    want = reference_attention(q, k, v, [3], causal=False)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_prepared_group_equals_each_layer_and_is_made_again_when_a_weight_is_replaced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = load_model(str(write_bert_folder(tmp_path / "tiny", seed=4)), lambda _: None).model
    names = tuple(f"encoder.layer.0.attention.self.{n}" for n in ("query", "key", "value"))
    x = np.random.default_rng(0).standard_normal((5, model.linears[names[0]].in_features)).astype(np.float32)
    group = model.prepared(names)
    assert group.weight_t.flags.c_contiguous and group.bias is not None
    assert not any(np.shares_memory(group.weight_t, model.tensor(f"{n}.weight")) for n in names)
    assert model.prepared(names) is group
    outputs = model.linear_group(names, x, None, None)
    for name, y in zip(names, outputs, strict=True):
        want = x.astype(np.float64) @ model.tensor(f"{name}.weight").T.astype(np.float64) + model.tensor(f"{name}.bias")
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    replaced = model.tensor(f"{names[1]}.weight") * 2.0
    model.tensors[f"{names[1]}.weight"] = replaced
    again = model.prepared(names)
    assert again is not group
    np.testing.assert_allclose(model.linear_group(names, x, None, None)[1], x @ replaced.T + model.tensor(f"{names[1]}.bias"),
                               rtol=1e-5, atol=1e-5)


def test_a_partly_overridden_group_runs_layer_by_layer_and_reports_every_layer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = load_model(str(write_bert_folder(tmp_path / "tiny", seed=5)), lambda _: None).model
    names = tuple(f"encoder.layer.0.attention.self.{n}" for n in ("query", "key", "value"))
    x = np.random.default_rng(1).standard_normal((4, model.linears[names[0]].in_features)).astype(np.float32)
    zeroed = {names[0]: np.zeros_like(model.tensor(f"{names[0]}.weight"))}
    seen: list[tuple[str, np.ndarray]] = []
    outputs = model.linear_group(names, x, zeroed, lambda name, xi, y: seen.append((name, y.copy())))
    assert [name for name, _ in seen] == list(names)
    np.testing.assert_allclose(outputs[0], np.broadcast_to(model.tensor(f"{names[0]}.bias"), outputs[0].shape))
    fused = model.linear_group(names, x, None, None)
    np.testing.assert_allclose(outputs[2], fused[2], rtol=1e-5, atol=1e-6)
    assert (names[0],) not in model._prepared  # the fallback makes no per-layer copies


def test_prepared_linears_without_biases_have_none_and_mixed_biases_fill_zeros() -> None:
    rng = np.random.default_rng(2)
    tensors = {"a.weight": rng.standard_normal((3, 4)).astype(np.float32), "b.weight": rng.standard_normal((2, 4)).astype(np.float32)}
    assert PreparedLinears.of(tensors, ("a", "b")).bias is None
    tensors["b.bias"] = np.ones(2, dtype=np.float32)
    group = PreparedLinears.of(tensors, ("a", "b"))
    assert group.stops == (3, 5) and group.bias is not None
    np.testing.assert_array_equal(group.bias, [0, 0, 0, 1, 1])
    x = rng.standard_normal((6, 4)).astype(np.float32)
    a, b = group.run(x)
    np.testing.assert_allclose(a, x @ tensors["a.weight"].T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, x @ tensors["b.weight"].T + 1.0, rtol=1e-5, atol=1e-6)
    # each layer's own C-contiguous output (not a column slice of one joint product), equal to the joint product's columns
    assert a.flags.c_contiguous and b.flags.c_contiguous and not np.shares_memory(a, b)
    np.testing.assert_allclose(np.concatenate([a, b], axis=1), x @ group.weight_t + group.bias, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_layer_norm_in_place_matches_fp64(scale: float) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((7, 48)) * scale + 5 * scale).astype(np.float32)
    w, b = rng.standard_normal(48).astype(np.float32), rng.standard_normal(48).astype(np.float32)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-12) * w + b
    fresh = layer_norm(x, w, b, 1e-12)
    assert not np.shares_memory(fresh, x)
    same = layer_norm(x, w, b, 1e-12, out=x)
    assert same is x and same.dtype == np.float32
    np.testing.assert_allclose(fresh, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(same, fresh)


def test_gelu_in_place_equals_a_new_array() -> None:
    x = (np.random.default_rng(4).standard_normal((5, 33)) * 4).astype(np.float32)
    fresh = gelu(x)
    assert gelu(x, out=x) is x
    np.testing.assert_array_equal(x, fresh)


def test_freed_memory_is_retained_on_glibc() -> None:
    assert retain_freed_memory() is (platform.libc_ver()[0] == "glibc")
