"""What a file holds, from its first bytes and its ``kind`` field: a run record, a workload or a trace.

The low end of the input door (``sources.detect``): the workload loader refuses a run record or a
trace by name through :func:`sniff_as`, and so does every command that loads a run.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, reading

RunKind = Literal["run", "workload", "trace"]
"""What a BASE/CAND file holds."""

RUN_KINDS: tuple[RunKind, ...] = ("run", "workload", "trace")

_WHAT: dict[RunKind, str] = {
    "run": "a run record (kind: run)",
    "workload": "a workload (kind: workload)",
    "trace": "a PyTorch trace (.json/.json.gz with traceEvents)",
}
_RECORD_KINDS: tuple[RunKind, ...] = ("run", "workload")
"""The kinds that are records with a ``kind`` field (a trace is recognised by its events)."""
WORKLOAD_ONLY: tuple[RunKind, ...] = ("workload",)
"""The kinds a workload loader accepts."""


_GZIP_MAGIC = b"\x1f\x8b"
_HEAD = 65536


def _head(path: Path) -> bytes:
    with reading(path), path.open("rb") as handle:
        return handle.read(_HEAD)


def _binary(head: bytes) -> bool:
    """Whether a file's first bytes are not text: a NUL byte, or bytes that are not UTF-8 (a cut last character aside)."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3 or len(head) < _HEAD
    return False


def sniff(path: Path) -> tuple[RunKind | None, Any]:
    """The kind of ``path`` (None when its ``kind`` is none of ours) and its parsed data (None for a trace).

    ``.json.gz`` is a trace; ``.json`` is a trace when its head mentions
    ``traceEvents`` (or it is a bare event array); anything else is parsed and read
    by its ``kind`` field.
    """
    name = path.name.lower()
    if name.endswith(".gz"):
        return "trace", None
    if not path.is_file():
        raise UserError(f"{path}: file not found" if not path.exists() else f"{path}: is a directory, expected a file")
    head = _head(path)
    if head.startswith(_GZIP_MAGIC):
        return "trace", None  # a compressed trace under another name: the importer reads it by its magic bytes
    if _binary(head):
        raise UserError(f"{path}: binary data, not {choices(RUN_KINDS)}")
    if name.endswith(".json"):
        text = head.decode("utf-8", errors="replace")
        if '"traceEvents"' in text or text.lstrip().startswith("["):
            return "trace", None
    data = load_data(path)
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "run":
        return "run", data
    if kind == "workload":
        return "workload", data
    return None, data


def sniff_as(path: Path, accept: Collection[RunKind]) -> tuple[RunKind, Any]:
    """Like ``sniff``, refusing kinds outside ``accept``.

    A file without a ``kind`` field is read as the one record kind (run or
    workload) that ``accept`` names, when it names exactly one: both records
    default their ``kind``, and validating it names what is wrong.
    """
    kind, data = sniff(path)
    if kind is None:
        records = [k for k in _RECORD_KINDS if k in accept]
        if len(records) == 1 and not (isinstance(data, dict) and "kind" in data):
            return records[0], data  # validation says what is wrong with it
        found = data.get("kind") if isinstance(data, dict) else None
        raise UserError(f"{path}: kind: expected {choices(accept)}, got {found!r}")
    if kind not in accept:
        raise UserError(f"{path}: is {_WHAT[kind]}; expected {choices(accept)}")
    return kind, data


def choices(kinds: Collection[RunKind]) -> str:
    """'a run record (kind: run), a workload (kind: workload) or a PyTorch trace (...)'."""
    names = [_WHAT[kind] for kind in RUN_KINDS if kind in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
