"""dcgm-exporter metrics (Prometheus text exposition) as power evidence.

dcgm-exporter serves DCGM fields at ``/metrics`` in the Prometheus text format, one sample a line:
``NAME{label="value",...} VALUE [TIMESTAMP_MS]`` (the timestamp, milliseconds since the epoch in UTC, is optional;
``# HELP`` / ``# TYPE`` lines are comments). Its shipped ``default-counters.csv`` (NVIDIA/dcgm-exporter ``etc/``)
enables ``DCGM_FI_DEV_POWER_USAGE`` ("Power draw (in W)", a gauge) and ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``
("Total energy consumption since boot (in mJ)", a counter; ``dcgm_fields.h``: "in mJ since the driver was last
reloaded"). Also read: ``DCGM_FI_DEV_POWER_USAGE_INSTANT`` (157, instantaneous power in W),
``DCGM_FI_DEV_SM_CLOCK`` (100, MHz), ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` / ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``
(112, the NVML bitmask, bit 0x1 idle), ``DCGM_FI_DEV_GPU_UTIL`` (203, %) and ``DCGM_FI_DEV_ENFORCED_POWER_LIMIT``
(164, W). The GPU is the ``gpu`` label (else ``UUID``, ``device``). DCGM's blank values (2^47 for floats, near
2^63 for integers) are no reading.

A scrape does not make DCGM read the hardware: samples refresh at the exporter's collect interval (``-c``, in
ms), so a log of repeated scrapes shows the same value until the next collection; the update period is taken
from the log. Scrapes without timestamps cannot be placed in time (unaligned).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path

from sparsedebug.core.bounds import MAX_LOG_READING, check_bounded
from sparsedebug.core.errors import UserError
from sparsedebug.records.power import PowerChannel, PowerLog, PowerQuantity, PowerReading
from sparsedebug.sources.importers.nvidia_smi import decode_reasons
from sparsedebug.sources.importers.power.channels import (
    BOARD_ENERGY,
    BOARD_POWER,
    MAX_EPOCH_S,
    observed_update_period,
)

POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
POWER_INSTANT = "DCGM_FI_DEV_POWER_USAGE_INSTANT"
TOTAL_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
EVENT_REASONS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
POWER_LIMITS = ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT")

# The power and energy metrics: name, quantity, stored unit, joules or watts per file unit, averaging span (what
# each measures: render.words.sources_power.CHANNEL_NOTES, by field id).
_CHANNELS: tuple[tuple[str, PowerQuantity, str, float, float | None], ...] = (
    (TOTAL_ENERGY, "energy_counter", "J", 1e-3, None),
    (POWER_INSTANT, "power_instant", "W", 1.0, None),
    (POWER_USAGE, "power_average", "W", 1.0, 1.0),
)

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_BLANK_FP = 2.0**47
_BLANK_INT = 9.2e18


def is_dcgm_exposition(text: str) -> bool:
    """Text that holds dcgm-exporter samples or their HELP/TYPE lines."""
    return "DCGM_FI_" in text[:65536]


def _labels(text: str, path: Path, line: int) -> dict[str, str]:
    inner = text[1:-1]
    labels: dict[str, str] = {}
    pos = 0
    while pos < len(inner):
        match = _LABEL.match(inner, pos)
        if match is None:
            if inner[pos:].strip() in ("", ","):
                break
            raise UserError(f"{path}: line {line}: labels {text[:60]!r} are not like {{gpu=\"0\",UUID=\"GPU-...\"}}")
        labels[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
        pos = match.end()
    return labels


def load_dcgm_exposition(path: Path, text: str) -> PowerLog:
    """The power and energy samples of dcgm-exporter metrics text, one channel per metric it holds."""
    samples: dict[str, list[tuple[str, float | None, int, float]]] = defaultdict(list)  # metric -> (gpu, t, line, value)
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise UserError(f"{path}: line {line_no}: {line[:60]!r} is not a metric sample (NAME{{labels}} VALUE [TIMESTAMP_MS])")
        name, labels_text, value_text, stamp = match.groups()
        if not name.startswith("DCGM_FI_"):
            continue
        labels = _labels(labels_text, path, line_no) if labels_text else {}
        try:
            value = float(value_text)
        except ValueError:
            raise UserError(f"{path}: line {line_no}, metric {name}: value {value_text!r} is not a number") from None
        if not math.isfinite(value) or value == _BLANK_FP or abs(value) >= _BLANK_INT:
            continue
        if value < 0:
            raise UserError(f"{path}: line {line_no}, metric {name}: value {value_text!r} is negative")
        check_bounded(value, f"{path}: line {line_no}, metric {name}: value", 0.0, MAX_LOG_READING)
        if stamp is not None and not 0 <= int(stamp) / 1000.0 <= MAX_EPOCH_S:
            raise UserError(f"{path}: line {line_no}, metric {name}: timestamp {stamp} is not milliseconds since 1970 (UTC)")
        gpu = labels.get("gpu") or labels.get("UUID") or labels.get("device") or "0"
        samples[name].append((gpu, int(stamp) / 1000.0 if stamp is not None else None, line_no, value))
    clocks = {(g, t): v for g, t, _, v in samples.get(SM_CLOCK, [])}
    reasons = {(g, t): int(v) for name in EVENT_REASONS for g, t, _, v in samples.get(name, [])}
    utils = {(g, t): v for g, t, _, v in samples.get(GPU_UTIL, [])}
    channels: list[PowerChannel] = []
    readings: dict[str, list[PowerReading]] = {}
    for name, quantity, unit, scale, averaging in _CHANNELS:
        rows = samples.get(name, [])
        if not rows:
            continue
        taken = []
        for gpu, t, line_no, value in rows:
            mask = reasons.get((gpu, t))
            util = utils.get((gpu, t))
            idle = bool(mask & 0x1) if mask is not None else (util == 0 if util is not None else None)
            taken.append(PowerReading(device=gpu, t_utc_s=t, t_local=f"{int(t * 1000)}" if t is not None else "", line=line_no,
                                      value=value * scale, sm_clock_mhz=clocks.get((gpu, t)), idle=idle,
                                      reasons=decode_reasons(mask) if mask is not None else []))
        taken.sort(key=lambda r: (r.device, r.t_utc_s or 0.0, r.line))
        channels.append(PowerChannel(source="dcgm", field=name, quantity=quantity, unit=unit,
                                     scope=BOARD_ENERGY if unit == "J" else BOARD_POWER,
                                     update_period_s=_period(taken), averaging_s=averaging))
        readings[name] = taken
    limits = [v for name in POWER_LIMITS for _, _, _, v in samples.get(name, [])]
    return PowerLog(file=str(path), source="dcgm", channels=channels, readings=readings,
                    power_limit_w=Counter(limits).most_common(1)[0][0] if limits else None, utc_offset_h=0.0)


def _period(rows: list[PowerReading]) -> float | None:
    by_gpu: dict[str, list[PowerReading]] = defaultdict(list)
    for r in rows:
        if r.t_utc_s is not None:
            by_gpu[r.device].append(r)
    periods = [p for group in by_gpu.values()
               if (p := observed_update_period([r.t_utc_s or 0.0 for r in group], [r.value for r in group])) is not None]
    return max(periods) if periods else None
