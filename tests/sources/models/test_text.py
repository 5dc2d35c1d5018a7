"""The corpus and its deterministic, disjoint evaluation/calibration splits."""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.models.text import (
    DEFAULT_SOURCE,
    default_corpus,
    file_corpus,
    python_version,
    sentences,
    split_sentences,
    split_windows,
    spread,
)


def test_default_corpus_is_pydoc_topics_in_key_order() -> None:
    from pydoc_data.topics import topics

    corpus = default_corpus()
    assert corpus.source == DEFAULT_SOURCE
    first = min(topics)
    assert corpus.text.startswith(topics[first])
    assert corpus.sha256 == hashlib.sha256(corpus.text.encode()).hexdigest()
    assert default_corpus().sha256 == corpus.sha256  # deterministic
    assert python_version() == platform.python_version()


def test_windows_alternate_and_never_overlap() -> None:
    ids = list(range(1050))
    split = split_windows(ids, 100)
    assert [w[0] for w in split.evaluation] == [0, 200, 400, 600, 800, 1000][:5]
    assert [w[0] for w in split.calibration] == [100, 300, 500, 700, 900]
    assert all(len(w) == 100 for w in split.evaluation + split.calibration)  # the 50-token tail is dropped
    used_eval = {t for w in split.evaluation for t in w}
    used_cal = {t for w in split.calibration for t in w}
    assert not used_eval & used_cal


def test_spread_takes_evenly_spaced_windows() -> None:
    items = [[i] for i in range(10)]
    assert spread(items, 3) == [[0], [4], [9]] or spread(items, 3) == [[0], [5], [9]]
    assert spread(items, 1) == [[0]]
    assert spread(items, 50) == items


def test_sentences_keep_prose_once_and_drop_code_and_fragments() -> None:
    text = (
        "The assert statement is a convenient way to insert debugging assertions.\n"
        "It continues here on a new line. Short one.\n\n"
        "   assert_stmt ::= \"assert\" expression [\",\" expression]\n\n"
        "The assert statement is a convenient way to insert debugging assertions."
    )
    got = sentences(text)
    assert got == [
        "The assert statement is a convenient way to insert debugging assertions.",
        "It continues here on a new line.",
    ]


def test_sentence_split_is_disjoint_deterministic_and_order_free() -> None:
    items = [f"This is sentence number {i} of the test corpus." for i in range(200)]
    evaluation, calibration = split_sentences(items)
    assert set(evaluation).isdisjoint(calibration) and len(evaluation) + len(calibration) == 200
    assert 60 < len(evaluation) < 140  # about half by the digest's parity
    shuffled = list(reversed(items))
    assert split_sentences(shuffled) == (evaluation, calibration)
    # Adding sentences never moves an existing one to the other part.
    more_eval, more_cal = split_sentences(items + ["A brand new sentence that was added later on."])
    assert set(evaluation) <= set(more_eval) and set(calibration) <= set(more_cal)


def test_file_corpus(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("Some text of mine.", encoding="utf-8")
    assert file_corpus(path).text == "Some text of mine." and file_corpus(path).source == str(path)
    path.write_text("  \n", encoding="utf-8")
    with pytest.raises(UserError, match="empty"):
        file_corpus(path)
    with pytest.raises(UserError, match="file not found"):
        file_corpus(tmp_path / "missing.txt")
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UserError, match="not UTF-8"):
        file_corpus(path)
