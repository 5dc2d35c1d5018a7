"""How the walk tells a person where it is: the reporter protocol the CLI implements, and the silent one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sparsedebug.records.comparability import Comparability
    from sparsedebug.records.notes import Note
    from sparsedebug.records.playbook import Step


class Reporter(Protocol):
    """How the walk tells a person where it is (the CLI draws rich progress on stderr)."""

    def step(self, step: Step, what: Note) -> None:
        """A step starts."""

    def progress(self, stage: str, done: int, total: int) -> None:
        """Replay progress inside the current step."""

    def done(self, step: Step, status: str, detail: list[Note]) -> None:
        """A step ended (``done`` or ``skipped``)."""

    def note(self, what: Note) -> None:
        """Something done outside the steps (a stale partial bundle removed, the rank set walked)."""

    def compared(self, check: Comparability, of: str | None = None) -> None:
        """A pair passed the comparability check: what was allowed to differ and what differs as a finding (``of``: which pair)."""


class QuietReporter:
    """Tells nobody: the walk run as a library call."""

    def step(self, step: Step, what: Note) -> None:
        return None

    def progress(self, stage: str, done: int, total: int) -> None:
        return None

    def done(self, step: Step, status: str, detail: list[Note]) -> None:
        return None

    def note(self, what: Note) -> None:
        return None

    def compared(self, check: Comparability, of: str | None = None) -> None:
        return None
