"""Note codes ``signoff.*`` and ``movement.*``: the speedup's basis and the latency a fix is expected to move: the
values each carries (``records.note_codes``)."""

from __future__ import annotations

from sparsedebug.records.note_codes.facts import Embed, EqualLatencyFigures, NoteFacts


class MovementAlreadyDense(NoteFacts):
    """``movement.already_dense``."""

    CODES = ("movement.already_dense",)
    layer: str
    p50_ms: float


class MovementConversion(NoteFacts):
    """``movement.conversion``."""

    CODES = ("movement.conversion",)
    cost_ms: float
    growth_ms: float | None
    layers: int
    p50_ms: float
    reach_ms: float | None


class MovementExcludeLayer(NoteFacts):
    """``movement.exclude_layer``."""

    CODES = ("movement.exclude_layer",)
    delta_ms: float
    dense_ms: float
    layer: str
    p50_ms: float
    sparse_ms: float


class MovementFixRemoves(NoteFacts):
    """``movement.fix_removes``."""

    CODES = ("movement.fix_removes",)
    basis: str
    layers: int
    p50_ms: float
    removes_ms: float


class MovementLayerToSparse(NoteFacts):
    """``movement.layer_to_sparse``."""

    CODES = ("movement.layer_to_sparse",)
    EMBEDS = (Embed(code_key="source", prefix="source_"),)
    dense_ms: float
    layer: str
    layers: int
    p50_ms: float
    saved_ms: float
    speedup: float


class MovementBare(NoteFacts):
    """movement.* notes that carry no values."""

    CODES = ("movement.no_conversion_time", "movement.no_samples_or_fix", "movement.speedup_expected")


class MovementNoProjection(NoteFacts):
    """``movement.no_projection``."""

    CODES = ("movement.no_projection",)
    kind: str


class MovementNoSparseSpeedup(NoteFacts):
    """``movement.no_sparse_speedup``."""

    CODES = ("movement.no_sparse_speedup",)
    layer: str


class MovementSavingPastForward(NoteFacts):
    """``movement.saving_past_forward``."""

    CODES = ("movement.saving_past_forward",)
    basis: str
    p50_ms: float
    saving_ms: float


class MovementScheduleOverhead(NoteFacts):
    """``movement.schedule_overhead``."""

    CODES = ("movement.schedule_overhead",)
    baseline: bool
    keep_ms: float
    overhead_ms: float
    p50_ms: float


class SignoffEqualLatency(EqualLatencyFigures):
    """``signoff.equal_latency``."""

    CODES = ("signoff.equal_latency",)


class SignoffSpeedupBaselinePairs(NoteFacts):
    """``signoff.speedup_baseline_pairs``."""

    CODES = ("signoff.speedup_baseline_pairs",)
    layers: int


class SignoffSpeedupBaselineSparse(NoteFacts):
    """``signoff.speedup_baseline_sparse``."""

    CODES = ("signoff.speedup_baseline_sparse",)
    base_sparse_calls: int


class SignoffSpeedupByOp(NoteFacts):
    """``signoff.speedup_by_op``."""

    CODES = ("signoff.speedup_by_op",)
    base_calls: int
    base_ms: float
    dense_calls: int
    dense_ms: float
    sparse_calls: int
    sparse_ms: float


class SignoffSpeedupGemmUnpaired(NoteFacts):
    """``signoff.speedup_gemm_unpaired``."""

    CODES = ("signoff.speedup_gemm_unpaired",)
    base_calls: int
    calls: int
    sparse_calls: int


class SignoffBare(NoteFacts):
    """signoff.* notes that carry no values."""

    CODES = ("signoff.speedup_no_sparse_gemm", "signoff.speedup_none_sparse")


class SignoffSpeedupNoDenseLeft(NoteFacts):
    """``signoff.speedup_no_dense_left``: the baseline's dense calls and time by op, none left dense in the candidate."""

    CODES = ("signoff.speedup_no_dense_left",)
    base_calls: int
    base_ms: float
    dense_calls: int
    dense_ms: float


class SignoffSpeedupNoPairs(NoteFacts):
    """``signoff.speedup_no_pairs``."""

    CODES = ("signoff.speedup_no_pairs",)
    baseline: bool


class SignoffSpeedupOwnPairs(NoteFacts):
    """``signoff.speedup_own_pairs``."""

    CODES = ("signoff.speedup_own_pairs",)
    converting: int
    layers: int
