"""The BERT encoder against a padded-and-masked fp64 reference, its tokenizer, and bad checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf

from sparsedebug.core.errors import UserError
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.bert import BertEncoder, open_bert
from sparsedebug.sources.models.load import load_model
from tests.sources.models.tiny import write_bert_folder

SENTENCES = ["The cat sat on the mat.", "A bird sang in the tree near the house today.", "Python is a language."]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bert_folder(tmp_path_factory.mktemp("bert") / "tiny", seed=3)


def reference_embeddings(model: BertEncoder, sequences: list[list[int]]) -> np.ndarray:
    """fp64, padded to the longest sentence with an additive attention mask, as Hugging Face runs BERT."""
    cfg = model.config
    t = {name: value.astype(np.float64) for name, value in model.tensors.items()}
    width = max(map(len, sequences))
    ids = np.zeros((len(sequences), width), dtype=np.int64)
    valid = np.zeros((len(sequences), width), dtype=bool)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)], valid[row, : len(seq)] = seq, True

    def ln(x: np.ndarray, name: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg.eps) * t[name + ".weight"] + t[name + ".bias"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ t[name + ".weight"].T + t[name + ".bias"]

    h = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][np.arange(width)]
    h = ln(h + t["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    hd = cfg.hidden // cfg.heads
    mask = np.where(valid, 0.0, -1e9)[:, None, None, :]
    for b in range(cfg.blocks):
        p = f"encoder.layer.{b}."
        def split(x):
            return x.reshape(len(sequences), width, cfg.heads, hd).transpose(0, 2, 1, 3)
        q, k, v = (split(dense(h, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + mask
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(len(sequences), width, cfg.hidden)
        h = ln(dense(context, p + "attention.output.dense") + h, p + "attention.output.LayerNorm")
        inner = dense(h, p + "intermediate.dense")
        inner = 0.5 * inner * (1 + erf(inner / np.sqrt(2)))
        h = ln(dense(inner, p + "output.dense") + h, p + "output.LayerNorm")
    pooled = (h * valid[..., None]).sum(1) / valid.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_packed_forward_matches_padded_masked_fp64_reference(folder: Path) -> None:
    loaded = load_model(str(folder), lambda _: None)
    model = loaded.model
    assert isinstance(model, BertEncoder)
    sequences = [list(e.ids) for e in loaded.tokenizer.encode_batch(SENTENCES)]
    batch = Batch.of(sequences)
    got = model.sentence_embeddings(model.hidden(batch), batch)
    want = reference_embeddings(model, sequences)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-6)


def test_tokenizer_padding_is_off_and_truncation_follows_the_sentence_config(folder: Path) -> None:
    loaded = load_model(str(folder), lambda _: None)
    encodings = loaded.tokenizer.encode_batch(SENTENCES)
    lengths = [len(e.ids) for e in encodings]
    assert len(set(lengths)) == 3 and max(lengths) < 128  # tokenizer.json pads to 128; we turned that off
    assert all(0 not in e.ids for e in encodings)  # no [PAD]
    assert encodings[0].tokens[0] == "[CLS]" and encodings[0].tokens[-1] == "[SEP]"
    long = loaded.tokenizer.encode("word " * 500)
    assert len(long.ids) == 64  # sentence_bert_config.json max_seq_length


def test_linears_keep_the_checkpoint_names(folder: Path) -> None:
    model = load_model(str(folder), lambda _: None).model
    assert "encoder.layer.1.intermediate.dense" in model.linears
    assert model.linears["encoder.layer.0.attention.self.value"].group == "encoder.layer.0.attention.self.query"
    assert model.linears["encoder.layer.0.output.dense"].role == "mlp"
    assert model.linears["encoder.layer.0.attention.output.dense"].role == "attention"
    assert len(model.linears) == 12


def test_bad_config_and_folder_are_user_errors(folder: Path, tmp_path: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(UserError, match="only 'bert'"):
        open_bert(folder / "model.safetensors", bad)
    bad.write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(UserError, match="hidden_act"):
        open_bert(folder / "model.safetensors", bad)
    bad.write_text("{not json")
    with pytest.raises(UserError, match="malformed JSON"):
        open_bert(folder / "model.safetensors", bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="missing config.json, model.safetensors, tokenizer.json"):
        load_model(str(empty), lambda _: None)
    with pytest.raises(UserError, match="not a known model"):
        load_model("no-such-model", lambda _: None)


def test_truncated_safetensors_is_a_user_error(folder: Path, tmp_path: Path) -> None:
    broken = tmp_path / "model.safetensors"
    broken.write_bytes((folder / "model.safetensors").read_bytes()[:100])
    with pytest.raises(UserError, match=r"model.safetensors: (cannot read safetensors|tensor .*truncated)"):
        open_bert(broken, folder / "config.json")


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([0.1, 1.0, 3.0, 10.0, 40.0]))
def test_gelu_matches_fp64_erf_within_fp32_roundoff(seed: int, scale: float) -> None:
    """fp32 GELU against exact GELU in fp64 (scipy's erfc): within 8 fp32 unit roundoffs of |x|,
    and of |GELU(x)| itself on the negative tail, where 1 + erf would cancel."""
    from scipy.special import erfc

    from sparsedebug.kernels.precision import unit_roundoff
    from sparsedebug.sources.models.bert import gelu

    x = (np.random.default_rng(seed).standard_normal(4096) * scale).astype(np.float32)
    x[:6] = [0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0]
    got = gelu(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * erfc(-x64 / np.sqrt(2.0))
    u = unit_roundoff("fp32")
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= 8 * u * np.abs(x64)), float(np.max(err / np.maximum(np.abs(x64), 1e-300)) / u)
    tail = (x64 < -1.0) & (x64 > -9.0)
    assert np.all(err[tail] <= 1e-4 * np.abs(want[tail]))
