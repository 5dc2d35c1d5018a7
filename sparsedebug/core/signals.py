"""Signals that end a command: turn them into an exception so that cleanup runs, and hold them off
around the few steps that must not be cut in half.

Python's default SIGTERM and SIGHUP handlers end the process on the spot: no ``finally``,
no ``except`` clause runs, so a temporary file or a half-built bundle stays behind.
:func:`signals_as_exceptions` makes SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted`
in the main thread instead, so every ``except BaseException`` cleanup in the atomic writers
and in ``playbook run`` runs for them as it does for Ctrl-C. A signal the parent set to be
ignored (``nohup`` ignores SIGHUP) stays ignored.

:func:`signals_deferred` holds the same signals off for a critical section (the two
renames that swap a finished bundle into place, the cleanup of a partial one): a signal
that arrives meanwhile is recorded and delivered, as :class:`Interrupted`, when the
section ends. SIGKILL cannot be caught or blocked; what it leaves behind is cleaned up
or named by the next run (``sparsedebug.playbook.bundle.clear_stale``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

# The signals that end a command cleanly (exit status 128 + the signal number).
HANDLED: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A handled signal ended the command; ``exit_code`` is 128 + the signal number, as a shell reports it.

    A ``BaseException`` like ``KeyboardInterrupt``: ``except Exception`` does not swallow it.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {self.name}")


# Depth of nested :func:`signals_deferred` blocks; while above 0 a handled signal is only recorded.
_deferring = 0
_pending: list[int] = []


def _raise(signum: int, frame: FrameType | None) -> None:
    if _deferring:
        _pending.append(signum)
        return
    raise Interrupted(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` (main thread only).

    The previous handlers come back when the block ends. Signals set to be ignored
    (``SIG_IGN``) are left alone; outside the main thread nothing is installed.
    """
    if not _main_thread():
        yield
        return
    previous: dict[signal.Signals, object] = {}
    for signum in HANDLED:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        previous[signum] = current
        signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP off for the block; one that arrived is delivered when it ends.

    Python runs signal handlers in the main thread whichever thread the kernel gave the
    signal to, so the handler itself holds the signal (a thread signal mask would not:
    another thread, such as a progress display's, would take it). Outside
    :func:`signals_as_exceptions` the handler is installed for the block alone, and a
    held signal then gets its previous disposition (the default ends the process) once
    the block is done.
    """
    global _deferring
    if not _main_thread():
        yield
        return
    previous: dict[signal.Signals, object] = {}
    for signum in HANDLED:
        current = signal.getsignal(signum)
        if current is not _raise and current is not signal.SIG_IGN:
            previous[signum] = current
            signal.signal(signum, _raise)
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        held = _pending[0] if (_pending and not _deferring) else None
        if not _deferring:
            _pending.clear()
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        if held is not None:
            if held in previous:
                signal.raise_signal(held)  # its own disposition, now restored
            else:
                raise Interrupted(held)
