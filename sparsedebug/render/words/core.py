"""Phrases for the notes core, reduce, kernels, freeze and quality write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from sparsedebug.render.words.notes import Phrase

PHRASES: dict[str, Phrase] = {}
