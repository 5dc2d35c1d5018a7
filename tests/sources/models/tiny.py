"""Tiny checkpoints the tests write themselves, in each real format: BERT safetensors folder, Llama GGUF.

Weights are seeded random; tokenizers are trained on a small English text with
the ``tokenizers`` package, so the same code paths as the real models run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TEXT = (
    "The cat sat on the mat. The dog ran in the park. A bird sang in the tree near the house. "
    "Python is a programming language that lets you work quickly. The river flows to the sea. "
    "Every function returns a value, and a method is a function bound to an object. "
    "Numbers such as 3, 14 and 2024 are split into digits. The weather was cold and windy today. "
)


def corpus_text(repeat: int = 40) -> str:
    """A few kilobytes of prose paragraphs (enough windows and sentences for a tiny study)."""
    sentences = [s.strip() + "." for s in TEXT.split(".") if s.strip()]
    paragraphs = []
    for index in range(repeat):
        rotated = sentences[index % len(sentences) :] + sentences[: index % len(sentences)]
        paragraphs.append(" ".join(f"{s[:-1]} number {index}." if k == 0 else s for k, s in enumerate(rotated)))
    return "\n\n".join(paragraphs)


def _bpe_vocab(text: str, vocab_size: int) -> tuple[dict[str, int], list[str]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>"],
        show_progress=False,
    )
    tokenizer.train_from_iterator([text], trainer)
    model = json.loads(tokenizer.to_str())["model"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return dict(model["vocab"]), merges


def write_llama_gguf(
    path: Path,
    *,
    seed: int = 0,
    blocks: int = 2,
    hidden: int = 32,
    ffn: int = 64,
    heads: int = 4,
    kv_heads: int = 2,
    quant: str = "F32",
    tied: bool = True,
    pre: str = "smollm",
) -> Path:
    """A Llama GGUF with seeded weights (``quant``: F32, F16, Q8_0 or Q4_1 for the linears) and a BPE vocabulary."""
    import gguf
    from gguf import GGMLQuantizationType, quants

    vocab, merges = _bpe_vocab(corpus_text(), 320)
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(blocks)
    writer.add_context_length(1024)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(head_dim)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types([3 if token.startswith("<|") else 1 for token in tokens])
    writer.add_token_merges(merges)
    qtype = GGMLQuantizationType[quant]

    def dense(name: str, shape: tuple[int, ...], scale: float) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def linear(name: str, shape: tuple[int, int]) -> None:
        value = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
        if qtype in (GGMLQuantizationType.F32,):
            writer.add_tensor(name, value)
        else:
            writer.add_tensor(name, quants.quantize(value, qtype), raw_dtype=qtype)

    dense("token_embd.weight", (len(tokens), hidden), 0.5)
    for b in range(blocks):
        p = f"blk.{b}."
        writer.add_tensor(p + "attn_norm.weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        writer.add_tensor(p + "ffn_norm.weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        linear(p + "attn_q.weight", (hidden, hidden))
        linear(p + "attn_k.weight", (kv_heads * head_dim, hidden))
        linear(p + "attn_v.weight", (kv_heads * head_dim, hidden))
        linear(p + "attn_output.weight", (hidden, hidden))
        linear(p + "ffn_gate.weight", (ffn, hidden))
        linear(p + "ffn_up.weight", (ffn, hidden))
        linear(p + "ffn_down.weight", (hidden, ffn))
    writer.add_tensor("output_norm.weight", np.ones(hidden, dtype=np.float32))
    if not tied:
        dense("output.weight", (len(tokens), hidden), 0.5)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_bert_folder(
    folder: Path, *, seed: int = 0, blocks: int = 2, hidden: int = 32, ffn: int = 64, heads: int = 4, max_length: int = 64
) -> Path:
    """A BERT folder: config.json, model.safetensors (seeded) and a WordPiece tokenizer.json that pads to 128."""
    from safetensors.numpy import save_file
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=400, special_tokens=specials, show_progress=False)
    tokenizer.train_from_iterator([corpus_text()], trainer)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tokenizer.enable_padding(length=128, pad_id=0, pad_token="[PAD]")  # as the real MiniLM tokenizer.json does
    tokenizer.save(str(folder / "tokenizer.json"))
    vocab = tokenizer.get_vocab_size()
    config = {
        "model_type": "bert", "hidden_size": hidden, "num_hidden_layers": blocks, "num_attention_heads": heads,
        "intermediate_size": ffn, "hidden_act": "gelu", "layer_norm_eps": 1e-12, "max_position_embeddings": 128,
        "vocab_size": vocab, "type_vocab_size": 2, "position_embedding_type": "absolute",
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_length}), encoding="utf-8")
    rng = np.random.default_rng(seed)

    def rand(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": rand(vocab, hidden, scale=1.0),
        "embeddings.position_embeddings.weight": rand(128, hidden),
        "embeddings.token_type_embeddings.weight": rand(2, hidden),
        "embeddings.LayerNorm.weight": 1.0 + rand(hidden, scale=0.1),
        "embeddings.LayerNorm.bias": rand(hidden, scale=0.1),
        "embeddings.position_ids": np.arange(128, dtype=np.int64)[None, :],
    }
    for b in range(blocks):
        p = f"encoder.layer.{b}."
        for name, (out, inp) in {
            "attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
            "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
            "intermediate.dense": (ffn, hidden), "output.dense": (hidden, ffn),
        }.items():  # fmt: skip
            tensors[p + name + ".weight"] = rand(out, inp, scale=1.0 / np.sqrt(inp))
            tensors[p + name + ".bias"] = rand(out, scale=0.05)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[p + norm + ".weight"] = 1.0 + rand(hidden, scale=0.1)
            tensors[p + norm + ".bias"] = rand(hidden, scale=0.1)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder
