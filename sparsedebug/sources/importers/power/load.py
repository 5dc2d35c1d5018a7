"""Read a power or energy log, its format told by its content."""

from __future__ import annotations

from pathlib import Path

from sparsedebug.core.bounds import MAX_UTC_OFFSET_H, check_bounded
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import read_text
from sparsedebug.records.power import PowerLog
from sparsedebug.sources.importers.nvidia_smi import load_smi, smi_time_utc_s
from sparsedebug.sources.importers.power.codecarbon import is_codecarbon, load_codecarbon, place_codecarbon_log
from sparsedebug.sources.importers.power.dcgm import is_dcgm_exposition, load_dcgm_exposition
from sparsedebug.sources.importers.power.smi import place_smi_log, power_log_from_smi
from sparsedebug.sources.importers.power.window import check_plausible
from sparsedebug.sources.importers.power.zeus import is_zeus, load_zeus

# The formats :func:`load_power_log` reads, for messages.
FORMATS = "nvidia-smi --format=csv, dcgm-exporter metrics, Zeus CSV, CodeCarbon emissions.csv"


def check_utc_offset(utc_offset_h: float | None, what: str = "UTC offset") -> None:
    """Refuse a UTC offset that is not a finite number of hours within +/-14 (``core.bounds.check_bounded``)."""
    if utc_offset_h is not None:
        check_bounded(utc_offset_h, what, -MAX_UTC_OFFSET_H, MAX_UTC_OFFSET_H, "hours")


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def load_power_log(path: Path, utc_offset_h: float | None = None) -> PowerLog:
    """Read the power and energy readings of ``path``, its format detected from its content.

    ``utc_offset_h`` is the offset from UTC, in hours, of a log clock that writes no zone (nvidia-smi); a source
    whose timestamps carry their zone ignores it. Bad input raises :class:`UserError` naming the file, line and
    column.
    """
    check_utc_offset(utc_offset_h)
    text = read_text(path)
    head = _first_line(text)
    if not head:
        raise UserError(f"{path}: empty file, expected a power log ({FORMATS})")
    names = [cell.split("[", 1)[0].strip().lower() for cell in head.split(",")]
    if head.startswith("#") or is_dcgm_exposition(head) or (is_dcgm_exposition(text) and "," not in head):
        log = load_dcgm_exposition(path, text)
        check_plausible(log, lambda r: r.t_utc_s)
        return log
    if is_zeus(names):
        return load_zeus(path, text)
    if is_codecarbon(names):
        return load_codecarbon(path, text, utc_offset_h)
    if "timestamp" in names:
        log = power_log_from_smi(load_smi(path, text=text), utc_offset_h)
        check_plausible(log, lambda r: smi_time_utc_s(r.t_local, 0.0))  # any offset gives the same differences
        return log
    raise UserError(f"{path}: line 1: not a power log this tool reads ({FORMATS}, each with its header line): "
                    f"starts {head[:60]!r}")


def with_utc_offset(log: PowerLog, utc_offset_h: float) -> PowerLog:
    """``log`` placed in UTC now that its zone-less clock's offset is known (from an option or the fingerprint);
    a log whose timestamps carry their zone is returned as it is."""
    check_utc_offset(utc_offset_h)
    if log.source == "nvidia-smi":
        return place_smi_log(log, utc_offset_h)
    if log.source == "codecarbon" and log.utc_offset_h is None:
        return place_codecarbon_log(log, utc_offset_h)
    return log
