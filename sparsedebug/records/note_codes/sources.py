"""Note codes ``sources.*``: what the importers found in a trace or a power log: the values each carries
(``records.note_codes``)."""

from __future__ import annotations

from sparsedebug.records.note_codes.facts import NoteFacts, UtcOffsetSource


class SourcesClassesSeen(NoteFacts):
    """``sources.classes_seen``."""

    CODES = ("sources.classes_seen",)
    classes: list[str]


class SourcesCounterRestarted(NoteFacts):
    """Notes that carry ``line_after``, ``line_before``."""

    CODES = ("sources.counter.restarted", "sources.counter.wrapped")
    line_after: int
    line_before: int


class SourcesIterationsAnnotation(NoteFacts):
    """``sources.iterations.annotation``."""

    CODES = ("sources.iterations.annotation",)
    layer: str


class SourcesIterationsGraphLaunches(NoteFacts):
    """Notes that carry ``count``."""

    CODES = ("sources.iterations.graph_launches", "sources.iterations.profiler_steps")
    count: int


class SourcesIterationsKernelPeriod(NoteFacts):
    """``sources.iterations.kernel_period``."""

    CODES = ("sources.iterations.kernel_period",)
    unit: int


class SourcesIterationsRepeatingCalls(NoteFacts):
    """``sources.iterations.repeating_calls``."""

    CODES = ("sources.iterations.repeating_calls",)
    p: float | None
    unit: int
    units: int
    units_per_iteration: int | None


class SourcesBare(NoteFacts):
    """sources.* notes that carry no values."""

    CODES = ("sources.iterations.whole_trace", "sources.window.no_run_window")


class SmiClockPlaced(NoteFacts):
    """How an nvidia-smi log's clock was placed on the run's (``classify.evidence.windowed_smi_evidence``): the UTC
    offset taken and where it came from; or, when none was given, what the search over the real UTC offsets found
    (``tried`` offsets, those ``aligned`` with the ``runs`` windows, the log's first and last time)."""

    offset_h: float | None = None
    offset_from: UtcOffsetSource | None = None
    fingerprint_created: str | None = None
    offset_searched: bool | None = None
    runs: int | None = None
    tried: int | None = None
    aligned: list[float] | None = None
    log_first_s: float | None = None
    log_last_s: float | None = None


class SourcesSmiWindowEmpty(SmiClockPlaced):
    """``sources.smi_window.empty``."""

    CODES = ("sources.smi_window.empty",)
    file: str
    log_first_s: float | None
    log_last_s: float | None
    start_utc_s: float


class SourcesSmiWindowNoRunWindow(SmiClockPlaced):
    """``sources.smi_window.no_run_window``."""

    CODES = ("sources.smi_window.no_run_window",)
    file: str


class SourcesSmiWindowNoUtcOffset(SmiClockPlaced):
    """``sources.smi_window.no_utc_offset``."""

    CODES = ("sources.smi_window.no_utc_offset",)
    file: str


class SourcesSmiWindowSamples(SmiClockPlaced):
    """``sources.smi_window.samples``."""

    CODES = ("sources.smi_window.samples",)
    file: str
    samples: int
    seconds: float
    start_utc_s: float


class SourcesTotalsOverlapTookClosest(NoteFacts):
    """``sources.totals.overlap_took_closest``."""

    CODES = ("sources.totals.overlap_took_closest",)
    label: str | None
    line: int


class SourcesWindowClosestTotalPartlyCovers(NoteFacts):
    """Notes that carry ``covered_s``, ``window_s``."""

    CODES = ("sources.window.closest_total_partly_covers", "sources.window.totals_partly_cover")
    covered_s: float
    window_s: float


class SourcesWindowFewPeriods(NoteFacts):
    """``sources.window.few_periods``."""

    CODES = ("sources.window.few_periods",)
    averaging_s: float | None
    field: str
    min_periods: int
    part_time_sampled: bool
    period_s: float
    update_period_s: float | None
    window_s: float


class SourcesWindowMonotonicClock(NoteFacts):
    """Notes that carry ``source``: the power log's clock cannot be placed on the run's (``sources.importers.power.window``)."""

    CODES = ("sources.window.monotonic_clock", "sources.window.no_timestamps", "sources.window.no_utc_offset")
    source: str


class SourcesWindowNoChannel(NoteFacts):
    """``sources.window.no_channel``."""

    CODES = ("sources.window.no_channel",)
    device: str | None
    source: str


class SourcesWindowNoDuration(NoteFacts):
    """``sources.window.no_duration``."""

    CODES = ("sources.window.no_duration",)
    end_utc_s: float
    start_utc_s: float


class SourcesWindowOutsideLog(NoteFacts):
    """``sources.window.outside_log``."""

    CODES = ("sources.window.outside_log",)
    end_utc_s: float
    log_end_utc_s: float
    log_start_utc_s: float
    start_utc_s: float


class SourcesWindowPartlyCovered(NoteFacts):
    """``sources.window.partly_covered``."""

    CODES = ("sources.window.partly_covered",)
    covered_s: float
    end_utc_s: float
    log_end_utc_s: float
    log_start_utc_s: float
    start_utc_s: float
    window_s: float


class SourcesWindowTotalsShareShort(NoteFacts):
    """``sources.window.totals_share_short``."""

    CODES = ("sources.window.totals_share_short",)
    field: str
    needed: float
    share: float
    window_s: float


class SourcesWindowTotalsWithoutDuration(NoteFacts):
    """``sources.window.totals_without_duration``."""

    CODES = ("sources.window.totals_without_duration",)
    field: str
