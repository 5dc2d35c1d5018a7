"""Note codes ``core.*``: timing and the statistics of a comparison: the values each carries (``records.note_codes``)."""

from __future__ import annotations

from sparsedebug.records.note_codes.facts import NoteFacts


class CoreHalfDiffers(NoteFacts):
    """``core.half_differs``."""

    CODES = ("core.half_differs",)
    half: str
    paired: bool
    ratio: float


class CoreBare(NoteFacts):
    """``core.halves_hold``."""

    CODES = ("core.halves_hold",)


class CoreHalvesTooFew(NoteFacts):
    """Notes that carry ``paired``."""

    CODES = ("core.halves_too_few", "core.no_outliers")
    paired: bool


class CoreInlierRoundsMixed(NoteFacts):
    """Notes that carry ``factor``, ``rounds``."""

    CODES = ("core.inlier_rounds_mixed", "core.inlier_rounds_moved")
    factor: float
    rounds: int


class CoreInliersOverlap(NoteFacts):
    """``core.inliers_overlap``."""

    CODES = ("core.inliers_overlap",)
    n_base: int
    n_cand: int


class CoreInliersSeparated(NoteFacts):
    """``core.inliers_separated``."""

    CODES = ("core.inliers_separated",)
    factor: float
    n_base: int
    n_cand: int


class CoreOutlierDriven(NoteFacts):
    """``core.outlier_driven``."""

    CODES = ("core.outlier_driven",)
    dropped: int
    p: float
    paired: bool
    ratio: float


class CoreOutliersDropped(NoteFacts):
    """``core.outliers_dropped``."""

    CODES = ("core.outliers_dropped",)
    dropped: int
    paired: bool


class CoreTimingContention(NoteFacts):
    """``core.timing_contention``."""

    CODES = ("core.timing_contention",)
    cores: int
    others: float
    ours: float
    share: float


class CoreTimingDisturbed(NoteFacts):
    """``core.timing_disturbed``."""

    CODES = ("core.timing_disturbed",)
    against: str | None = None
    left: int
    limit: float | None = None
    ratio_spread: float | None = None
    remeasured: int
    rounds: int
    variant: str


class CoreTimingSpread(NoteFacts):
    """``core.timing_spread``."""

    CODES = ("core.timing_spread",)
    limit: float
    spread: float
    variant: str


class CoreTimingUnsettled(NoteFacts):
    """``core.timing_unsettled``."""

    CODES = ("core.timing_unsettled",)
    budget_s: float
    rounds: int
