"""Generated power logs: nvidia-smi CSV with chosen power fields and an energy counter, at chosen times."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

SMI_STAMP = "%Y/%m/%d %H:%M:%S.%f"


def smi_stamp(t_utc_s: float, utc_offset_h: float = 0.0) -> str:
    """``t_utc_s`` as nvidia-smi writes it on a clock ``utc_offset_h`` hours ahead of UTC (milliseconds, no zone)."""
    local = datetime.fromtimestamp(t_utc_s, UTC) + timedelta(hours=utc_offset_h)
    return local.strftime(SMI_STAMP)[:-3]


def write_smi_power_log(
    path: Path,
    start_utc_s: float,
    period_s: float,
    watts: Sequence[float],
    *,
    fields: Sequence[str] = ("power.draw.instant",),
    energy_start_mj: float | None = None,
    energy_wrap_mj: float | None = None,
    utc_offset_h: float = 0.0,
    gpus: Sequence[str] = ("0",),
    idle: Sequence[bool] | None = None,
    sm_clock_mhz: float = 1980.0,
    power_limit_w: float | None = 700.0,
) -> Path:
    """An nvidia-smi ``--format=csv`` log: one row per GPU every ``period_s`` from ``start_utc_s``, each power
    field in ``fields`` reading ``watts[k]``; with ``energy_start_mj`` a ``total_energy_consumption [mJ]`` counter
    that grows by the energy of the previous interval (``watts[k-1] * period_s``), modulo ``energy_wrap_mj``."""
    header = ["timestamp", "index", *(f"{f} [W]" for f in fields)]
    header += ["enforced.power.limit [W]"] if power_limit_w is not None else []
    header += ["clocks.sm [MHz]", "clocks_event_reasons.active"]
    header += ["total_energy_consumption [mJ]"] if energy_start_mj is not None else []
    lines = [", ".join(header)]
    energy = energy_start_mj or 0.0
    for k, w in enumerate(watts):
        if k:
            energy += watts[k - 1] * period_s * 1000.0
            if energy_wrap_mj is not None:
                energy %= energy_wrap_mj
        stamp = smi_stamp(start_utc_s + k * period_s, utc_offset_h)
        for gpu in gpus:
            row = [stamp, gpu, *(f"{w:.2f} W" for _ in fields)]
            row += [f"{power_limit_w:.2f} W"] if power_limit_w is not None else []
            idle_now = idle[k] if idle is not None else False
            row += [f"{sm_clock_mhz:.0f} MHz", "0x0000000000000001" if idle_now else "0x0000000000000000"]
            row += [f"{energy:.0f} mJ"] if energy_start_mj is not None else []
            lines.append(", ".join(row))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_dcgm_metrics(
    path: Path,
    start_utc_s: float,
    period_s: float,
    watts: Sequence[float],
    *,
    energy_start_mj: float = 1.0e9,
    timestamps: bool = True,
    gpus: Sequence[str] = ("0",),
    idle: Sequence[bool] | None = None,
) -> Path:
    """dcgm-exporter metrics text: one scrape every ``period_s`` (HELP/TYPE lines, power, energy counter, SM clock,
    clock event reasons), with millisecond timestamps unless ``timestamps`` is False."""
    lines: list[str] = []
    energy = energy_start_mj
    for k, w in enumerate(watts):
        if k:
            energy += watts[k - 1] * period_s * 1000.0
        stamp = f" {round((start_utc_s + k * period_s) * 1000)}" if timestamps else ""
        lines += [
            "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).",
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
        ]
        for gpu in gpus:
            labels = f'{{gpu="{gpu}",UUID="GPU-0000000{gpu}",device="nvidia{gpu}",modelName="NVIDIA H200",Hostname="h"}}'
            reason = 1 if idle is not None and idle[k] else 0
            lines += [
                f"DCGM_FI_DEV_SM_CLOCK{labels} 1980{stamp}",
                f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{labels} {reason}{stamp}",
                f"DCGM_FI_DEV_POWER_USAGE{labels} {w:.3f}{stamp}",
                f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{labels} {energy:.0f}{stamp}",
                f"DCGM_FI_DEV_ENFORCED_POWER_LIMIT{labels} 700{stamp}",
                f"DCGM_FI_DEV_MEMORY_TEMP{labels} 9223372036854775794{stamp}",
            ]
    path.write_text("\n".join(lines) + "\n")
    return path
