"""Quality of a model variant against the dense model on real text, with what it was measured on.

An encoder is compared by its sentence embeddings: ``cosine`` is the mean
per-sentence cosine to the dense model's embedding (``cosine_min`` the
smallest), ``neighbour_agreement`` the share of sentences whose nearest other
sentence is the same as under the dense model, ``rel_err`` the Frobenius
relative error of the embeddings. A decoder is compared by its perplexity on
the evaluation windows (``perplexity`` against ``dense_perplexity``); its
``cosine`` and ``rel_err`` are those of the final hidden states over every
token. The reference is the dense model as the checkpoint has it (fp32,
unpruned, plain products). Every figure carries a
:class:`~sparsedebug.records.run.QualityEvidence`: model, text and its sha256,
Python version, sentences or windows, tokens, metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sparsedebug.records.run import QualityDelta, QualityEvidence
from sparsedebug.sources.models.base import Array, Batch, Transformer
from sparsedebug.sources.models.bert import BertEncoder
from sparsedebug.sources.models.llama import LlamaDecoder
from sparsedebug.sources.models.load import LoadedModel
from sparsedebug.sources.models.metrics import embedding_agreement, perplexity
from sparsedebug.sources.models.text import python_version
from sparsedebug.sources.replay.checkpoint.data import ModelData

# Most tokens per evaluation forward (bounds memory).
EVAL_CHUNK = 4096

# What the quality figures measure, by id (render.words.targets.QUALITY_METRICS words them): encoders, the mean
# sentence-embedding cosine vs the dense model; decoders, perplexity on the evaluation windows.
ENCODER_METRIC = "sentence_embedding_cosine"
DECODER_METRIC = "perplexity_windows"
REFERENCE = "the dense model (fp32, unpruned, as the checkpoint has it)"


@dataclass(frozen=True)
class Outputs:
    """What a variant computes on the evaluation batch: embeddings (encoder) or hidden states and NLL (decoder)."""

    # Sentence embeddings ``(sentences, d)`` or final hidden states ``(tokens, d)``.
    values: npt.NDArray[np.float64]
    nll: npt.NDArray[np.float64] | None = None


def evaluate(model: Transformer, batch: Batch, overrides: Mapping[str, Array] | None = None) -> Outputs:
    """Run ``model`` (with replacement weights or kernels) over ``batch`` in chunks of whole sequences."""
    values: list[npt.NDArray[np.float64]] = []
    losses: list[npt.NDArray[np.float64]] = []
    for chunk in batch.split(EVAL_CHUNK):
        h = model.hidden(chunk, overrides)
        if isinstance(model, BertEncoder):
            values.append(model.sentence_embeddings(h, chunk).astype(np.float64))
        else:
            values.append(h.astype(np.float64))
            if isinstance(model, LlamaDecoder):
                losses.append(model.token_nll(h, chunk))
    return Outputs(np.concatenate(values), np.concatenate(losses) if losses else None)


def quality_delta(out: Outputs, reference: Outputs, evidence: QualityEvidence) -> QualityDelta:
    """The variant's figures against the reference's (see the module docstring)."""
    a, b = out.values, reference.values
    ref_norm = float(np.linalg.norm(b))
    rel = float(np.linalg.norm(a - b) / ref_norm) if ref_norm > 0 else float(np.linalg.norm(a - b))
    if out.nll is not None and reference.nll is not None:
        denom = float(np.linalg.norm(a) * ref_norm)
        return QualityDelta(
            cosine=float(np.sum(a * b) / denom) if denom > 0 else 0.0, rel_err=rel,
            perplexity=perplexity(out.nll), dense_perplexity=perplexity(reference.nll), evidence=evidence,
        )  # fmt: skip
    agreement = embedding_agreement(b, a)
    return QualityDelta(
        cosine=agreement.cosine_mean, rel_err=rel, cosine_min=agreement.cosine_min,
        neighbour_agreement=agreement.neighbour_agreement, evidence=evidence,
    )  # fmt: skip


def evidence_of(loaded: LoadedModel, name: str, data: ModelData) -> QualityEvidence:
    """What the quality figures of a replay of ``loaded`` on ``data`` were measured on."""
    from sparsedebug.sources.models.registry import MODELS

    split = data.study.split
    spec = MODELS.get(name)
    return QualityEvidence(
        model=name, model_source=loaded.source, model_description=spec.description if spec is not None else None,
        metric=DECODER_METRIC if loaded.model.kind == "decoder" else ENCODER_METRIC,
        text=data.corpus.source, text_sha256=data.corpus.sha256, python_version=python_version(),
        unit=split.unit, units=split.evaluation_units, tokens=split.evaluation_tokens, reference=REFERENCE,
    )  # fmt: skip


def better(candidate: QualityDelta, other: QualityDelta) -> bool:
    """Whether ``candidate`` is the better quality: lower perplexity when both have one, else higher cosine."""
    if candidate.perplexity is not None and other.perplexity is not None:
        return candidate.perplexity < other.perplexity
    return candidate.cosine > other.cosine
