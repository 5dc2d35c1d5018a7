"""Words for power evidence: what each channel measures, how a window's energy was taken or why it was not,
and what each capture command records."""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

from sparsedebug.render.words.notes import say
from sparsedebug.render.words.sources import PART_TIME_SAMPLING

if TYPE_CHECKING:  # types only: wording a note (say) imports no power record
    from sparsedebug.records.power import PowerChannel, WindowEnergy

# What a channel measures, by its scope code (records.power.PowerScope; SideEnergy.scope copies it).
SCOPE_WORDS: dict[str, str] = {
    "gpu_board_power": "GPU board power (not wall power)",
    "gpu_board_energy": "GPU board energy (not wall energy)",
    "codecarbon_gpu_energy": "GPU energy as CodeCarbon measures it (NVML, all tracked GPUs summed; not wall energy)",
    "codecarbon_host_energy": ("CPU + GPU + RAM energy as CodeCarbon takes it (RAM and, without RAPL, CPU modelled); "
                               "not wall energy"),
}

# What a reader of each channel must know, by (source, field as the file names it).
CHANNEL_NOTES: dict[tuple[str, str], str] = {
    ("nvidia-smi", "power.draw.instant"): f"the last instantaneous board power reading, +/- 5 W; {PART_TIME_SAMPLING}",
    ("nvidia-smi", "power.draw.average"): ("the driver's board power average (over 1 s, Ampere except GA100 and newer), "
                                           f"+/- 5 W; {PART_TIME_SAMPLING}"),
    ("nvidia-smi", "power.draw"): ("board power averaged over 1 s on Ampere and newer (instantaneous on older GPUs), +/- 5 W; "
                                   f"{PART_TIME_SAMPLING}"),
    ("dcgm", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"): ("DCGM field 156: the board's energy counter in mJ since the driver "
                                                       "loaded; differences give energy"),
    ("dcgm", "DCGM_FI_DEV_POWER_USAGE_INSTANT"): f"DCGM field 157: instantaneous board power; {PART_TIME_SAMPLING}",
    ("dcgm", "DCGM_FI_DEV_POWER_USAGE"): ("DCGM field 155: board power as NVML's nvmlDeviceGetPowerUsage reads it, on Ampere "
                                          f"(except GA100) and newer an average over 1 s; {PART_TIME_SAMPLING}"),
}

# The same, for channels whose field name varies, by (source, quantity).
QUANTITY_NOTES: dict[tuple[str, str], str] = {
    ("nvidia-smi", "energy_counter"): ("a counter since the driver loaded (NVML nvmlDeviceGetTotalEnergyConsumption, mJ); "
                                       "differences give energy"),
    ("zeus", "energy_total"): ("GPU energy of each Zeus measurement window (NVML's energy counter difference on Volta and "
                               "newer, integrated power before); windows shorter than the counter's update period read 0 J"),
    ("codecarbon", "energy_total"): "an energy total over each row's duration, written in kWh; timestamps to the second",
}

# What each capture command (sources.importers.power.CAPTURE_COMMANDS) records, by its source.
CAPTURE_RECORDS: dict[str, str] = {
    "nvidia-smi": (
        "every 100 ms, beside the run (start it before, stop it after): board power as instantaneous and averaged "
        "readings, the enforced power limit, SM clock and clock event reasons; TZ=UTC makes its zone-less "
        "timestamps UTC (UTC offset 0). The run's window must span at least 3 update periods (300 ms at 100 ms; "
        "3 s for the 1 s averages). A driver that refuses power.draw.instant or power.draw.average (older ones) "
        "records without them"),
    "dcgm": (
        "every 100 ms, dcgm-exporter's metrics with a UTC millisecond timestamp on each sample: board power "
        "(DCGM_FI_DEV_POWER_USAGE, W), the energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since the driver "
        "loaded: differences give energy), SM clock and clock event reasons; stop the loop after the run"),
}


@overload
def scope_words(scope: str) -> str: ...
@overload
def scope_words(scope: None) -> None: ...
def scope_words(scope: str | None) -> str | None:
    """What a channel measures, in words (a scope code; None stays None)."""
    return None if scope is None else SCOPE_WORDS.get(scope, scope)


def channel_note(channel: PowerChannel) -> str:
    """What a reader of ``channel`` must know ('' when nothing beyond its scope)."""
    return CHANNEL_NOTES.get((channel.source, channel.field)) or QUANTITY_NOTES.get((channel.source, channel.quantity), "")


def _how(channel: PowerChannel) -> str:
    if channel.quantity == "energy_counter":
        return "the counter's difference interpolated at the window's edges"
    if channel.quantity == "energy_total":
        return "the source's own totals spread evenly over their windows"
    placed = f" ({channel.averaging_s:g} s averages placed at the middle of the span they average)" if channel.averaging_s else ""
    return f"power integrated over the sampling interval{placed}"


def window_words(energy: WindowEnergy) -> str:
    """One sentence: how a window's energy was taken, or what is missing and why (the file first)."""
    device = f"device {energy.failed_device}: " if energy.failed_device is not None else ""
    if energy.status != "measured" or energy.channel is None or energy.joules is None:
        why = say(energy.why) if energy.why is not None else energy.status.replace("_", " ")
        return f"{energy.file}: {device}{why}"
    duration = (energy.end_utc_s or 0.0) - (energy.start_utc_s or 0.0)
    mean = f" ({energy.mean_power_w:.1f} W mean)" if energy.mean_power_w is not None else ""
    summed = f", summed over devices {', '.join(energy.devices)}" if len(energy.devices) > 1 else ""
    events = "".join(f"; {say(e)}" for e in energy.events)
    return (f"{energy.file}: {energy.joules:.4g} J over {duration:.3f} s{mean} from {energy.channel.field}, "
            f"{_how(energy.channel)}, {energy.readings} readings{summed}; {scope_words(energy.channel.scope)}{events}")

