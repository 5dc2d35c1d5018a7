"""What a file holds, from its first bytes and its ``kind`` field: a run record, a workload or an imported artifact.

The low end of the input door (``sources.detect``): the importers registered in ``sources.registry``
are asked first (a trace, a TensorRT engine's exports), then a record is read by its ``kind`` field.
The workload loader refuses a run record or a trace by name through :func:`sniff_as`, and so does
every command that loads a run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import check_input_file, parse_data, reading
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.sources.registry import input_kind, kind_names, record_kind, sniffed

# What a BASE/CAND file holds: the name of a registered input kind (``sources.registry``).
RunKind = str


def run_kinds() -> tuple[RunKind, ...]:
    """Every input kind a BASE/CAND may be, importers first (the registry's order)."""
    return kind_names()


# The kinds a workload loader accepts.
WORKLOAD_ONLY: tuple[RunKind, ...] = ("workload",)


_GZIP_MAGIC = b"\x1f\x8b"
_HEAD = 65536


def _binary(head: bytes) -> bool:
    """Whether a file's first bytes are not text: a NUL byte, or bytes that are not UTF-8 (a cut last character aside)."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3 or len(head) < _HEAD
    return False


def _read(path: Path, accept: Collection[RunKind] | None) -> tuple[RunKind | None, Any, FileDigest | None]:
    """:func:`sniff`, and the digest of the bytes read when the file was read whole (one open of the file)."""
    if path.name.lower().endswith(".gz") and (found := sniffed(path, b"", accept)) is not None:
        return found.name, None, None  # a compressed artifact: the importer reads it whole
    if path.is_dir():
        found = sniffed(path, None, accept)
        if found is not None:
            return found.name, None, None
        raise UserError(f"{path}: is a directory, expected a file (or a folder of {choices([k for k in run_kinds() if input_kind(k).folder])})")
    check_input_file(path)
    with reading(path), path.open("rb") as handle:
        head = handle.read(_HEAD)
        found = sniffed(path, head, accept)
        if found is not None:
            return found.name, None, None
        if head.startswith(_GZIP_MAGIC) or _binary(head):
            raise UserError(f"{path}: binary data, not {choices(run_kinds())}")
        raw = head + handle.read()
        text = raw.decode("utf-8")
    data = parse_data(text, path)
    kind = data.get("kind") if isinstance(data, dict) else None
    named = record_kind(kind) if isinstance(kind, str) else None
    return named, data, digest_of(path, raw)


def digest_of(path: Path, raw: bytes) -> FileDigest:
    """The digest of ``path`` from its bytes, as ``core.io.file_digest`` takes it from the file."""
    return FileDigest(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), size_bytes=len(raw))


def sniff(path: Path, accept: Collection[RunKind] | None = None) -> tuple[RunKind | None, Any]:
    """The kind of ``path`` (None when its ``kind`` is none of ours) and its parsed data (None for an imported artifact).

    The registered importers' sniffs are asked first, in registration order (a trace:
    ``.json.gz``, gzip bytes, or ``.json`` whose head has ``traceEvents``; a TensorRT engine
    export: ``Layers`` with ``LayerType``, or a folder holding one); anything else is parsed and
    read by its ``kind`` field. ``accept`` limits the importers asked (so a file two could read
    goes to the one the caller takes).
    """
    kind, data, _ = _read(path, accept)
    return kind, data


def read_as(path: Path, accept: Collection[RunKind]) -> tuple[RunKind, Any, FileDigest | None]:
    """Read ``path`` once as one of the kinds ``accept`` names (:func:`sniff`), refusing the others: its kind, its
    parsed data and, when it was read whole here, its digest (``sources.detect.read_input`` holds the three).

    A file without a ``kind`` field is read as the one record kind (run or
    workload) that ``accept`` names, when it names exactly one: both records
    default their ``kind``, and validating it names what is wrong.
    """
    kind, data, digest = _read(path, None)
    if kind is None:
        records = [k for k in accept if record_kind(k) is not None]
        if len(records) == 1 and not (isinstance(data, dict) and "kind" in data):
            return records[0], data, digest  # validation says what is wrong with it
        found = data.get("kind") if isinstance(data, dict) else None
        raise UserError(f"{path}: kind: expected {choices(accept)}, got {found!r}")
    if kind not in accept:
        raise UserError(f"{path}: is {input_kind(kind).what}; expected {choices(accept)}")
    return kind, data, digest


def sniff_as(path: Path, accept: Collection[RunKind]) -> tuple[RunKind, Any]:
    """Like ``sniff``, refusing kinds outside ``accept`` (:func:`read_as`)."""
    kind, data, _ = read_as(path, accept)
    return kind, data


def choices(kinds: Collection[RunKind]) -> str:
    """'a run record (kind: run), a workload (kind: workload) or a PyTorch trace (...)'."""
    names = [input_kind(kind).what for kind in run_kinds() if kind in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
