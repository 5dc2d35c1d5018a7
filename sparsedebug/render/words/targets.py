"""Phrases for the notes the target, workload, replay and model sources write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from sparsedebug.render.words.notes import Phrase

PHRASES: dict[str, Phrase] = {}
