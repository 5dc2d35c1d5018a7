"""Phrases for the notes classify's compute, scheduling and thermal rules, attribution and scoring write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from sparsedebug.render.words.notes import Phrase

PHRASES: dict[str, Phrase] = {}
