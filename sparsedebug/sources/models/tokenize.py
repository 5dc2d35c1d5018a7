"""Tokenizers for the real models, built with the ``tokenizers`` package.

BERT: the checkpoint's ``tokenizer.json`` with padding turned off (it pads to a
fixed 128 by default) and truncation at the sentence model's maximum length.
Llama GGUF: a byte-level BPE built from the vocabulary and merges stored in the
GGUF metadata, with the pre-tokenizer the file names (``smollm`` splits digits
one by one before the GPT-2 pattern, as llama.cpp does).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparsedebug.core.errors import UserError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# GGUF token type of control tokens (``<|endoftext|>``, ``<|im_start|>``).
_CONTROL = 3

_PRE_TOKENIZERS = ("gpt2", "smollm")


def bert_tokenizer(path: Path, max_length: int) -> Tokenizer:
    """The ``tokenizer.json`` at ``path``, unpadded, truncating at ``max_length`` tokens."""
    from tokenizers import Tokenizer

    if not path.is_file():
        raise UserError(f"{path}: file not found")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the Rust side raises plain Exception for any parse error
        raise UserError(f"{path}: not a tokenizers JSON file ({exc})") from None
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def gguf_bpe_tokenizer(metadata: dict[str, Any], source: str) -> Tokenizer:
    """A byte-level BPE tokenizer from a GGUF file's ``tokenizer.ggml.*`` metadata."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    kind = metadata.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise UserError(f"{source}: tokenizer.ggml.model is {kind!r}; only byte-level BPE ('gpt2') is supported")
    pre = metadata.get("tokenizer.ggml.pre", "gpt2")
    if pre not in _PRE_TOKENIZERS:
        raise UserError(f"{source}: tokenizer.ggml.pre {pre!r} is not supported (supported: {', '.join(_PRE_TOKENIZERS)})")
    tokens = metadata.get("tokenizer.ggml.tokens")
    merges = metadata.get("tokenizer.ggml.merges")
    if not tokens or merges is None:
        raise UserError(f"{source}: GGUF metadata lacks tokenizer.ggml.tokens or tokenizer.ggml.merges")
    vocab = {str(token): index for index, token in enumerate(tokens)}
    pairs = []
    for merge in merges:
        left, sep, right = str(merge).partition(" ")
        if not sep:
            raise UserError(f"{source}: tokenizer.ggml.merges: malformed merge {merge!r}")
        pairs.append((left, right))
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    types = metadata.get("tokenizer.ggml.token_type") or []
    control = [str(tokens[i]) for i, kind_id in enumerate(types) if int(kind_id) == _CONTROL]
    if control:
        tokenizer.add_special_tokens([AddedToken(token, special=True) for token in control])
    return tokenizer
