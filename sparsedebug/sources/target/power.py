"""Board power measured on the target under load, for energy ESTIMATES (never measurements of a run).

The target source's ``power:`` entry names an nvidia-smi log taken on the target GPU during a run; the
samples at or above ``busy_utilization_pct`` utilization are *under load*. Their median board power,
with the smallest and largest as the range, is what :func:`sparsedebug.signoff.energy.target_estimate`
multiplies a projected forward time by. It says nothing about the power of the run being estimated:
2:4 GEMMs and dense GEMMs may draw different power, and the estimate assumes the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sparsedebug.core.resources import data_file
from sparsedebug.core.stats import median
from sparsedebug.records.energy import BoardPowerBasis
from sparsedebug.sources.target.data import load_calibration


@dataclass(frozen=True)
class BoardPower:
    """Board power of the target under load, from one log: median, range and where it came from."""

    median_w: float
    low_w: float
    high_w: float
    samples: int
    limit_w: float | None
    basis: BoardPowerBasis


@lru_cache(maxsize=4)
def board_power_under_load(target: str) -> BoardPower | None:
    """The target source ``target``'s board power under load; None when it names no power log or no sample is under load."""
    from sparsedebug.sources.importers.nvidia_smi import load_smi

    spec = load_calibration(target).source
    power = spec.power
    if power is None:
        return None
    path = data_file(spec.data, power.file)
    report = load_smi(path)
    busy = [s for s in report.samples if s.power_w is not None and (s.util_gpu_pct or 0.0) >= power.busy_utilization_pct]
    watts = [s.power_w for s in busy if s.power_w is not None]
    if not watts:
        return None
    return BoardPower(
        median_w=median(watts), low_w=min(watts), high_w=max(watts), samples=len(watts), limit_w=power.limit_w,
        basis=BoardPowerBasis(file=power.file, min_utilization_pct=power.busy_utilization_pct,
                              lines=[s.line for s in busy], limit_source=power.limit_source if power.limit_w is not None else None),
    )
