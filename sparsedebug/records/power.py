"""Records of power and energy evidence: what a log measures, and the energy of one run's window.

Power and energy readings differ in kind and must never be folded together: nvidia-smi's
``power.draw.average`` is the driver's average over its own window, ``power.draw.instant`` the last
instantaneous reading, DCGM's total energy a counter in millijoules since the driver loaded,
CodeCarbon and Zeus files energy totals over windows they chose. A :class:`PowerChannel` names one
such reading as the file names it and says what it measures; a :class:`PowerLog` holds the readings
of one file; a :class:`WindowEnergy` is the energy of one run's own time window taken from one
channel, or the reason it cannot be measured.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.note_codes.facts import UtcOffsetSource
from sparsedebug.records.notes import Note

# Where power or energy readings come from.
PowerSourceKind = Literal["nvidia-smi", "dcgm", "zeus", "codecarbon", "rapl"]

# What one channel reads: an instantaneous power, a power averaged over a window, a cumulative energy counter
# (differences give energy), or energy totals of windows the tool chose.
PowerQuantity = Literal["power_instant", "power_average", "energy_counter", "energy_total"]

# What a channel measures: GPU board power or energy (not wall power), or CodeCarbon's GPU energy (NVML, tracked GPUs
# summed) or its CPU + GPU + RAM energy (RAM and, without RAPL, CPU modelled); render.words.sources_power words each.
PowerScope = Literal["gpu_board_power", "gpu_board_energy", "codecarbon_gpu_energy", "codecarbon_host_energy"]

# How a window's energy was taken: a counter's difference, power integrated over the sampling interval, or a total the
# source measured over its own window.
EnergyMethod = Literal["counter_difference", "integrated_power", "window_total"]

# What a log's timestamps count: ``wall_clock`` (a date and time, or seconds since 1970), or ``monotonic`` (seconds of
# a clock that starts at boot, e.g. ``time.monotonic()``): the latter places readings against each other, never in
# time.
TimeBase = Literal["wall_clock", "monotonic"]

# ``measured``: the window's energy is known; ``too_short``: the window spans fewer update periods than a measurement
# needs; ``unaligned``: the log's clock cannot be placed against the run's; ``not_covered``: the log does not cover
# the window; ``no_reading``: the source holds no power or energy reading for the device.
EnergyStatus = Literal["measured", "too_short", "unaligned", "not_covered", "no_reading"]


class PowerChannel(Record):
    """One power or energy reading a log holds, named as the file names it."""

    source: PowerSourceKind
    field: str = Field(description="The column or metric as the file names it, e.g. 'power.draw.instant', 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'.")
    quantity: PowerQuantity
    unit: str = Field(description="The unit of the stored values after import: 'W' for power, 'J' for energy.")
    scope: PowerScope = Field(description="What is measured (a code: render.words.sources_power.SCOPE_WORDS).")
    update_period_s: float | None = Field(description="How often the reading changes as the source documents it or the log shows; None when unknown.")
    averaging_s: float | None = Field(None, description="The span one reading averages over as the source documents it (1 s for power.draw on Ampere and newer); None for instantaneous readings and counters.")


class PowerReading(Record):
    """One reading of one channel at one time."""

    device: str = Field(description="The GPU index, UUID or bus id (or 'package-0' for RAPL) as the file names it.")
    t_utc_s: float | None = Field(description="Absolute time in UTC seconds since the epoch; None when the log's clock has no known offset.")
    t_local: str = Field(description="The timestamp as the file writes it.")
    line: int = Field(description="Line (or row) of the file, for messages.")
    value: float = Field(description="Watts for power channels, joules for energy channels (converted from the file's unit).")
    window_s: float | None = Field(None, description="For energy totals: the duration the source measured over (its t_utc_s is the start of that duration).")
    label: str | None = Field(None, description="For energy totals: the source's name for the window (Zeus window_name, CodeCarbon run_id).")
    sm_clock_mhz: float | None = Field(None, description="The SM clock the same row records, when the log has clocks.")
    idle: bool | None = Field(None, description="The row's clock event reasons say gpu_idle (or, without reasons, utilisation is 0); None when the log says neither.")
    reasons: list[str] = Field(default_factory=list, description="The clock event reasons the same row records as active (nvidia_smi.decode_reasons names).")


class PowerLog(Record):
    """Every power and energy reading of one file, per channel, with the clock state beside it."""

    file: str
    source: PowerSourceKind
    channels: list[PowerChannel]
    readings: dict[str, list[PowerReading]] = Field(description="Channel field -> its readings in time order.")
    power_limit_w: float | None = Field(None, description="The enforced power limit when the log records it.")
    utc_offset_h: float | None = Field(None, description="The log clock's offset from UTC in hours when known (from the file, an option or the fingerprint).")
    utc_offset_source: UtcOffsetSource | None = Field(None, description="Where utc_offset_h came from when the file does not say it.")
    time_base: TimeBase = Field("wall_clock", description="What the timestamps count; a monotonic log has no UTC time (t_utc_s None).")


class WindowEnergy(Record):
    """The energy of one run's time window from one channel, or why it cannot be measured."""

    file: str
    channel: PowerChannel | None = Field(description="The channel used; None when the log has no usable one.")
    status: EnergyStatus
    method: EnergyMethod | None = None
    start_utc_s: float | None = None
    end_utc_s: float | None = None
    joules: float | None = Field(None, description="Energy of the window; set only when status is 'measured'.")
    mean_power_w: float | None = Field(None, description="joules / window duration; set only when status is 'measured'.")
    readings: int = Field(0, description="Readings inside the window (or bracketing it for a counter).")
    idle_power_w: float | None = Field(None, description="Median power of readings the log marks idle, kept apart from the window.")
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = Field(None, description="Median SM clock inside the window when the log records clocks.")
    clock_reasons: list[str] = Field(default_factory=list, description="Clock event reasons active in any reading the figure used (e.g. sw_power_cap), gpu_idle left out.")
    why: Note | None = Field(None, description="Why the window could not be measured (status other than 'measured'): a 'sources.window.*' note.")
    failed_device: str | None = Field(None, description="Several devices: the one whose window could not be measured.")
    events: list[Note] = Field(default_factory=list, description="What the figure had to undo or choose: counter wraps and restarts, an overlapping total taken.")
    devices: list[str] = Field(default_factory=list, description="The GPUs (or packages) the figure covers; several are summed.")
    update_period_s: float | None = Field(None, description="The reading's period the too-short rule used: the longest of the log's sampling interval, the interval between changes of the reading and its averaging span.")
