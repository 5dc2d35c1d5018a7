"""The GGUF reader, the BPE tokenizer built from GGUF metadata, and the Llama forward against fp64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.gguf_file import read_gguf
from sparsedebug.sources.models.llama import LlamaDecoder, open_llama, rope, rope_pair_tables, rope_tables
from sparsedebug.sources.models.tokenize import gguf_bpe_tokenizer
from tests.sources.models.tiny import corpus_text, write_llama_gguf


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_llama_gguf(tmp_path_factory.mktemp("llama") / "tiny.gguf", seed=1)


def reference_logits(model: LlamaDecoder, ids: np.ndarray) -> np.ndarray:
    """The same decoder written plainly in fp64: rope as complex rotation, one head at a time."""
    cfg = model.config
    t = {name: value.astype(np.float64) for name, value in model.tensors.items()}
    hd, rep = cfg.head_dim, cfg.heads // cfg.kv_heads

    def norm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + cfg.rms_eps) * w

    def rotate(x: np.ndarray) -> np.ndarray:  # (T, hd), adjacent pairs as complex numbers
        pos = np.arange(len(x))[:, None]
        freq = cfg.rope_base ** (-np.arange(0, hd, 2) / hd)
        z = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * pos * freq)
        out = np.empty_like(x)
        out[:, 0::2], out[:, 1::2] = z.real, z.imag
        return out

    h = t["token_embd.weight"][ids]
    length = len(ids)
    for b in range(cfg.blocks):
        p = f"blk.{b}."
        x = norm(h, t[p + "attn_norm.weight"])
        q, k, v = (x @ t[p + name + ".weight"].T for name in ("attn_q", "attn_k", "attn_v"))
        heads = []
        for head in range(cfg.heads):
            kv = head // rep
            qh = rotate(q[:, head * hd : (head + 1) * hd])
            kh = rotate(k[:, kv * hd : (kv + 1) * hd])
            vh = v[:, kv * hd : (kv + 1) * hd]
            scores = qh @ kh.T / np.sqrt(hd)
            scores[np.triu_indices(length, 1)] = -np.inf
            probs = np.exp(scores - scores.max(axis=1, keepdims=True))
            heads.append((probs / probs.sum(axis=1, keepdims=True)) @ vh)
        h = h + np.concatenate(heads, axis=1) @ t[p + "attn_output.weight"].T
        x = norm(h, t[p + "ffn_norm.weight"])
        gate, up = x @ t[p + "ffn_gate.weight"].T, x @ t[p + "ffn_up.weight"].T
        h = h + (gate / (1 + np.exp(-gate)) * up) @ t[p + "ffn_down.weight"].T
    head_weight = t.get("output.weight", t["token_embd.weight"])
    return norm(h, t["output_norm.weight"]) @ head_weight.T


def reference_nll(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    top = logits.max(axis=1, keepdims=True)
    log_probs = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(ids) - 1), ids[1:]]


@pytest.mark.parametrize("tied", [True, False])
def test_forward_matches_fp64_reference(tmp_path: Path, tied: bool) -> None:
    model, _ = open_llama(write_llama_gguf(tmp_path / "m.gguf", seed=2, tied=tied, heads=4, kv_heads=2))
    ids = np.random.default_rng(0).integers(0, model.config.vocab, 40)
    batch = Batch.of([ids])
    got = model.token_nll(model.hidden(batch), batch)
    want = reference_nll(reference_logits(model, ids), ids)
    # fp32 forward against fp64: a few hundred roundings of unit size 6e-8 per value.
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_packed_sequences_restart_positions_and_never_attend_across(tiny_gguf: Path) -> None:
    model, _ = open_llama(tiny_gguf)
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, model.config.vocab, 17), rng.integers(0, model.config.vocab, 9)
    packed = Batch.of([a, b])
    together = model.token_nll(model.hidden(packed), packed)
    apart = np.concatenate([model.token_nll(model.hidden(Batch.of([s])), Batch.of([s])) for s in (a, b)])
    np.testing.assert_allclose(together, apart, rtol=1e-5, atol=1e-6)
    assert len(together) == 16 + 8


def test_linears_keep_the_checkpoint_names_roles_and_shared_inputs(tiny_gguf: Path) -> None:
    model, _ = open_llama(tiny_gguf)
    names = list(model.linears)
    assert names[:7] == [f"blk.0.{s}" for s in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")]
    assert len(names) == 14
    assert model.linears["blk.1.attn_v"].group == "blk.1.attn_q"
    assert model.linears["blk.1.ffn_up"].group == "blk.1.ffn_gate"
    assert model.linears["blk.0.ffn_down"].role == "mlp" and model.linears["blk.0.attn_k"].role == "attention"
    assert model.linears["blk.0.attn_k"].out_features == 16  # 2 KV heads of 8


@pytest.mark.parametrize(("quant", "tolerance"), [("F16", 2e-3), ("Q8_0", 2e-2), ("Q4_1", 0.3)])
def test_quantized_linears_dequantize_to_the_same_weights(tmp_path: Path, quant: str, tolerance: float) -> None:
    exact = read_gguf(write_llama_gguf(tmp_path / "f32.gguf", seed=4))
    quantized = read_gguf(write_llama_gguf(tmp_path / "q.gguf", seed=4, quant=quant))
    for name, value in exact.tensors.items():
        got = quantized.tensors[name]
        assert got.shape == value.shape and got.dtype == np.float32, name
        scale = float(np.abs(value).max())
        assert float(np.abs(got - value).max()) <= tolerance * scale, name
    assert quantized.tensor_types["blk.0.ffn_down.weight"] == quant
    assert quantized.tensor_types["blk.0.attn_norm.weight"] == "F32"


def test_bpe_tokenizer_from_gguf_round_trips_and_splits_digits(tiny_gguf: Path) -> None:
    checkpoint = read_gguf(tiny_gguf)
    tokenizer = gguf_bpe_tokenizer(checkpoint.metadata, "tiny")
    text = corpus_text(3)
    encoding = tokenizer.encode(text)
    assert tokenizer.decode(encoding.ids) == text
    assert len(encoding.ids) < len(text)  # merges were applied
    assert [t for t in tokenizer.encode("in 2024").tokens if t.strip("Ġ").isdigit()] == ["2", "0", "2", "4"]
    special = tokenizer.encode("a<|endoftext|>b").tokens
    assert "<|endoftext|>" in special


def test_gpt2_pre_tokenizer_keeps_digit_runs(tmp_path: Path) -> None:
    checkpoint = read_gguf(write_llama_gguf(tmp_path / "g.gguf", pre="gpt2"))
    tokenizer = gguf_bpe_tokenizer(checkpoint.metadata, "g")
    assert tokenizer.decode(tokenizer.encode("year 2024").ids) == "year 2024"


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"tokenizer.ggml.model": "llama"}, "only byte-level BPE"),
        ({"tokenizer.ggml.pre": "qwen2"}, "not supported"),
        ({"tokenizer.ggml.merges": ["nospace"]}, "malformed merge"),
    ],
)
def test_unsupported_tokenizers_are_user_errors(tiny_gguf: Path, change: dict[str, object], needle: str) -> None:
    metadata = {**read_gguf(tiny_gguf).metadata, **change}
    with pytest.raises(UserError, match=needle):
        gguf_bpe_tokenizer(metadata, "x")


def test_not_a_gguf_file_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(UserError, match="not a readable GGUF"):
        read_gguf(bad)
    with pytest.raises(UserError, match="file not found"):
        read_gguf(tmp_path / "missing.gguf")


def test_out_of_vocabulary_ids_are_refused(tiny_gguf: Path) -> None:
    model, _ = open_llama(tiny_gguf)
    with pytest.raises(UserError, match="outside the vocabulary"):
        model.embed(Batch.of([[0, model.config.vocab]]))


@pytest.mark.parametrize(("lengths", "heads", "dim"), [((7,), 3, 8), ((5, 1, 9), 2, 64), ((128,), 9, 64)])
def test_rope_rounds_bitwise_as_four_products_on_the_halves(lengths: tuple[int, ...], heads: int, dim: int) -> None:
    """The rotary's cosine pass, sine buffer and one addition give exactly ``even cos - odd sin``, ``even sin + odd cos``."""
    x = (np.random.default_rng(sum(lengths)).standard_normal((sum(lengths), heads, dim)) * 3).astype(np.float32)
    x[0, 0, :4] = [0.0, -0.0, 1e-38, -1e30]
    cos, sin = (t[:, None, :] for t in rope_tables(lengths, dim, 10000.0))
    even, odd = x[..., 0::2], x[..., 1::2]
    want = np.empty_like(x)
    want[..., 0::2] = even * cos - odd * sin
    want[..., 1::2] = even * sin + odd * cos
    got = rope(x, *rope_pair_tables(lengths, dim, 10000.0))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
