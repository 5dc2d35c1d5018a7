"""The command lines that record a power log a run's window can be measured from, as data the walk quotes
when energy evidence is missing or too coarse."""

from __future__ import annotations

from typing import NamedTuple

from sparsedebug.records.power import PowerSourceKind


class CaptureCommand(NamedTuple):
    """One way to record usable power evidence: the exact command and what it records."""

    source: PowerSourceKind
    command: str
    records: str


# The nvidia-smi fields a power log needs: each power reading, the limit, the clock and why it is held.
SMI_QUERY = (
    "timestamp,index,power.draw.instant,power.draw.average,power.draw,enforced.power.limit,"
    "clocks.sm,clocks.max.sm,clocks_event_reasons.active,utilization.gpu,temperature.gpu"
)

# Ways to record a usable window, best first.
CAPTURE_COMMANDS: tuple[CaptureCommand, ...] = (
    CaptureCommand(
        "nvidia-smi",
        f"TZ=UTC nvidia-smi --query-gpu={SMI_QUERY} --format=csv -lms 100 -f power.csv",
        "every 100 ms, beside the run (start it before, stop it after): board power as instantaneous and averaged "
        "readings, the enforced power limit, SM clock and clock event reasons; TZ=UTC makes its zone-less "
        "timestamps UTC (UTC offset 0). The run's window must span at least 3 update periods (300 ms at 100 ms; "
        "3 s for the 1 s averages). A driver that refuses power.draw.instant or power.draw.average (older ones) "
        "records without them",
    ),
    CaptureCommand(
        "dcgm",
        "printf 'DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, "
        "Total energy consumption since boot (in mJ).\\nDCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\\n"
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Clock event reasons.\\n' > power-fields.csv && "
        "(dcgm-exporter -c 100 -f power-fields.csv &) && "
        "while sleep 0.1; do curl -s localhost:9400/metrics | awk -v t=$(date +%s%3N) '/^DCGM_FI_/ {print $0, t}'; done > dcgm.prom",
        "every 100 ms, dcgm-exporter's metrics with a UTC millisecond timestamp on each sample: board power "
        "(DCGM_FI_DEV_POWER_USAGE, W), the energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since the driver "
        "loaded: differences give energy), SM clock and clock event reasons; stop the loop after the run",
    ),
)
