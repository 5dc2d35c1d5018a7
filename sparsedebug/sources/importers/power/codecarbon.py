"""CodeCarbon ``emissions.csv``: one row per tracked run (or per flush), energy in kWh.

The documented columns (CodeCarbon docs, "Output", mlco2/codecarbon ``docs/edit/output.rst``) this reader uses:
``timestamp`` ("Time of the experiment in %Y-%m-%dT%H:%M:%S format": when the row was written, the end of the
tracked span; newer versions may write an ISO time with its zone), ``run_id``, ``duration`` (seconds),
``gpu_energy`` ("Energy used per GPU (kWh)", over all GPUs CodeCarbon tracks) and ``energy_consumed`` ("sum of
cpu_energy, gpu_energy and ram_energy (kWh)"; RAM and, without RAPL, CPU energy are modelled by CodeCarbon,
not measured). Energy is converted to joules (1 kWh = 3.6 MJ). A timestamp without a zone is local time: it is
placed in UTC only with the clock's offset; timestamps have one-second resolution.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.records.power import PowerChannel, PowerLog, PowerReading, PowerScope
from sparsedebug.sources.importers.alignment import calendar_problem
from sparsedebug.sources.importers.power.table import Table, read_table

# The columns a CodeCarbon emissions file must have; energy comes from ``gpu_energy`` and ``energy_consumed``.
CODECARBON_COLUMNS = ("timestamp", "duration")

J_PER_KWH = 3.6e6

# The energy columns, each with what it measures (render.words.sources_power.SCOPE_WORDS).
_CHANNELS: tuple[tuple[str, PowerScope], ...] = (("gpu_energy", "codecarbon_gpu_energy"), ("energy_consumed", "codecarbon_host_energy"))


def is_codecarbon(names: list[str]) -> bool:
    """A CSV header that is a CodeCarbon emissions file."""
    return "timestamp" in names and "duration" in names and ("energy_consumed" in names or "emissions" in names)


def gpus_tracked(table: Table, row: list[str]) -> bool:
    """Whether CodeCarbon tracked a GPU in this row: a file with ``gpu_count``/``gpu_model`` columns leaves them
    empty (or writes a count of 0) when it found none, and its ``gpu_energy`` is then 0 without a measurement; an
    older file without those columns is taken as tracked."""
    count, model = table.column("gpu_count"), table.column("gpu_model")
    if count is None and model is None:
        return True
    counted = count is not None and row[count].strip() not in ("", "0", "0.0")
    return counted or (model is not None and bool(row[model].strip()))


def codecarbon_time(text: str, utc_offset_h: float | None) -> tuple[float | None, bool]:
    """A CodeCarbon timestamp as UTC seconds (None when it has no zone and no offset is known), and whether it
    carries its zone; a timestamp that is no ISO time raises ValueError."""
    stamp = datetime.fromisoformat(text.strip())
    if stamp.tzinfo is not None:
        return stamp.timestamp(), True
    if utc_offset_h is None:
        return None, False
    return (stamp - timedelta(hours=utc_offset_h)).replace(tzinfo=UTC).timestamp(), False


def load_codecarbon(path: Path, text: str, utc_offset_h: float | None) -> PowerLog:
    """The energy totals of a CodeCarbon emissions file: ``gpu_energy`` and ``energy_consumed`` channels, one reading
    per row (its window: the ``duration`` before ``timestamp``)."""
    table = read_table(path, text, CODECARBON_COLUMNS, "a CodeCarbon emissions.csv (timestamp,...,duration,...,energy_consumed)")
    time_col, duration_col, run_col = table.column("timestamp"), table.column("duration"), table.column("run_id")
    assert time_col is not None and duration_col is not None
    channels: list[PowerChannel] = []
    readings: dict[str, list[PowerReading]] = {}
    zoned = True
    for field, scope in _CHANNELS:
        col = table.column(field)
        if col is None:
            continue
        rows: list[PowerReading] = []
        for line, row in table.rows:
            if not gpus_tracked(table, row):
                continue  # CodeCarbon found no GPU: its gpu_energy of 0 (and the sum holding it) is "not tracked", not 0 J
            kwh = table.number(line, row, col)
            duration = table.number(line, row, duration_col, blank_ok=False)
            if kwh is None or duration is None:
                continue
            try:
                end, has_zone = codecarbon_time(row[time_col], utc_offset_h)
            except ValueError as exc:
                reason = calendar_problem(exc)
                raise UserError(f"{path}: line {line}, column 'timestamp': {row[time_col].strip()!r} "
                                + (f"is no date: {reason}" if reason is not None else "is not like 2024-07-19T15:57:43")) from None
            zoned = zoned and has_zone
            rows.append(PowerReading(
                device="gpus" if field == "gpu_energy" else "host", t_utc_s=end - duration if end is not None else None,
                t_local=row[time_col].strip(), line=line, value=kwh * J_PER_KWH, window_s=duration,
                label=row[run_col].strip() if run_col is not None else None,
            ))
        if rows:
            durations = sorted(r.window_s or 0.0 for r in rows)
            channels.append(PowerChannel(
                source="codecarbon", field=field, quantity="energy_total", unit="J", scope=scope,
                update_period_s=durations[len(durations) // 2] or None,
            ))
            readings[field] = rows
    return PowerLog(file=str(path), source="codecarbon", channels=channels, readings=readings,
                    utc_offset_h=0.0 if zoned else utc_offset_h)


def place_codecarbon_log(log: PowerLog, utc_offset_h: float) -> PowerLog:
    """``log`` with zone-less timestamps placed in UTC now that the clock's offset is known."""
    placed = {
        field: [r.model_copy(update={"t_utc_s": (codecarbon_time(r.t_local, utc_offset_h)[0] or 0.0) - (r.window_s or 0.0)})
                for r in rows]
        for field, rows in log.readings.items()
    }
    return log.model_copy(update={"readings": placed, "utc_offset_h": utc_offset_h})
