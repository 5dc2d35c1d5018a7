"""Device activity as a profiler database lists it: what the Nsight Systems and rocprofv3 readers hand on.

Shared by the readers of profiler exports (``importers.nsys``, ``importers.rocprof``) and the trace
importer's adapter (``trace.read.activity``), which turns an :class:`Activity` into the same events a
PyTorch trace gives, so that one pipeline computes layers, iterations, busy and span for all of them.
A reader imports only this module; it never imports the trace importer or another reader.

Times are integer nanoseconds on the profile's own clock, as the databases store them.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sparsedebug.core.errors import UserError

# What a timed device record is: a kernel, a memory copy or a memory set.
WorkKind = Literal["kernel", "memcpy", "memset"]


@dataclass(frozen=True, slots=True)
class DeviceWork:
    """One kernel, memcpy or memset on a device (times in ns)."""

    kind: WorkKind
    name: str
    start_ns: int
    end_ns: int
    device: int
    stream: int
    correlation: int | None = None


@dataclass(frozen=True, slots=True)
class HostCall:
    """One runtime call that launched device work, linked to it by ``correlation`` (times in ns)."""

    correlation: int
    name: str
    start_ns: int
    end_ns: int
    thread: int


@dataclass(frozen=True, slots=True)
class AnnotatedRange:
    """One annotated host range (an NVTX push/pop or start/end range, a ROCTx range) on a thread (times in ns)."""

    name: str
    start_ns: int
    end_ns: int
    thread: int


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """What a profile says about one device."""

    index: int
    name: str | None = None
    vendor: Literal["NVIDIA", "AMD"] | None = None
    compute_capability: str | None = None  # "8.0" (CUDA) or the gfx target ("gfx950")
    multiprocessors: int | None = None
    memory_bytes: int | None = None
    warp_size: int | None = None


@dataclass
class Activity:
    """Everything a profiler export reader keeps: device work, launches, annotated ranges and devices."""

    format: str  # how the file is named in messages: "Nsight Systems export (2022.2.1.31, schema 2.9.1)"
    work: list[DeviceWork] = field(default_factory=list)
    calls: list[HostCall] = field(default_factory=list)
    ranges: list[AnnotatedRange] = field(default_factory=list)
    devices: dict[int, DeviceFacts] = field(default_factory=dict)
    utc_start_ns: int | None = None  # the UTC time of the profile clock's zero, when the file says
    skipped: Counter[str] = field(default_factory=Counter)  # rows left out, by '<table>:<reason>'


SQLITE_MAGIC = b"SQLite format 3\x00"


def check_sqlite(path: Path) -> None:
    """Refuse (``UserError``) a file that cannot be a whole SQLite database: not one, or cut short of what its header counts."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not header.startswith(SQLITE_MAGIC):
        raise UserError(f"{path}: not a SQLite database")
    if len(header) < 100:
        raise UserError(f"{path}: truncated: {size} bytes, shorter than a SQLite header")
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the in-header page count is valid only when these agree
    if page and size % page:
        raise UserError(f"{path}: truncated: {size} bytes, not a whole number of {page}-byte pages")
    if valid and pages and pages * page > size:
        raise UserError(f"{path}: truncated: its header counts {pages} pages of {page} bytes ({pages * page} bytes), the file has {size}")


def sqlite_damaged(path: Path) -> bool:
    """Whether a file that starts like SQLite is cut short or cannot be read (its importer then says which)."""
    try:
        check_sqlite(path)
    except UserError:
        return True
    return False


def sqlite_objects(path: Path) -> set[str] | None:
    """The table and view names of a SQLite file, None when it is not one or cannot be read."""
    try:
        with open_sqlite(path) as db:
            return tables_of(db)
    except UserError:
        return None


def tables_of(db: sqlite3.Connection) -> set[str]:
    """The names of a database's tables and views."""
    return {str(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


@contextmanager
def open_sqlite(path: Path) -> Iterator[sqlite3.Connection]:
    """``path`` opened read-only (never written, never created); a damaged or cut file is a one-line ``UserError``."""
    check_sqlite(path)
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"{path}: cannot open it as SQLite ({exc})") from None
    try:
        yield db
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path}: damaged SQLite database ({exc})") from None
    finally:
        db.close()


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (or a view), in lower case; empty when it does not exist."""
    return {str(row[0]).lower() for row in db.execute("SELECT name FROM pragma_table_info(?)", (table,))}


def select(db: sqlite3.Connection, table: str, wanted: tuple[str, ...], tail: str = "") -> sqlite3.Cursor:
    """Rows of ``wanted`` columns of ``table``, NULL for those it lacks (versions add and drop columns); ``tail``: a WHERE or
    ORDER BY clause."""
    have = columns(db, table)
    picked = ", ".join('"' + c + '"' if c.lower() in have else "NULL" for c in wanted)
    return db.execute(" ".join(("SELECT", picked, "FROM", '"' + table + '"', tail)))
