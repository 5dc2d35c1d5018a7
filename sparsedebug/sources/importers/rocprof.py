"""Read a rocprofv3 kernel trace (ROCm) into device activity: its JSON, its ``kernel_trace.csv`` or its rocpd database.

Three of the outputs ``rocprofv3 --kernel-trace --output-format json|csv|rocpd`` writes, each read by
name (fields, headers, views), never by position:

* JSON (``.json`` or ``.json.gz``): every process under ``rocprofiler-sdk-tool``; dispatches in
  ``buffer_records.kernel_dispatch`` (``start_timestamp``/``end_timestamp`` ns, ``dispatch_info``'s
  ``agent_id``, ``queue_id`` and ``kernel_id``, ``correlation_id.internal``), kernel names in
  ``kernel_symbols``, devices in ``agents``; copies in ``buffer_records.memory_copy`` and HIP
  launches in ``buffer_records.hip_api`` where the capture traced them;
* ``kernel_trace.csv``: headers matched without regard to case (``Kernel_Name``,
  ``Start_Timestamp``, ``End_Timestamp``, ``Agent_Id``, ``Queue_Id``, ``Correlation_Id``; a ``Guid``
  column, which some writers add, and any other are ignored); device names from an
  ``agent_info.csv`` beside it when there is one;
* the rocpd SQLite database (rocprofv3's default), through its views ``rocpd_kernel_dispatch``,
  ``rocpd_info_kernel_symbol``, ``rocpd_info_agent`` and ``rocpd_string``, with the timestamps
  inline (``start``/``end``) or as ``start_id``/``end_id`` rows of ``rocpd_timestamp``.

The older rocmProfileData ("rpd") database also names its tables ``rocpd_*`` (``rocpd_op``,
``rocpd_api``): it is refused by name. Devices are GPU agents (their ``gfx`` target and product
name); a file with several is read per device by the importer.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import sqlite3
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_json_text, reading
from sparsedebug.sources.importers.activity import (
    SQLITE_MAGIC,
    Activity,
    DeviceFacts,
    DeviceWork,
    HostCall,
    columns,
    open_sqlite,
    select,
    tables_of,
)
from sparsedebug.sources.importers.rocprof_sniff import CSV_REQUIRED, OTHER_OUTPUTS, TOOL_KEY, looks_like_csv

# rocmProfileData's tables: an rpd file, not rocprofv3's rocpd.
RPD_TABLES = ("rocpd_op", "rocpd_api")
_NUMBER = re.compile(r"(\d+)")


def read_rocprof(path: Path) -> Activity:
    """The kernels (and copies, launches where traced) and GPU agents of a rocprofv3 JSON, kernel_trace.csv or rocpd file."""
    if path.name.lower().endswith(OTHER_OUTPUTS):
        raise UserError(f"{path}: a rocprofv3 Perfetto or OTF2 trace, which sparsedebug does not read; "
                        "record with rocprofv3 --kernel-trace --output-format json (or csv, rocpd)")
    with reading(path), path.open("rb") as handle:
        head = handle.read(4096)
    if head.startswith(SQLITE_MAGIC):
        return _read_rocpd(path)
    if looks_like_csv(head):
        return _read_csv(path)
    return _read_json(path)


def _activity_or_refuse(path: Path, activity: Activity) -> Activity:
    if not any(w.kind == "kernel" for w in activity.work):
        raise UserError(f"{path}: no kernel dispatches with start and end timestamps; capture with rocprofv3 --kernel-trace")
    if not activity.devices:
        for device in sorted({w.device for w in activity.work}):
            activity.devices[device] = DeviceFacts(index=device, vendor="AMD")
    return activity


# --------------------------------------------------------------------------- JSON


def _load(path: Path) -> Any:
    with reading(path):
        raw = path.read_bytes()
    if raw.startswith(b"\x1f\x8b"):
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise UserError(f"{path}: truncated or damaged gzip data ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not rocprofv3 output (byte {exc.start} is not UTF-8 text)") from None
    return load_json_text(text, str(path))


def _handle(value: Any) -> int | None:
    """An id field: ``{"handle": n}`` or a bare integer."""
    if isinstance(value, dict):
        value = value.get("handle")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _positive(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and number > 0 else None


def _gpu_agents(agents: Iterable[Any]) -> dict[int, DeviceFacts]:
    """GPU agents by handle: the device index is the agent's GPU number (``gpu_index``, ``logical_node_type_id``), else its node."""
    out: dict[int, DeviceFacts] = {}
    for agent in agents:
        if not isinstance(agent, dict) or _int(agent.get("type")) != 2:  # ROCPROFILER_AGENT_TYPE_GPU
            continue
        handle = _handle(agent.get("id"))
        index = next((v for v in (_int(agent.get("gpu_index")), _int(agent.get("logical_node_type_id")), _int(agent.get("node_id")))
                      if v is not None and v >= 0), None)
        if handle is None or index is None:
            continue
        product, arch = agent.get("product_name"), agent.get("name")
        out[handle] = DeviceFacts(
            index=index, vendor="AMD", name=product if isinstance(product, str) and product else None,
            compute_capability=arch if isinstance(arch, str) and arch.startswith("gfx") else None,
            multiprocessors=_positive(agent.get("cu_count")), warp_size=_positive(agent.get("wave_front_size")),
        )
    return out


def _symbols(symbols: Any) -> dict[int, str]:
    entries = symbols.values() if isinstance(symbols, dict) else symbols if isinstance(symbols, list) else []
    out: dict[int, str] = {}
    for entry in entries:
        if not isinstance(entry, dict) or _int(entry.get("kernel_id")) is None:
            continue
        name = next((n for n in (entry.get(k) for k in ("formatted_kernel_name", "demangled_kernel_name", "kernel_name"))
                     if isinstance(n, str) and n), None)
        if name is not None:
            out[entry["kernel_id"]] = name.removesuffix(".kd")
    return out


def _api_names(strings: Any) -> dict[tuple[int, int], str]:
    """``strings.buffer_records``: per record kind (its position), the names of its operations."""
    out: dict[tuple[int, int], str] = {}
    kinds = strings.get("buffer_records") if isinstance(strings, dict) else None
    for kind, entry in enumerate(kinds if isinstance(kinds, list) else []):
        operations = entry.get("operations") if isinstance(entry, dict) else None
        for op, name in enumerate(operations if isinstance(operations, list) else []):
            if isinstance(name, str):
                out[(kind, op)] = name
    return out


def _timed(record: dict[str, Any]) -> tuple[int, int] | None:
    start, end = _int(record.get("start_timestamp")), _int(record.get("end_timestamp"))
    return (start, end) if start is not None and end is not None and end >= start else None


def _read_json(path: Path) -> Activity:
    data = _load(path)
    processes = data.get(TOOL_KEY) if isinstance(data, dict) else None
    if not isinstance(processes, list):
        raise UserError(f"{path}: no {TOOL_KEY!r} list: not rocprofv3 JSON (rocprofv3 --output-format json)")
    activity = Activity(format="rocprofv3 JSON")
    for process in processes:
        if isinstance(process, dict):
            _read_process(process, activity)
    return _activity_or_refuse(path, activity)


def _records(records: Any, key: str) -> list[dict[str, Any]]:
    """The object entries of ``buffer_records[key]`` (empty when the capture did not trace them)."""
    found = records.get(key) if isinstance(records, dict) else None
    return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []


def _agent(agents: dict[int, DeviceFacts], value: Any) -> DeviceFacts | None:
    handle = _handle(value)
    return agents.get(handle) if handle is not None else None


def _read_process(process: dict[str, Any], activity: Activity) -> None:
    agents = _gpu_agents(process.get("agents") or [])
    activity.devices.update({facts.index: facts for facts in agents.values()})
    names = _symbols(process.get("kernel_symbols"))
    records = process.get("buffer_records")
    for record in _records(records, "kernel_dispatch"):
        info = record.get("dispatch_info")
        times = _timed(record)
        agent = _agent(agents, info.get("agent_id")) if isinstance(info, dict) else None
        if times is None or agent is None or not isinstance(info, dict):
            activity.skipped["kernel_dispatch:untimed_or_no_gpu_agent"] += 1
            continue
        kernel = _int(info.get("kernel_id"))
        correlation = record.get("correlation_id")
        activity.work.append(DeviceWork(
            "kernel", names.get(kernel, f"<kernel {kernel}>") if kernel is not None else "<unnamed kernel>", times[0], times[1], agent.index,
            _handle(info.get("queue_id")) or 0, _int(correlation.get("internal")) if isinstance(correlation, dict) else _int(correlation),
        ))
    for record in _records(records, "memory_copy"):
        times = _timed(record)
        dst, src = _agent(agents, record.get("dst_agent_id")), _agent(agents, record.get("src_agent_id"))
        device = dst if dst is not None else src
        if times is None or device is None:
            activity.skipped["memory_copy:untimed_or_no_gpu_agent"] += 1
            continue
        direction = "DtoD" if dst is not None and src is not None else "HtoD" if dst is not None else "DtoH"
        activity.work.append(DeviceWork("memcpy", f"Memcpy {direction}", times[0], times[1], device.index, _handle(record.get("queue_id")) or 0))
    api = _api_names(process.get("strings"))
    for record in _records(records, "hip_api"):
        times = _timed(record)
        correlation = record.get("correlation_id")
        corr = _int(correlation.get("internal")) if isinstance(correlation, dict) else None
        kind, operation = _int(record.get("kind")), _int(record.get("operation"))
        if times is not None and corr is not None:
            name = api.get((kind, operation), "hip") if kind is not None and operation is not None else "hip"
            activity.calls.append(HostCall(corr, name, times[0], times[1], _int(record.get("thread_id")) or 0))


# --------------------------------------------------------------------------- kernel_trace.csv


def _csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with reading(path):
        text = path.read_text(encoding="utf-8", errors="strict")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise UserError(f"{path}: empty file")
    return [h.strip().lower() for h in rows[0]], rows[1:]


def _agent_names(path: Path) -> dict[int, DeviceFacts]:
    """Devices from an ``agent_info.csv`` beside a kernel trace (same prefix), keyed by node id; empty when there is none."""
    cut = path.name.lower().rfind("kernel_trace.csv")
    sibling = path.with_name(path.name[:cut] + "agent_info.csv") if cut >= 0 else path
    if sibling == path or not sibling.is_file():
        return {}
    try:
        header, rows = _csv_rows(sibling)
    except (UserError, UnicodeDecodeError):
        return {}
    out: dict[int, DeviceFacts] = {}
    for row in rows:
        cells = dict(zip(header, row, strict=False))
        node = _NUMBER.search(cells.get("node_id") or cells.get("agent_id") or "")
        if node is None or cells.get("agent_type", "GPU").strip().upper() != "GPU":
            continue
        arch = cells.get("name", "").strip()
        out[int(node.group(1))] = DeviceFacts(
            index=int(node.group(1)), vendor="AMD", name=cells.get("product_name", "").strip() or None,
            compute_capability=arch if arch.startswith("gfx") else None,
            multiprocessors=_positive(int(cells["cu_count"])) if cells.get("cu_count", "").strip().isdigit() else None,
            warp_size=_positive(int(cells["wave_front_size"])) if cells.get("wave_front_size", "").strip().isdigit() else None,
        )
    return out


def _read_csv(path: Path) -> Activity:
    try:
        header, rows = _csv_rows(path)
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a kernel_trace.csv (byte {exc.start} is not UTF-8 text)") from None
    missing = [name for name in CSV_REQUIRED if name not in header]
    if missing:
        raise UserError(f"{path}: kernel_trace.csv header lacks {', '.join(missing)} (any case)")
    at = {name: header.index(name) for name in header}
    activity = Activity(format="rocprofv3 kernel_trace.csv")
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        if len(row) < len(header):
            raise UserError(f"{path}: line {line} has {len(row)} fields, the header {len(header)}: the file is truncated or damaged")
        start, end = row[at["start_timestamp"]].strip(), row[at["end_timestamp"]].strip()
        if not (start.isdigit() and end.isdigit()) or int(end) < int(start):
            raise UserError(f"{path}: line {line}: Start_Timestamp {start!r} and End_Timestamp {end!r}: expected integer ns, end >= start")
        agent = _NUMBER.search(row[at["agent_id"]]) if "agent_id" in at else None
        queue = _NUMBER.search(row[at["queue_id"]]) if "queue_id" in at else None
        corr = row[at["correlation_id"]].strip() if "correlation_id" in at else ""
        activity.work.append(DeviceWork(
            "kernel", row[at["kernel_name"]].strip().removesuffix(".kd") or "<unnamed kernel>", int(start), int(end),
            int(agent.group(1)) if agent else 0, int(queue.group(1)) if queue else 0, int(corr) if corr.isdigit() else None,
        ))
    activity.devices = {k: v for k, v in _agent_names(path).items() if any(w.device == k for w in activity.work)}
    return _activity_or_refuse(path, activity)


# --------------------------------------------------------------------------- rocpd SQLite


def _read_rocpd(path: Path) -> Activity:
    with open_sqlite(path) as db:
        tables = tables_of(db)
        if "rocpd_kernel_dispatch" not in tables and any(t in tables for t in RPD_TABLES):
            raise UserError(f"{path}: a rocmProfileData (rpd) trace, which sparsedebug does not read; record with "
                            "rocprofv3 --kernel-trace --output-format rocpd (or json, csv)")
        if "rocpd_kernel_dispatch" not in tables:
            raise UserError(f"{path}: a SQLite database without rocpd_kernel_dispatch: not a rocprofv3 kernel trace (rocprofv3 --kernel-trace)")
        # rocpd views decompress their extdata column with an SQL function of rocprofv3's; it is never read here
        db.create_function("lz4_decompress", 1, lambda _data: None, deterministic=True)
        activity = Activity(format="rocprofv3 rocpd database")
        agents = _rocpd_agents(db, tables)
        activity.devices = {facts.index: facts for facts in agents.values()}
        for start, end, agent, queue, name, corr in _rocpd_dispatches(db, tables):
            facts = agents.get(agent) if isinstance(agent, int) else None
            if not (isinstance(start, int) and isinstance(end, int) and end >= start) or facts is None:
                activity.skipped["rocpd_kernel_dispatch:untimed_or_no_gpu_agent"] += 1
                continue
            activity.work.append(DeviceWork("kernel", str(name).removesuffix(".kd") if name else "<unnamed kernel>", start, end, facts.index,
                                            queue if isinstance(queue, int) else 0, corr if isinstance(corr, int) else None))
    return _activity_or_refuse(path, activity)


def _rocpd_agents(db: sqlite3.Connection, tables: set[str]) -> dict[int, DeviceFacts]:
    if "rocpd_info_agent" not in tables:
        return {}
    wanted = ("id", "type", "type_index", "logical_index", "name", "product_name")
    out: dict[int, DeviceFacts] = {}
    for row in select(db, "rocpd_info_agent", wanted):
        cells = dict(zip(wanted, row, strict=True))
        if str(cells.get("type", "")).upper() != "GPU" or not isinstance(cells.get("id"), int):
            continue
        index = cells.get("type_index") if isinstance(cells.get("type_index"), int) else cells.get("logical_index")
        arch, product = cells.get("name"), cells.get("product_name")
        out[cells["id"]] = DeviceFacts(
            index=index if isinstance(index, int) else cells["id"], vendor="AMD",
            name=product if isinstance(product, str) and product else None,
            compute_capability=arch if isinstance(arch, str) and arch.startswith("gfx") else None,
        )
    return out


def _rocpd_dispatches(db: sqlite3.Connection, tables: set[str]) -> Iterable[tuple[Any, ...]]:
    """(start, end, agent id, queue id, kernel name, correlation id) per dispatch, whichever way this database stores them."""
    cols = columns(db, "rocpd_kernel_dispatch")
    if {"start", "end"} <= cols:
        times, joins = 'K.start, K."end"', ""
    elif {"start_id", "end_id"} <= cols and "rocpd_timestamp" in tables:
        times = "TS.value, TE.value"
        joins = _join("rocpd_timestamp TS", "TS.id = K.start_id") + _join("rocpd_timestamp TE", "TE.id = K.end_id")
    else:
        raise UserError("rocpd_kernel_dispatch has neither start/end nor start_id/end_id (rocpd_timestamp) columns")
    if "agent_id" in cols:
        agent = "K.agent_id"
    elif "track_id" in cols and "rocpd_track" in tables and "agent_id" in columns(db, "rocpd_track"):
        agent, joins = "TR.agent_id", joins + _join("rocpd_track TR", "TR.id = K.track_id")
    else:
        agent = "NULL"
    symbol_cols = columns(db, "rocpd_info_kernel_symbol") if "rocpd_info_kernel_symbol" in tables else set()
    names = [f"S.{c}" for c in ("display_name", "formatted_kernel_name", "kernel_name") if c in symbol_cols and "kernel_id" in cols]
    if names:
        joins += _join("rocpd_info_kernel_symbol S", "S.id = K.kernel_id")
    if "region_name_id" in cols and "rocpd_string" in tables:
        names.append("RS.string")
        joins += _join("rocpd_string RS", "RS.id = K.region_name_id")
    name = f"COALESCE({', '.join(names)})" if len(names) > 1 else (names[0] if names else "NULL")
    queue = "K.queue_id" if "queue_id" in cols else "NULL"
    corr = "K.correlation_id" if "correlation_id" in cols else "NULL"
    return db.execute(" ".join(("SELECT", ", ".join((times, agent, queue, name, corr)), "FROM rocpd_kernel_dispatch K", joins, "ORDER BY 1")))


def _join(table: str, on: str) -> str:
    """A LEFT JOIN clause onto ``table`` (with its alias)."""
    return " ".join(("", "LEFT JOIN", table, "ON", on))

