"""Whether a file is rocprofv3 output, asked without importing its reader (``importers.rocprof``).

The registry asks this of every gzip file, so of every Kineto trace ``bisect`` reads (``registry._trace_sniff``):
the JSON and CSV heads are read here with nothing but gzip, and ``sqlite3`` with the shared activity tables
(``importers.activity``) is imported only for a file that starts like a SQLite database.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

TOOL_KEY = "rocprofiler-sdk-tool"
# The headers a kernel_trace.csv must have (lower case), and the ones read when present.
CSV_REQUIRED = ("kernel_name", "start_timestamp", "end_timestamp")
# rocprofv3's other output formats (Perfetto, OTF2): recognised, and refused with the formats that are read.
OTHER_OUTPUTS = (".pftrace", ".otf2")
# The first bytes of a SQLite file (``importers.activity.SQLITE_MAGIC`` is this one).
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_rocpd(tables: set[str]) -> bool:
    """Whether a SQLite file's tables are a ROCm profiler database's (rocprofv3's rocpd, or the older rpd, refused when read)."""
    return any(t.startswith("rocpd_") for t in tables)


def looks_like_csv(head: bytes) -> bool:
    """Whether a file's first line is a kernel_trace.csv header (names matched without regard to case)."""
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace").lower()
    names = {cell.strip().strip('"') for cell in first.split(",")}
    return all(name in names for name in CSV_REQUIRED)


def looks_like_json(head: bytes) -> bool:
    """Whether a (decompressed) head is rocprofv3 JSON: its tool key near the start."""
    return f'"{TOOL_KEY}"'.encode() in head[:4096]


def sniff_rocprof(path: Path, head: bytes | None) -> bool:
    """Whether ``path`` is rocprofv3 output (the registry's sniff): JSON (plain or gzip) under ``rocprofiler-sdk-tool``, a
    kernel_trace.csv header, or a SQLite file with ``rocpd_`` tables (the older rpd format too, refused by name when read)."""
    if head is None:
        return False
    if path.name.lower().endswith(OTHER_OUTPUTS):
        return True
    if head.startswith(SQLITE_MAGIC):
        from sparsedebug.sources.importers.activity import sqlite_damaged, sqlite_objects

        tables = sqlite_objects(path)
        if tables is None:  # cut short or damaged: claimed, so that reading it says which
            return sqlite_damaged(path)
        return is_rocpd(tables)
    return looks_like_json(json_head(path, head)) or looks_like_csv(head)


def json_head(path: Path, head: bytes) -> bytes:
    """The first bytes of ``path``'s text: ``head`` itself, or its decompressed start when the file is gzip."""
    if not (head.startswith(b"\x1f\x8b") or path.name.lower().endswith(".gz")):
        return head
    try:
        with gzip.open(path, "rb") as handle:
            return handle.read(4096)
    except (EOFError, OSError, zlib.error):
        return b""
