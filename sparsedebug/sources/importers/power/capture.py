"""The command lines that record a power log a run's window can be measured from, as data the walk quotes
when energy evidence is missing or too coarse."""

from __future__ import annotations

from typing import NamedTuple

from sparsedebug.records.power import PowerSourceKind


class CaptureCommand(NamedTuple):
    """One way to record usable power evidence: the exact command (what it records: render.words.sources_power.CAPTURE_RECORDS)."""

    source: PowerSourceKind
    command: str


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
    ),
    CaptureCommand(
        "dcgm",
        "printf 'DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, "
        "Total energy consumption since boot (in mJ).\\nDCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\\n"
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Clock event reasons.\\n' > power-fields.csv && "
        "(dcgm-exporter -c 100 -f power-fields.csv &) && "
        "while sleep 0.1; do curl -s localhost:9400/metrics | awk -v t=$(date +%s%3N) '/^DCGM_FI_/ {print $0, t}'; done > dcgm.prom",
    ),
)
