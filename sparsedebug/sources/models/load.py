"""Open a model by registered name (fetched on first use) or by path, with its tokenizer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest, read_text
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.sources.models.base import Transformer
from sparsedebug.sources.models.bert import open_bert
from sparsedebug.sources.models.cache import Log, ensure_model, model_dir
from sparsedebug.sources.models.llama import open_llama
from sparsedebug.sources.models.registry import DEFAULTS, MODELS, Architecture, StudyDefaults
from sparsedebug.sources.models.tokenize import bert_tokenizer, gguf_bpe_tokenizer

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_BERT_FILES = ("config.json", "model.safetensors", "tokenizer.json")


@dataclass
class LoadedModel:
    """A model ready to run: the network, its tokenizer, and where its weights came from."""

    name: str
    source: str
    architecture: Architecture
    model: Transformer
    tokenizer: Tokenizer
    weights: FileDigest
    defaults: StudyDefaults


def load_model(argument: str, log: Log) -> LoadedModel:
    """A registered model name (fetched into the cache when missing), a Llama ``.gguf`` file, or a BERT folder.

    A BERT folder holds ``config.json``, ``model.safetensors`` and
    ``tokenizer.json`` (and optionally ``sentence_bert_config.json`` with
    ``max_seq_length``).
    """
    spec = MODELS.get(argument)
    if spec is not None:
        manifest = ensure_model(spec, log)
        root = model_dir(spec)
        log(f"{spec.name}: reading {manifest.path(root, 'weights')}")
        if spec.architecture == "llama":
            return _llama(spec.name, spec.requirement, manifest.path(root, "weights"))
        return _bert(
            spec.name,
            spec.requirement,
            weights=manifest.path(root, "weights"),
            config=manifest.path(root, "config"),
            tokenizer=manifest.path(root, "tokenizer"),
            sentence_config=manifest.path(root, "sentence_config"),
        )
    path = Path(argument)
    if path.is_file() and path.suffix.lower() == ".gguf":
        return _llama(path.stem, str(path), path)
    if path.is_dir():
        missing = [name for name in _BERT_FILES if not (path / name).is_file()]
        if missing:
            raise UserError(f"{path}: a BERT model folder needs {', '.join(_BERT_FILES)}; missing {', '.join(missing)}")
        return _bert(
            path.name,
            str(path),
            weights=path / "model.safetensors",
            config=path / "config.json",
            tokenizer=path / "tokenizer.json",
            sentence_config=path / "sentence_bert_config.json",
        )
    if path.exists():
        raise UserError(f"{path}: expected a Llama .gguf file or a BERT folder ({', '.join(_BERT_FILES)})")
    raise UserError(
        f"model {argument!r}: not a known model ({', '.join(sorted(MODELS))}), a .gguf file or a BERT folder"
    )


def _llama(name: str, source: str, path: Path) -> LoadedModel:
    model, checkpoint = open_llama(path)
    tokenizer = gguf_bpe_tokenizer(checkpoint.metadata, str(path))
    return LoadedModel(name, source, "llama", model, tokenizer, file_digest(path), DEFAULTS["llama"])


def _bert(name: str, source: str, *, weights: Path, config: Path, tokenizer: Path, sentence_config: Path) -> LoadedModel:
    model = open_bert(weights, config)
    max_length = min(_max_seq_length(sentence_config), model.config.max_positions)
    return LoadedModel(name, source, "bert", model, bert_tokenizer(tokenizer, max_length), file_digest(weights), DEFAULTS["bert"])


def _max_seq_length(path: Path) -> int:
    """``max_seq_length`` of a sentence-transformers config, else the BERT default window."""
    default = DEFAULTS["bert"].window
    if not path.is_file():
        return default
    try:
        value = json.loads(read_text(path)).get("max_seq_length", default)
    except (json.JSONDecodeError, AttributeError):
        raise UserError(f"{path}: expected a JSON object with max_seq_length") from None
    if not isinstance(value, int) or value < 2:
        raise UserError(f"{path}: max_seq_length must be an integer of at least 2, got {value!r}")
    return value
