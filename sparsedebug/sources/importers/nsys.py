"""Read an Nsight Systems SQLite export (``nsys export --type sqlite``) into device activity.

Read from the documented export schema, by table and column name (never by position), so that
columns later versions add are ignored and tables a capture did not fill may be missing (Nsight
Systems creates a table only when it has rows) or empty:

* kernels: ``CUPTI_ACTIVITY_KIND_KERNEL`` (``start``/``end`` ns, ``deviceId``, ``streamId``,
  ``correlationId``; the name is a ``StringIds`` id in ``demangledName``, else ``shortName``);
* ``CUPTI_ACTIVITY_KIND_MEMCPY`` (named by ``copyKind``: ``Memcpy HtoD`` ...) and
  ``CUPTI_ACTIVITY_KIND_MEMSET``;
* launches: ``CUPTI_ACTIVITY_KIND_RUNTIME`` (``nameId``, ``globalTid``), linked to device work by
  ``correlationId``;
* NVTX push/pop (``eventType`` 59) and start/end (60) ranges from ``NVTX_EVENTS``, named by
  ``text`` or the ``StringIds`` entry of ``textId``;
* devices from ``TARGET_INFO_GPU`` (``cuDevice`` or ``id``, ``name``, ``computeMajor``/``computeMinor``,
  ``smCount``, ``totalMemory``, ``threadsPerWarp``); the UTC start of the capture from
  ``TARGET_INFO_SESSION_START_TIME.utcEpochNs``;
* the export's version from ``EXPORT_META_DATA`` (exports of 2022) or ``META_DATA_EXPORT`` (2024 on).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sparsedebug.core.errors import UserError
from sparsedebug.sources.importers.activity import (
    SQLITE_MAGIC,
    Activity,
    AnnotatedRange,
    DeviceFacts,
    DeviceWork,
    HostCall,
    WorkKind,
    columns,
    open_sqlite,
    select,
    sqlite_damaged,
    sqlite_objects,
    tables_of,
)

# The two spellings of the export's version table.
METADATA_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
# NVTX_EVENTS.eventType of ranges: push/pop (nested on one thread) and start/end.
NVTX_RANGE_TYPES = (59, 60)
# CUPTI's copyKind (ENUM_CUDA_MEMCPY_OPER), as the profilers name copies.
_COPY_KINDS = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}


def is_nsys_export(tables: set[str]) -> bool:
    """Whether a SQLite file's tables are an Nsight Systems export's: its version table, or strings and CUPTI activity."""
    return any(t in tables for t in METADATA_TABLES) or ("StringIds" in tables and any(t.startswith("CUPTI_ACTIVITY_KIND_") for t in tables))


# Nsight Systems' own report files, which are read only once exported to SQLite.
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")


def sniff_nsys(path: Path, head: bytes | None) -> bool:
    """Whether ``path`` (first bytes ``head``) is an Nsight Systems SQLite export, or a report to export first (the registry's sniff)."""
    if head is not None and path.name.lower().endswith(REPORT_SUFFIXES):
        return True
    if head is None or not head.startswith(SQLITE_MAGIC):
        return False
    tables = sqlite_objects(path)
    if tables is None:  # cut short or damaged: claimed, so that reading it says which
        return sqlite_damaged(path)
    return is_nsys_export(tables)


def read_nsys(path: Path) -> Activity:
    """The kernels, copies, launches, NVTX ranges and devices of an Nsight Systems SQLite export."""
    if path.name.lower().endswith(REPORT_SUFFIXES):
        raise UserError(f"{path}: an Nsight Systems report, read once exported: nsys export --type sqlite --output {path.stem}.sqlite {path}")
    with open_sqlite(path) as db:
        tables = tables_of(db)
        if not is_nsys_export(tables):
            raise UserError(f"{path}: a SQLite database without Nsight Systems tables ({' or '.join(METADATA_TABLES)}, {KERNEL_TABLE})")
        strings = _strings(db, tables)
        activity = Activity(format=_format(db, tables))
        kinds: tuple[tuple[str, WorkKind], ...] = ((KERNEL_TABLE, "kernel"), (MEMCPY_TABLE, "memcpy"), (MEMSET_TABLE, "memset"))
        for table, kind in kinds:
            if table in tables:
                activity.work += _work(db, table, kind, strings, activity)
        if not activity.work:
            raise UserError(f"{path}: no CUDA kernel, memcpy or memset rows ({KERNEL_TABLE}, {MEMCPY_TABLE}, {MEMSET_TABLE}); "
                            "capture with nsys profile --trace=cuda")
        if RUNTIME_TABLE in tables:
            activity.calls = _calls(db, strings, activity)
        if "NVTX_EVENTS" in tables:
            activity.ranges = _ranges(db, strings, activity)
        activity.devices = _devices(db, tables)
        activity.utc_start_ns = _session_start(db, tables)
    return activity


def _strings(db: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    if "StringIds" not in tables:
        return {}
    return {int(i): str(v) for i, v in select(db, "StringIds", ("id", "value")) if isinstance(i, int) and v is not None}


def _format(db: sqlite3.Connection, tables: set[str]) -> str:
    table = next((t for t in METADATA_TABLES if t in tables), None)
    meta: dict[str, Any] = {}
    if table is not None:
        meta = {str(n): v for n, v in select(db, table, ("name", "value"))}
    facts = [f"{k.lower().removeprefix('export_').replace('_', ' ')} {meta[k]}" for k in ("EXPORT_PRODUCT_VERSION", "EXPORT_SCHEMA_VERSION")
             if meta.get(k)]
    return "Nsight Systems export" + (f" ({', '.join(facts)})" if facts else "")


def _name(value: Any, strings: dict[int, str]) -> str | None:
    """A name column: a ``StringIds`` id (the export's own form) or, in a file that inlines it, the text."""
    if isinstance(value, int):
        return strings.get(value)
    return value if isinstance(value, str) and value else None


def _timed(start: Any, end: Any) -> bool:
    return isinstance(start, int) and isinstance(end, int) and end >= start


def _work(db: sqlite3.Connection, table: str, kind: WorkKind, strings: dict[int, str], activity: Activity) -> list[DeviceWork]:
    cols = columns(db, table)
    if not {"start", "end"} <= cols:
        activity.skipped[f"{table}:no_start_end_columns"] += 1
        return []
    extra = ("demangledName", "shortName") if kind == "kernel" else ("copyKind", "bytes")
    rows = select(db, table, ("start", "end", "deviceId", "streamId", "correlationId", *extra), "ORDER BY start")
    out: list[DeviceWork] = []
    for start, end, device, stream, correlation, first, second in rows:
        if not _timed(start, end):
            activity.skipped[f"{table}:untimed"] += 1
            continue
        if kind == "kernel":
            name = _name(first, strings) or _name(second, strings) or "<unnamed kernel>"
        elif kind == "memcpy":
            name = f"Memcpy {_COPY_KINDS.get(first, 'Unknown') if isinstance(first, int) else 'Unknown'}"
        else:
            name = "Memset (Device)"
        out.append(DeviceWork(kind, name, start, end, device if isinstance(device, int) else 0, stream if isinstance(stream, int) else 0,
                              correlation if isinstance(correlation, int) else None))
    return out


def _calls(db: sqlite3.Connection, strings: dict[int, str], activity: Activity) -> list[HostCall]:
    cols = columns(db, RUNTIME_TABLE)
    if not {"start", "end", "correlationid"} <= cols:
        return []
    wanted = {w.correlation for w in activity.work if w.correlation is not None}
    out = []
    for start, end, thread, correlation, name_id in select(db, RUNTIME_TABLE, ("start", "end", "globalTid", "correlationId", "nameId")):
        if correlation in wanted and _timed(start, end):
            out.append(HostCall(correlation, _name(name_id, strings) or "", start, end, thread if isinstance(thread, int) else 0))
    return out


def _ranges(db: sqlite3.Connection, strings: dict[int, str], activity: Activity) -> list[AnnotatedRange]:
    cols = columns(db, "NVTX_EVENTS")
    if not {"start", "end", "eventtype"} <= cols:
        return []
    out = []
    for start, end, text, text_id, thread, kind in select(db, "NVTX_EVENTS", ("start", "end", "text", "textId", "globalTid", "eventType")):
        if kind not in NVTX_RANGE_TYPES:
            continue
        name = _name(text, strings) or _name(text_id, strings)
        if not _timed(start, end):
            activity.skipped["NVTX_EVENTS:unclosed_range"] += 1
        elif name is None:
            activity.skipped["NVTX_EVENTS:unnamed_range"] += 1
        else:
            out.append(AnnotatedRange(name, start, end, thread if isinstance(thread, int) else 0))
    return out


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _devices(db: sqlite3.Connection, tables: set[str]) -> dict[int, DeviceFacts]:
    if "TARGET_INFO_GPU" not in tables:
        return {}
    wanted = ("cuDevice", "id", "name", "computeMajor", "computeMinor", "smCount", "totalMemory", "threadsPerWarp")
    out: dict[int, DeviceFacts] = {}
    for cu, ident, name, major, minor, sms, memory, warp in select(db, "TARGET_INFO_GPU", wanted):
        index = cu if isinstance(cu, int) else ident
        if not isinstance(index, int):
            continue
        out[index] = DeviceFacts(
            index=index, name=name if isinstance(name, str) and name else None, vendor="NVIDIA",
            compute_capability=f"{major}.{minor}" if isinstance(major, int) and isinstance(minor, int) else None,
            multiprocessors=_positive(sms), memory_bytes=_positive(memory), warp_size=_positive(warp),
        )
    return out


def _session_start(db: sqlite3.Connection, tables: set[str]) -> int | None:
    if "TARGET_INFO_SESSION_START_TIME" not in tables:
        return None
    row = select(db, "TARGET_INFO_SESSION_START_TIME", ("utcEpochNs",), "LIMIT 1").fetchone()
    return _positive(row[0]) if row is not None else None
