"""Records of imported accelerator artifacts: Nsight Compute kernels, nvidia-smi logs, TensorRT build sparsity."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.engine import BuildSparsity
from sparsedebug.records.run import KernelClass

Bound = Literal["latency", "compute", "memory", "balanced"]


class NcuKernel(Record):
    """One profiled kernel launch."""

    id: str
    name: str
    kernel_class: KernelClass
    duration_us: float | None
    sm_throughput_pct: float | None
    memory_throughput_pct: float | None
    dram_throughput_pct: float | None = None
    sm_frequency_hz: float | None = None
    bound: Bound | None = Field(description="Speed-of-Light bound; None when a throughput figure is missing.")
    registers_per_thread: int | None = None
    local_spill_requests: float | None = Field(None, description="Local Memory Spilling Requests (0 = no spills).")
    spills: bool | None = None
    metrics: dict[str, str] = Field(default_factory=dict, description="Every metric as printed, '<section>/<metric> [unit]' -> value.")


class NcuReport(Record):
    """All kernels of one ncu CSV file, in profiling order."""

    file: str
    kernels: list[NcuKernel]
    sections: list[str]


class SmiSample(Record):
    """One nvidia-smi sample row."""

    line: int
    gpu: str
    time: str
    t_s: float = Field(description="Seconds since the first sample of the file.")
    temperature_c: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    power_w: float | None = Field(None, description="The board power field the log has (the first of power.draw, power.draw.instant, power.draw.average), named by the report's power_field.")
    power_draw_w: float | None = Field(None, description="power.draw: on Ampere and newer a 1 s average, instantaneous on older GPUs.")
    power_draw_instant_w: float | None = Field(None, description="power.draw.instant: the last instantaneous reading.")
    power_draw_average_w: float | None = Field(None, description="power.draw.average: the driver's average power.")
    power_limit_w: float | None = Field(None, description="enforced.power.limit (else power.limit).")
    energy_j: float | None = Field(None, description="An energy counter column, converted to joules (its unit from the header, mJ without one).")
    util_gpu_pct: float | None = None
    util_mem_pct: float | None = None
    reasons_mask: int | None = None
    reasons: list[str] = Field(default_factory=list)


class ReasonTime(Record):
    """Time under one clock event reason."""

    reason: str
    seconds: float
    samples: int
    fraction: float = Field(description="Fraction of samples with the reason active.")


class SmiSummary(Record):
    """Clock, power and temperature evidence for one GPU."""

    gpu: str
    samples: int
    duration_s: float
    max_sm_clock_mhz: float | None = Field(description="The reference maximum: given --max-clock, a clocks.max.sm column, else the max observed.")
    max_clock_source: str
    max_observed_sm_clock_mhz: float | None
    active_samples: int = Field(description="Samples not flagged gpu_idle (or utilisation > 0 without a reasons column).")
    min_sm_clock_mhz: float | None = Field(description="Minimum SM clock over active samples.")
    median_sm_clock_mhz: float | None = Field(description="Median SM clock over active samples.")
    clock_drop_pct: float | None = Field(description="(max - min active clock) / max, in %.")
    median_clock_drop_pct: float | None = Field(description="(max - median active clock) / max, in %.")
    max_temperature_c: float | None
    max_power_w: float | None
    median_power_w: float | None
    power_field: str | None = Field(None, description="Which power field max_power_w and median_power_w read (power.draw, power.draw.instant or power.draw.average).")
    reasons: list[ReasonTime]
    thermal_seconds: float = Field(description="Time with any thermal slowdown reason active.")
    power_seconds: float = Field(description="Time with any power reason (SW power cap, HW slowdown, power brake) active.")


class SmiReport(Record):
    """An nvidia-smi log: every sample and a per-GPU summary."""

    file: str
    columns: list[str]
    reasons_column: str | None
    samples: list[SmiSample]
    summaries: list[SmiSummary]
    power_field: str | None = Field(None, description="The query name of the power field samples' power_w holds; None when the log has none.")
    energy_column: str | None = Field(None, description="The header of the energy counter column when the log has one.")


class TrtSparsityReport(Record):
    """Sparse-math eligibility and choice of one (or several concatenated) TensorRT builds.

    A log whose build options say ``Sparsity: Disabled``, or that has no ``(Sparsity)`` lines at
    all, is a finding (``build_sparsity``, ``sparsity_lines``), not an error: no layer can run
    sparse, and ``enable_flags`` are the flags that would let it.
    """

    file: str
    build_sparsity: BuildSparsity = Field(BuildSparsity.NOT_SAID, description="The build options' Sparsity: line, when the log has one.")
    build_sparsity_line: int | None = Field(None, description="Line number of the Sparsity: build option.")
    sparsity_lines: bool = Field(True, description="Whether the log has any (Sparsity) eligible or picked line.")
    enable_flags: list[str] = Field(
        default_factory=list, description="Set when no layer can have run sparse: the flags that build with sparsity enabled."
    )
    eligible: list[str]
    picked: list[str]
    fallback: list[str] = Field(description="Eligible but not picked: ran dense.")
    picked_not_eligible: list[str] = Field(default_factory=list, description="Picked without an eligible line naming them (log inconsistency).")
    eligible_lines: list[int] = Field(default_factory=list)
    picked_lines: list[int] = Field(default_factory=list)
    complete: bool = Field(True, description="Both the eligible and the picked line were found.")


