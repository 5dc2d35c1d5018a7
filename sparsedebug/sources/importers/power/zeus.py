"""Zeus ``ZeusMonitor(log_file=...)`` CSV: one row per measurement window, GPU energy per GPU.

The columns, as ``zeus/monitor/energy.py`` (ml-energy/zeus) writes them: ``start_time`` (``time.time()`` when
``begin_window`` was called: UTC seconds since the epoch; before Zeus's commit 2dbd5a6 of 2023-08-22,
``time.monotonic()``: seconds since boot, read here as such, with no UTC time), ``window_name, ``elapsed_time`` (seconds) and one
``gpu{i}_energy`` column per monitored GPU (joules). On Volta and newer GPUs Zeus takes each window's energy as the
difference of NVML's energy counter (``nvmlDeviceGetTotalEnergyConsumption``), on older ones by integrating polled
power; a window shorter than the counter's update period reads 0 J (Zeus warns). Zeus supports concurrent
windows, so rows may overlap in time.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.records.power import PowerChannel, PowerLog, PowerReading
from sparsedebug.sources.importers.power.channels import BOARD_ENERGY, MAX_EPOCH_S, MIN_WALL_CLOCK_S
from sparsedebug.sources.importers.power.table import read_table

# The columns every Zeus log starts with; GPU energy columns follow as ``gpu{i}_energy``.
ZEUS_COLUMNS = ("start_time", "window_name", "elapsed_time")

_GPU_COLUMN = re.compile(r"^gpu(\d+)_energy$")


def is_zeus(names: list[str]) -> bool:
    """A CSV header that is a Zeus log."""
    return all(name in names for name in ZEUS_COLUMNS)


def load_zeus(path: Path, text: str) -> PowerLog:
    """The GPU energy totals of a Zeus CSV log, one channel ``gpu{i}_energy`` with a reading per window and GPU."""
    table = read_table(path, text, ZEUS_COLUMNS, "a Zeus ZeusMonitor log (start_time,window_name,elapsed_time,gpu{i}_energy)")
    gpu_columns = [(k, m.group(1)) for k, h in enumerate(table.header) if (m := _GPU_COLUMN.match(h.strip().lower()))]
    start_col, name_col, elapsed_col = (table.column(c) for c in ZEUS_COLUMNS)
    assert start_col is not None and name_col is not None and elapsed_col is not None
    readings: list[PowerReading] = []
    monotonic: bool | None = None  # the first row decides; every other must agree
    for line, row in table.rows:
        start = table.number(line, row, start_col, blank_ok=False)
        elapsed = table.number(line, row, elapsed_col, blank_ok=False)
        assert start is not None and elapsed is not None
        if start > MAX_EPOCH_S:
            raise UserError(f"{path}: line {line}, column 'start_time': {row[start_col].strip()!r} is not UTC seconds since 1970")
        below = start < MIN_WALL_CLOCK_S
        if monotonic is None:
            monotonic = below
        elif below != monotonic:
            raise UserError(
                f"{path}: line {line}, column 'start_time': {row[start_col].strip()!r} mixes seconds since boot "
                "(time.monotonic(), before 2000) with seconds since 1970 in one log"
            )
        for k, gpu in gpu_columns:
            joules = table.number(line, row, k)
            if joules is None:
                continue
            readings.append(PowerReading(
                device=gpu, t_utc_s=None if monotonic else start, t_local=row[start_col].strip(), line=line, value=joules, window_s=elapsed,
                label=row[name_col].strip(),
            ))
    channels: list[PowerChannel] = []
    if readings:
        windows = sorted(r.window_s or 0.0 for r in readings)
        channels.append(PowerChannel(
            source="zeus", field="gpu{i}_energy", quantity="energy_total", unit="J", scope=BOARD_ENERGY,
            update_period_s=windows[len(windows) // 2] or None,
        ))
    return PowerLog(file=str(path), source="zeus", channels=channels, readings={"gpu{i}_energy": readings} if readings else {},
                    utc_offset_h=None if monotonic else 0.0, time_base="monotonic" if monotonic else "wall_clock")
