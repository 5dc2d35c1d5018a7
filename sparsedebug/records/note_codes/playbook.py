"""Note codes ``playbook.*`` and ``reduce.*``: the walk's steps and the reducer's probes: the values each carries
(``records.note_codes``)."""

from __future__ import annotations

from typing import Literal

from sparsedebug.records.note_codes.facts import NoteFacts


class PlaybookBare(NoteFacts):
    """playbook.* notes that carry no values."""

    CODES = (
        "playbook.bisect",
        "playbook.classify",
        "playbook.fix_applied",
        "playbook.fix_not_applied",
        "playbook.freeze",
        "playbook.locate",
        "playbook.no_fix",
        "playbook.no_fixed",
        "playbook.no_reduction",
        "playbook.reduce",
        "playbook.reduce_skipped",
        "playbook.reproduce",
        "playbook.rerun",
        "playbook.trace_cut",
    )


class PlaybookClassified(NoteFacts):
    """``playbook.classified``."""

    CODES = ("playbook.classified",)
    winner: str | None


class PlaybookEnergyMachine(NoteFacts):
    """``playbook.energy_machine``."""

    CODES = ("playbook.energy_machine",)
    machine: Literal["imported", "rapl_read", "rapl_unused", "no_reading"]


class PlaybookEnergyMeasured(NoteFacts):
    """``playbook.energy_measured``."""

    CODES = ("playbook.energy_measured",)
    file: str
    option: str | None
    roles: list[str]


class PlaybookEnergyUnmeasured(NoteFacts):
    """``playbook.energy_unmeasured``."""

    CODES = ("playbook.energy_unmeasured",)
    roles: list[str]
    statuses: list[str]


class PlaybookFixNeedsRerun(NoteFacts):
    """``playbook.fix_needs_rerun``."""

    CODES = ("playbook.fix_needs_rerun",)
    action: str | None
    kind: str
    rule: str


class PlaybookFixedDrifted(NoteFacts):
    """``playbook.fixed_drifted``."""

    CODES = ("playbook.fixed_drifted",)
    drift: float | None
    judgement: str | None


class PlaybookFixedGiven(NoteFacts):
    """``playbook.fixed_given``."""

    CODES = ("playbook.fixed_given",)
    kind: str
    path: str


class PlaybookFrozen(NoteFacts):
    """``playbook.frozen``."""

    CODES = ("playbook.frozen",)
    git: str
    seed: int | None


class PlaybookLoadFixed(NoteFacts):
    """Notes that carry ``file``."""

    CODES = ("playbook.load_fixed", "playbook.load_fixed_early")
    file: str


class PlaybookLoadInput(NoteFacts):
    """``playbook.load_input``."""

    CODES = ("playbook.load_input",)
    file: str
    role: str
    verb: str


class PlaybookLocated(NoteFacts):
    """``playbook.located``."""

    CODES = ("playbook.located",)
    first_stage: str | None
    state: str


class PlaybookNextByAttribution(NoteFacts):
    """``playbook.next_by_attribution``."""

    CODES = ("playbook.next_by_attribution",)
    delta_ms: float
    ms: float
    share: float | None
    winner: str


class PlaybookNextByScore(NoteFacts):
    """``playbook.next_by_score``."""

    CODES = ("playbook.next_by_score",)
    score: float
    winner: str


class PlaybookNoTraceRepro(NoteFacts):
    """``playbook.no_trace_repro``."""

    CODES = ("playbook.no_trace_repro",)
    stage: str | None
    state: str


class PlaybookOpened(NoteFacts):
    """``playbook.opened``."""

    CODES = ("playbook.opened",)
    file: str
    source: str


class PlaybookReduced(NoteFacts):
    """``playbook.reduced``."""

    CODES = ("playbook.reduced",)
    file: str
    reproducer: str | None


class PlaybookRemovedStale(NoteFacts):
    """``playbook.removed_stale``."""

    CODES = ("playbook.removed_stale",)
    entry: str
    partial: bool
    pid: int


class PlaybookReplayFixed(NoteFacts):
    """Notes that carry ``file``."""

    CODES = ("playbook.replay_fixed", "playbook.replay_fixed_pair")
    file: str | None


class PlaybookReplayPair(NoteFacts):
    """``playbook.replay_pair``."""

    CODES = ("playbook.replay_pair",)
    baseline: str
    candidate: str


class PlaybookRerunMoved(NoteFacts):
    """``playbook.rerun_moved``."""

    CODES = ("playbook.rerun_moved",)
    change: float | None
    direction: str | None
    moved: bool | None


class PlaybookRestoredPrevious(NoteFacts):
    """``playbook.restored_previous``."""

    CODES = ("playbook.restored_previous",)
    bundle: str
    entry: str
    pid: int


class PlaybookRunSets(NoteFacts):
    """``playbook.run_sets``."""

    CODES = ("playbook.run_sets",)
    ranks: int
    walked: int


class PlaybookTraceRepro(NoteFacts):
    """``playbook.trace_repro``."""

    CODES = ("playbook.trace_repro",)
    files: list[str]
    finding: str
    layer: str
    stage: str
    targets: int


class ReduceBare(NoteFacts):
    """reduce.* notes that carry no values."""

    CODES = ("reduce.check_static", "reduce.check_timed", "reduce.confirm")


class ReduceProbe(NoteFacts):
    """``reduce.probe``."""

    CODES = ("reduce.probe",)
    flaky: bool
    n: int
    outcome: str
    phase: str
    tried: str


class ReduceStopShrinking(NoteFacts):
    """``reduce.stop_shrinking``."""

    CODES = ("reduce.stop_shrinking",)
    error: str
    phase: str


class ReduceTarget(NoteFacts):
    """``reduce.target``."""

    CODES = ("reduce.target",)
    changes: int
    finding: str | None
    stage: str


class ReduceTokensOnly(NoteFacts):
    """``reduce.tokens_only``."""

    CODES = ("reduce.tokens_only",)
    source: str
