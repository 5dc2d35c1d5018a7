"""Phrases for the notes the importers (traces, power logs, Nsight, engines) write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from sparsedebug.render.words.notes import Phrase

PHRASES: dict[str, Phrase] = {}
