"""How trustworthy a set of timings is: interference seen while measuring, per round and overall.

Written by the noise-aware harness (:func:`sparsedebug.core.timing.measure`) into
the records whose timings it took (the replay's whole-forward outcome, each
``bench kernel`` row). A comparison whose timings are ``unstable`` is not reported
as a speedup: gate and bisect treat it as inconclusive.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.notes import Note

# Why a round was flagged. ``off_cpu``: wall time far above the process CPU time (the process waited, descheduled);
# ``preempted``: involuntary context switches during a round that ran well above the variant's median;
# ``tick_quantised``: the time lost is close to a whole number of scheduler ticks (another runnable process took the
# CPU for its time slices); ``outlier``: the round is far slower than the variant's median.
Flag = Literal["off_cpu", "preempted", "tick_quantised", "outlier"]


class VariantTiming(Record):
    """One timed variant: its final samples' spread, and its rounds' raw clocks."""

    name: str
    spread: float = Field(description="(p90 - p10) / p50 of the final wall-time samples.")
    wall_ms: list[float] = Field(description="Final wall time per round, per call (the median of the sample's calls; flagged rounds replaced when re-measured clean).")
    cpu_ms: list[float] = Field(description="Process CPU time per round, per call, same rounds.")
    flagged: list[list[Flag]] = Field(description="Flags left on each final round.")


class TimingQuality(Record):
    """Interference while timing, and whether the comparison between the variants stands."""

    status: Literal["stable", "unstable"]
    problems: list[Note] = Field(default_factory=list, description="Unstable: each problem (codes 'core.timing_*'); stable: none.")
    rounds: int
    flagged_rounds: int = Field(description="Rounds flagged in the first pass.")
    remeasured_rounds: int = Field(description="Extra rounds run to replace flagged ones (bounded).")
    still_flagged: int = Field(description="Rounds still flagged after re-measurement.")
    flags: dict[str, int] = Field(default_factory=dict, description="Count of each flag over the first pass, all variants.")
    load_average: list[float] = Field(default_factory=list, description="1-minute load average at the start of each final round.")
    cores: int | None = None
    competing_cores: float | None = Field(
        None,
        description="Cores other processes kept busy on average while measuring (machine CPU time from /proc/stat minus "
        "this process's, over the wall time); None where unreadable or the measurement was too short to tell.",
    )
    contended_share: float | None = Field(
        None,
        description="Share of the measured time in windows of consecutive rounds where other processes held the spare "
        "cores (sustained contention needs most of it: NoisePolicy.min_contended_share). None where competing_cores is None.",
    )
    tick_ms: float
    calls_per_sample: int = Field(
        1, ge=1,
        description="Calls of each variant in one sample (alternating call by call with the other variants), set so a sample of the fastest lasts the harness' "
        "minimum (records.defaults.MIN_SAMPLE_MS, where the caller asks for one); each sample is the median of its calls, so a "
        "percentile of the samples is one of per-sample medians, not of single calls.",
    )
    short_samples: int = Field(
        0, ge=0,
        description="Final rounds whose samples hold fewer than calls_per_sample calls: the round ran past its time bound "
        "(core.timing.ROUND_BOUND times the minimum sample per variant) and stopped its passes.",
    )
    preempted_calls: int = Field(
        0, ge=0,
        description="Calls of several-call samples (final rounds, every variant) left out of their sample's median: each spent more "
        "than NoisePolicy.call_off_cpu_share of its wall time off the CPU, so it timed the scheduler rather than the call.",
    )
    variants: list[VariantTiming] = Field(default_factory=list)
    contention_only: bool = Field(
        False,
        description="Unstable for sustained contention alone (no disturbed rounds left, no spread beyond the bound): "
        "variants timed in the same rounds, such as the two sides of one interleaved session, still compare, since a "
        "competitor that holds a core throughout slows both sides of every round alike.",
    )
    ratio_settled: bool | None = Field(
        None, description="Sampled until the compared variants' per-round ratio settled (core.timing.measure's settle): "
        "whether it did within the time budget; None when not asked. Settled, the two sides of one session compare "
        "however widely their raw times spread (the rounds carry the machine's drift to both alike).",
    )
    settle_rounds: int = Field(0, description="Rounds added to settle the ratio, beyond the rounds asked for.")

    @property
    def stable(self) -> bool:
        """Whether the timings can be compared."""
        return self.status == "stable"
