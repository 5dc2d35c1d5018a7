"""The text the quality study calibrates and evaluates on, split into disjoint parts.

The default corpus is the standard library's ``pydoc_data.topics`` (the
language reference topics ``help()`` shows): every topic in sorted key order,
joined by blank lines. It changes between Python versions, so every figure
records the Python version and the text's sha256. ``--text FILE`` replaces it.

Two deterministic splits, one per model kind:

- windows (decoder): the whole text is tokenized and cut into consecutive
  windows of ``window`` tokens; even-numbered windows are evaluation, odd ones
  calibration. A study that needs ``k`` windows takes ``k`` evenly spaced ones
  of its part, so a short study still samples the whole text.
- sentences (encoder): paragraphs (blank-line separated) are split after
  ``.``, ``!`` or ``?`` before an upper-case letter; sentences of 5 to 60 words
  that start with a capital, end with ``.``, ``!`` or ``?`` and are mostly
  letters are kept, once each. A sentence is evaluation when
  the first byte of its sha256 is even, calibration otherwise, and each part is
  taken in the order of those digests (spread over the text, stable when the
  text grows).
"""

from __future__ import annotations

import hashlib
import platform
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import read_text

DEFAULT_SOURCE = "pydoc_data.topics"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_SHAPE = re.compile(r"^[A-Z].*[.!?]$")
_MIN_WORDS, _MAX_WORDS = 5, 60
_MIN_LETTER_SHARE = 0.7


@dataclass(frozen=True)
class Corpus:
    """A text and where it came from."""

    source: str
    text: str

    @property
    def sha256(self) -> str:
        """sha256 of the UTF-8 text."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def python_version() -> str:
    """The running Python's version (the default text depends on it)."""
    return platform.python_version()


def default_corpus() -> Corpus:
    """``pydoc_data.topics``: every topic in sorted key order, joined by blank lines."""
    try:
        from pydoc_data.topics import topics
    except ImportError:
        raise UserError(f"this Python ({python_version()}) has no pydoc_data.topics; pass --text FILE") from None
    return Corpus(DEFAULT_SOURCE, "\n\n".join(topics[key] for key in sorted(topics)))


def file_corpus(path: Path) -> Corpus:
    """A UTF-8 text file; an empty one is a ``UserError``."""
    text = read_text(path)
    if not text.strip():
        raise UserError(f"{path}: the text file is empty")
    return Corpus(str(path), text)


@dataclass(frozen=True)
class WindowSplit:
    """Token windows of one text: evaluation (even) and calibration (odd)."""

    window: int
    evaluation: list[list[int]]
    calibration: list[list[int]]


def split_windows(ids: list[int], window: int) -> WindowSplit:
    """Cut ``ids`` into windows of ``window`` tokens, even ones for evaluation, odd ones for calibration."""
    windows = [ids[start : start + window] for start in range(0, len(ids) - window + 1, window)]
    return WindowSplit(window, windows[0::2], windows[1::2])


def spread(items: list[list[int]], count: int) -> list[list[int]]:
    """``count`` evenly spaced items (all of them when there are fewer)."""
    if count >= len(items):
        return list(items)
    picks = np.linspace(0, len(items) - 1, count).round().astype(int)
    return [items[int(index)] for index in picks]


def sentences(text: str) -> list[str]:
    """The text's prose sentences, once each, in order of appearance (see the module docstring)."""
    seen: set[str] = set()
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        for sentence in _SENTENCE_END.split(flat):
            words = sentence.split()
            if not _MIN_WORDS <= len(words) <= _MAX_WORDS or not _SHAPE.match(sentence):
                continue
            letters = sum(ch.isalpha() for ch in sentence)
            if letters < _MIN_LETTER_SHARE * len(sentence.replace(" ", "")):
                continue
            if sentence not in seen:
                seen.add(sentence)
                out.append(sentence)
    return out


def split_sentences(items: list[str]) -> tuple[list[str], list[str]]:
    """(evaluation, calibration): by the parity of each sentence's first sha256 byte, each in digest order."""
    keyed = sorted((hashlib.sha256(s.encode("utf-8")).digest(), s) for s in items)
    evaluation = [s for digest, s in keyed if digest[0] % 2 == 0]
    calibration = [s for digest, s in keyed if digest[0] % 2 == 1]
    return evaluation, calibration
