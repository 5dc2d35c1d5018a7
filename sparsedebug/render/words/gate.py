"""Phrases for the notes the gate and the decision write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from sparsedebug.render.words.notes import Phrase

PHRASES: dict[str, Phrase] = {}
