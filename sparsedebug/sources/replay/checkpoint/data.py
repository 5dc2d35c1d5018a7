"""The real text a model workload calibrates, times and evaluates on.

The text is the workload's ``model.text`` file or, by default, the standard
library's ``pydoc_data.topics``, split by :mod:`sparsedebug.sources.models.data` into
disjoint evaluation and calibration parts (sentences for an encoder, windows
for a decoder). From the evaluation part:

- the **quality** figures use its sentences or windows, about
  ``model.eval_tokens`` tokens (default :data:`DEFAULT_EVAL_TOKENS`);
- the **timed forward** is ``tokens.batch`` sequences of ``tokens.sequence``
  tokens cut, in order, from the same part's token ids (a sequence may span
  sentence boundaries: timing does not depend on where sentences end).

Calibration (Wanda, SparseGPT, the importance of FFN neurons for the
equal-latency model) uses about ``pruning.calibration_tokens`` tokens of the
calibration part (default :data:`DEFAULT_CALIBRATION_TOKENS`, capped per
architecture). The defaults keep a MiniLM replay to a few seconds of
calibration and evaluation on two cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sparsedebug.core.errors import UserError
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.data import StudyData, prepare_data
from sparsedebug.sources.models.load import LoadedModel
from sparsedebug.sources.models.text import Corpus, default_corpus, file_corpus
from sparsedebug.sources.workload.schema import Workload

# Evaluation tokens of a model workload's quality figures (about 32 MiniLM sentences, two SmolLM2 windows).
DEFAULT_EVAL_TOKENS = 1024

# Calibration tokens of a model workload's pruning and neuron importance.
DEFAULT_CALIBRATION_TOKENS = 1024

_DATA: dict[tuple[str, str, int, int, int, int], ModelData] = {}
_KEEP = 4


@dataclass(frozen=True)
class ModelData:
    """The corpus, its evaluation and calibration batches, and the timed batch."""

    corpus: Corpus
    study: StudyData
    timed: Batch

    @property
    def evaluation(self) -> Batch:
        """The quality figures' sentences or windows."""
        return self.study.evaluation

    @property
    def calibration(self) -> Batch:
        """The calibration sentences or windows."""
        return self.study.calibration


def corpus_of(workload: Workload) -> Corpus:
    """The workload's text: ``model.text`` or ``pydoc_data.topics``."""
    assert workload.model is not None
    text = workload.model.text
    return default_corpus() if text is None else file_corpus(Path(text))


def model_data(workload: Workload, loaded: LoadedModel, key: str) -> ModelData:
    """Evaluation, calibration and timed batches of ``workload`` for ``loaded`` (``key`` names the model; kept per process)."""
    assert workload.model is not None
    corpus = corpus_of(workload)
    tokens = workload.tokens
    evaluation = workload.model.eval_tokens or DEFAULT_EVAL_TOKENS
    calibration = workload.pruning.calibration_tokens or DEFAULT_CALIBRATION_TOKENS
    limit = _positions(loaded)
    if limit is not None and tokens.sequence > limit:
        raise UserError(f"tokens.sequence: {tokens.sequence} exceeds the {limit} positions of model {workload.model.name}")
    cache_key = (key, corpus.sha256, max(evaluation, tokens.total), calibration, tokens.batch, tokens.sequence)
    cached = _DATA.get(cache_key)
    if cached is not None:
        return cached
    study = prepare_data(loaded, corpus, cache_key[2], calibration)
    ids = study.evaluation.ids
    if len(ids) < tokens.total:
        raise UserError(
            f"tokens: {tokens.batch}x{tokens.sequence} = {tokens.total} timed tokens, but the evaluation part of "
            f"{corpus.source} gives only {len(ids)}; use fewer tokens or a longer text"
        )
    timed = Batch(ids=np.ascontiguousarray(ids[: tokens.total]), lengths=(tokens.sequence,) * tokens.batch)
    data = ModelData(corpus, study, timed)
    while len(_DATA) >= _KEEP:
        _DATA.pop(next(iter(_DATA)))
    _DATA[cache_key] = data
    return data


def _positions(loaded: LoadedModel) -> int | None:
    """Most positions one sequence may have (BERT's position table); None when unbounded (rotary positions)."""
    config = getattr(loaded.model, "config", None)
    value = getattr(config, "max_positions", None)
    return int(value) if isinstance(value, int) else None
