"""Records of a walk's energy figures (``energy.json`` in a bundle): per side, measured or estimated, never mixed.

A side's measured figures come from a power log's readings inside that run's own time window
(``records.power.WindowEnergy``): per iteration where every iteration's window can be measured, else
over windows of consecutive iterations, else over the run's whole window. Joules per forward, joules
per token and tokens per joule are quoted as the p50 over those windows with the median's
distribution-free interval. An *estimate* (the target cost model's projected forward times board
power measured on the target under load) lives in its own field with its own basis, so no reader
can quote one as the other.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.bundle import InputRole
from sparsedebug.records.power import WindowEnergy

# What the p50 and interval range over: one window per iteration, windows of consecutive iterations, or the run's
# whole window (one value, no interval).
EnergyOver = Literal["iterations", "windows", "run_window"]

# ``measured``: figures exist; the ``records.power`` statuses from the run's window; ``no_window``: the run records no
# absolute time (a replay); ``no_log``: no power log was given.
SideStatus = Literal["measured", "too_short", "unaligned", "not_covered", "no_reading", "no_window", "no_log"]


EnergyUnit = Literal["J/forward", "J/token", "tokens/J"]

# An interleaved replay session of two sides that one RAPL reading covers.
RaplSession = Literal["baseline_candidate", "fixed_candidate"]

# What this machine reads of a walk's energy: nothing (the runs are imported, their energy is the power log's), the CPU
# package (RAPL) around each replay, a readable RAPL counter no replay was read with, or no reading at all.
MachineEnergy = Literal["imported", "rapl_read", "rapl_unused", "no_reading"]


class EnergySummary(Record):
    """One energy figure over the windows a side was measured in: p50 and the median's interval."""

    unit: EnergyUnit
    p50: float
    low: float | None = Field(description="Lower end of the median's interval; None for a single window.")
    high: float | None = Field(description="Upper end of the median's interval; None for a single window.")
    confidence: float = Field(description="Confidence of the interval for the median: 0.95, or what the range of fewer windows gives (0.75 for 3).")
    n: int = Field(description="Windows the figure ranges over.")


class BoardPowerBasis(Record):
    """Where a target's board power under load comes from: the nvidia-smi log and the samples of it that count."""

    file: str = Field(description="The target's nvidia-smi log (relative to its data folder).")
    min_utilization_pct: float = Field(description="Samples at or above this utilization.gpu count as under load.")
    lines: list[int] = Field(description="The lines of the samples under load the median is taken over.")
    limit_source: str | None = Field(None, description="Where the power limit is quoted from, as the target's data file gives it.")


class EnergyEstimate(Record):
    """An energy ESTIMATE on the target GPU: projected forward time times board power measured there under load."""

    device: str
    forward_ms: float = Field(description="The run's whole forward projected on the target clock.")
    board_power_w: float = Field(description="Median board power of the target's log samples under load.")
    board_power_low_w: float
    board_power_high_w: float
    joules_per_forward: float
    joules_per_forward_low: float
    joules_per_forward_high: float
    joules_per_token: float | None = None
    tokens_per_joule: float | None = None
    power_limit_w: float | None = None
    launch: str = Field(description="How the target launches the projected forward (eager, cuda_graph).")
    forward_basis: str = Field(description="The cost model's basis of the projected forward (measured, interpolated, ...).")
    power_basis: BoardPowerBasis = Field(description="Where the board power under load comes from (the log, its samples under load).")


class RaplReading(Record):
    """CPU package energy (RAPL) read around one replay: the whole replay, not per forward."""

    zone: str = Field(description="The powercap zone read, e.g. 'intel-rapl:0 (package-0)'.")
    joules: float
    seconds: float
    mean_power_w: float
    wrapped: bool = Field(description="Whether the counter wrapped during the replay (corrected with max_energy_range_uj).")
    # When the replay was an interleaved session of two sides (one reading for both): which, 'baseline_candidate' or
    # 'fixed_candidate' (the fixed candidate and the candidate again).
    session: RaplSession | None = None


class SideEnergy(Record):
    """One side's energy: measured figures from its own window, or why none, with the clock state beside."""

    role: InputRole
    run: str = Field(description="The run's name.")
    status: SideStatus
    over: EnergyOver | None = None
    windows: list[WindowEnergy] = Field(default_factory=list, description="Every window measured (or tried) for this side.")
    forwards_per_window: int | None = Field(None, description="Forwards (iterations) inside each window the figures divide by.")
    tokens_per_forward: int | None = None
    joules_per_forward: EnergySummary | None = None
    joules_per_token: EnergySummary | None = None
    tokens_per_joule: EnergySummary | None = None
    mean_power_w: float | None = Field(None, description="Median of the windows' mean board power.")
    idle_power_w: float | None = Field(None, description="Power of readings the log marks idle, kept apart from the figures.")
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = Field(None, description="Median SM clock inside the window when the log records clocks.")
    clock_reasons: list[str] = Field(default_factory=list, description="Clock event reasons active in any reading of the windows (gpu_idle left out).")
    scope: str | None = Field(None, description="What the channel measures (board power, not wall power; CPU package ...).")
    channel: str | None = Field(None, description="The channel the figures come from, as the file names it.")
    replayed: bool = Field(False, description="no_window: the run is a replay on this machine (else its source records no absolute time).")
    estimate: EnergyEstimate | None = Field(None, description="GPU profiles: the target estimate, never a measurement.")
    rapl: RaplReading | None = Field(None, description="Replays with a readable RAPL counter: package energy of the whole replay.")


class EnergyReport(Record):
    """``energy.json``: the energy of baseline, candidate and fixed, each from its own window."""

    # 2: the sides' notes, the machine's reading and the estimates' basis are facts, not sentences.
    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["energy"] = "energy"
    log: str | None = Field(None, description="The power log used, as given.")
    log_option: str | None = Field(None, description="How it was given: '--power', or '--smi' (its power columns).")
    log_source: str | None = Field(None, description="What wrote the log (nvidia-smi, dcgm, zeus, codecarbon).")
    sides: list[SideEnergy]
    machine: MachineEnergy = Field(description="What this machine can read: the built-in replay's energy reading, or that it has none.")
    capture: list[str] = Field(default_factory=list, description="The command lines that record a usable window, when evidence is missing.")

    def side(self, role: str) -> SideEnergy | None:
        """The figures of one role, when the report has them."""
        return next((s for s in self.sides if s.role == role), None)
