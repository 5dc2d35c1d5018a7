"""CPU package energy from Linux RAPL (``/sys/class/powercap/intel-rapl:*/energy_uj``), read around a replay.

The counter is in microjoules and wraps at ``max_energy_range_uj``; a difference taken across a wrap is
corrected by adding that range once (a replay shorter than one wrap period, minutes at package power, is
assumed). Reading ``energy_uj`` needs permission on most kernels since 5.10 (root or a udev rule): a zone
that cannot be read is no reading, said as such. RAPL measures the CPU package, never a GPU and never
wall power.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from sparsedebug.records.energy import RaplReading

# Where the kernel exposes RAPL zones.
POWERCAP = Path("/sys/class/powercap")


@dataclass(frozen=True)
class RaplZone:
    """One top-level package zone with its counter's range."""

    path: Path
    name: str
    max_range_uj: int


@dataclass(frozen=True)
class RaplStart:
    """The counters at the start of a window."""

    zones: tuple[RaplZone, ...]
    counts_uj: tuple[int, ...]
    started: float


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def readable_zones(root: Path | None = None) -> list[RaplZone]:
    """The package zones (``intel-rapl:N``, not their sub-zones) under ``root`` (default :data:`POWERCAP`) whose
    counter and range this process can read."""
    root = POWERCAP if root is None else root
    zones = []
    for path in sorted(root.glob("intel-rapl:*")):
        if path.name.count(":") != 1:
            continue
        count, top = _read_int(path / "energy_uj"), _read_int(path / "max_energy_range_uj")
        if count is None or top is None or top <= 0:
            continue
        name = (path / "name").read_text().strip() if (path / "name").is_file() else path.name
        zones.append(RaplZone(path, name, top))
    return zones


def counter_difference_uj(before: int, after: int, max_range_uj: int) -> tuple[int, bool]:
    """Microjoules between two counter readings, and whether the counter wrapped between them."""
    if after >= before:
        return after - before, False
    return after + max_range_uj - before, True


def start(root: Path | None = None) -> RaplStart | None:
    """Read every readable package counter now; None when no zone is readable (no RAPL, or no permission)."""
    zones = readable_zones(root)
    counts = [_read_int(z.path / "energy_uj") for z in zones]
    if not zones or any(c is None for c in counts):
        return None
    return RaplStart(tuple(zones), tuple(c for c in counts if c is not None), time.monotonic())


def stop(begun: RaplStart) -> RaplReading | None:
    """The package energy since ``begun``, summed over its zones; None when a counter can no longer be read."""
    seconds = time.monotonic() - begun.started
    total_uj = 0
    wrapped = False
    for zone, before in zip(begun.zones, begun.counts_uj, strict=True):
        after = _read_int(zone.path / "energy_uj")
        if after is None:
            return None
        delta, wrap = counter_difference_uj(before, after, zone.max_range_uj)
        total_uj += delta
        wrapped = wrapped or wrap
    joules = total_uj / 1e6
    names = ", ".join(f"{z.path.name} ({z.name})" for z in begun.zones)
    return RaplReading(
        zone=names, joules=joules, seconds=seconds, mean_power_w=joules / seconds if seconds > 0 else 0.0, wrapped=wrapped,
    )
