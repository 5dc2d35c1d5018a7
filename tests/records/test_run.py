"""The run record's typed values: a layer's declared sparsity is canonical once validated."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sparsedebug.core.patterns import declared_sparse
from sparsedebug.kernels.masks import intent_pattern
from sparsedebug.records.run import DENSE, GraphLayer, canonical_intent


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("dense", DENSE), (" Dense ", DENSE), ("", DENSE), ("2:4", "2:4"), (" 2:4 ", "2:4"), ("02:04", "2:4"), ("64:2:4", "64:2:4")],
)
def test_intent_is_canonical(text: str, canonical: str) -> None:
    assert canonical_intent(text) == canonical
    layer = GraphLayer(name="l", op="linear", dtype="fp16", intended=text)
    assert layer.intended == canonical
    assert declared_sparse(layer.intended) == (canonical != DENSE)


@pytest.mark.parametrize("text", ["2-4", "sparse", "2:4:8:16", "a:b"])
def test_unreadable_intent_is_refused_on_load(text: str) -> None:
    with pytest.raises(ValidationError, match="expected 'dense', 'N:M' or 'V:N:M'"):
        GraphLayer(name="l", op="linear", dtype="fp16", intended=text)


def test_intent_pattern_reads_the_canonical_text() -> None:
    pattern = intent_pattern("64:2:4")
    assert pattern is not None and (pattern.block, pattern.n, pattern.m) == (64, 2, 4)
    assert intent_pattern(DENSE) is None and intent_pattern(None) is None
    assert intent_pattern("4:2") is None  # N >= M: no kernel could run it
