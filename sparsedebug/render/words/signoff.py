"""Phrases for the notes signoff (metrics, stack, movement, energy, memo) and the playbook write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from sparsedebug.render.words.notes import Phrase

PHRASES: dict[str, Phrase] = {}
