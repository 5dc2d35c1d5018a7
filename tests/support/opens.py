"""Counting file opens with an audit hook (``sys.addaudithook`` on ``open``), for the read-once and write-once tests.

An audit hook cannot be removed, so one hook is added on first use and records only inside :func:`counting`.
Atomic writes go through a temporary sibling (``core.io.atomic_write_text``: ``.NAME.XXXXXXXX.tmp``), counted as
a write of ``NAME``.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TEMP = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.tmp$")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@dataclass
class Opens:
    """Opens seen while counting: reads and writes by resolved path (a temporary sibling as its target)."""

    reads: Counter[Path] = field(default_factory=Counter)
    writes: Counter[Path] = field(default_factory=Counter)

    def under(self, folder: Path, which: Counter[Path]) -> Counter[Path]:
        """The counts of files directly in ``folder``, by file name."""
        return Counter({Path(path.name): n for path, n in which.items() if path.parent == folder.resolve()})


_ACTIVE: list[Opens] = []
_HOOKED: list[bool] = []


def _writes(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _ACTIVE or not isinstance(args[0], (str, Path)):
        return
    path = Path(os.path.abspath(args[0]))
    temp = _TEMP.match(path.name)
    if temp is not None:
        path = path.with_name(temp["name"])
    counts = _ACTIVE[-1]
    (counts.writes if _writes(args[1], args[2]) else counts.reads)[path.resolve()] += 1


@contextmanager
def counting() -> Iterator[Opens]:
    """Count the files opened inside the block (by this process, any thread)."""
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED.append(True)
    opens = Opens()
    _ACTIVE.append(opens)
    try:
        yield opens
    finally:
        _ACTIVE.remove(opens)
