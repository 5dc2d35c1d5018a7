"""Generated power logs for tests: nvidia-smi CSV whose timestamps cover (or miss) chosen absolute windows.

``smi_log`` writes what ``nvidia-smi --query-gpu=timestamp,index,power.draw,power.draw.instant,
enforced.power.limit,clocks.current.sm,utilization.gpu,clocks_event_reasons.active --format=csv -lms N`` writes:
local wall-clock timestamps without a zone (``utc_offset_h`` hours ahead of UTC), one row per sample. The power
of each sample is ``watts(t_utc_s)``; a sample is marked idle (reason 0x1, utilization 0) where ``busy(t)`` is
false, so idle power is there to be kept apart.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

HEADER = ("timestamp, index, power.draw [W], power.draw.instant [W], enforced.power.limit [W], clocks.current.sm [MHz], "
          "utilization.gpu [%], clocks_event_reasons.active")


def smi_log(
    path: Path, start_utc_s: float, end_utc_s: float, *, interval_s: float = 0.1, watts: Callable[[float], float] = lambda _t: 400.0,
    busy: Callable[[float], bool] = lambda _t: True, idle_w: float = 80.0, utc_offset_h: float = 0.0, limit_w: float = 700.0,
    sm_clock_mhz: float = 1980.0,
) -> Path:
    """Write an nvidia-smi CSV log sampling from ``start_utc_s`` to ``end_utc_s`` every ``interval_s`` seconds."""
    rows = [HEADER]
    count = int((end_utc_s - start_utc_s) / interval_s) + 1
    for k in range(count):
        t = start_utc_s + k * interval_s
        local = datetime.fromtimestamp(t, UTC).replace(tzinfo=None) + timedelta(hours=utc_offset_h)
        on = busy(t)
        power = watts(t) if on else idle_w
        rows.append(f"{local:%Y/%m/%d %H:%M:%S.%f}"[:-3] + f", 0, {power:.2f} W, {power:.2f} W, {limit_w:.2f} W, "
                    f"{sm_clock_mhz if on else 345:.0f} MHz, {100 if on else 0} %, {'0x0000000000000000' if on else '0x0000000000000001'}")
    path.write_text("\n".join(rows) + "\n")
    return path
