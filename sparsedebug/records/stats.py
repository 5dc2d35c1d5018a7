"""Statistics records: percentiles, the comparison of two samples and the defaults of its test.

The records and constants live on the ground floor so that every record that quotes a
comparison (findings, gate) can hold one; the computations are in ``core.stats``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.defaults import DEFAULT_ALPHA as DEFAULT_ALPHA
from sparsedebug.records.defaults import DEFAULT_MIN_EFFECT as DEFAULT_MIN_EFFECT
from sparsedebug.records.defaults import DEFAULT_MIN_SAMPLES as DEFAULT_MIN_SAMPLES
from sparsedebug.records.notes import Note

# Fewest samples whose p99 is a tail estimate rather than the sample maximum: below it, a p99 is reported as
# inconclusive (classify, memo, the report's figures), never as a tail estimate. The gate's tail check does not
# estimate the p99: it counts candidate samples above the baseline's largest (``core.tails``), which can fail from 3
# samples a side.
TAIL_MIN_SAMPLES = 20

# How every report says why a p99 of fewer than ``TAIL_MIN_SAMPLES`` samples is inconclusive (``.format(n=...)``).
P99_FEW_SAMPLES = (
    "a p99 of {n} samples (fewer than " + str(TAIL_MIN_SAMPLES) + ") is interpolated between the two largest samples, "
    "not a tail estimate"
)


class Percentiles(Record):
    """p50/p95/p99 of a sample, with its size."""

    n: int
    p50: float
    p95: float
    p99: float
    slowest: float | None = Field(None, description="The largest sample (None on records from before it was kept): below "
                                  "TAIL_MIN_SAMPLES the memo states it in place of p95 and p99.")


Direction = Literal["slower", "faster", "same"]

# What one difference of timings is, by the one rule of ``core.judgement`` (docs/reference/judgement.md): the
# candidate faster (``win``), slower (``loss``), neither (``no_change``), or not decidable on these samples.
Judgement = Literal["win", "loss", "no_change", "inconclusive"]


class JudgementRule(Record):
    """The rule's settings: when a difference of two samples of timings is a win, a loss, no change or inconclusive.

    A policy file sets them (the gate policy's ``significance`` section); gate, bisect, the decision and
    every pass/fail check read the same three.
    """

    alpha: float = Field(
        DEFAULT_ALPHA, gt=0.0, lt=1.0,
        description="Significance level, in (0, 1), of the two-sided rank test (Mann-Whitney U; signed-rank on paired rounds).",
    )
    factor: float = Field(
        DEFAULT_MIN_EFFECT, ge=1.0, le=100.0, allow_inf_nan=False,
        description="asv-style factor (1 to 100): the median ratio must pass it (either way) to be a win or a loss.",
    )
    min_samples: int = Field(
        DEFAULT_MIN_SAMPLES, ge=2, le=10_000,
        description="Fewest samples a side (trace iterations, replay rounds) judged at all; fewer: inconclusive.",
    )


class SampleComparison(Record):
    """Candidate samples versus baseline samples: effect size, CI, test, persistence, verdict.

    ``ratio`` is candidate median / baseline median over all samples (above 1:
    the candidate is larger, i.e. slower for times). ``n_base``/``n_cand`` are
    the sample counts the rank test used; when a side had more than
    ``MAX_TEST_SAMPLES``, ``subsampled_from`` holds the original ``[base, cand]``
    counts and the test ran on a deterministic subsample. ``ci_low``/``ci_high``
    bound the ratio at confidence ``1 - alpha``; they are ``None`` when the
    sample sizes cannot support an interval at that level. ``direction`` is
    ``"same"`` unless the change is significant (test AND minimum effect).

    ``paired``: the two sides were timed in the same rounds and compared round by
    round (``core.paired``: Wilcoxon signed-rank on the per-round log ratios, so drift
    common to both cancels); ``ratio`` and its interval are then the Hodges-Lehmann
    per-round ratio, and ``n_base == n_cand`` the rounds tested.
    """


    n_base: int
    n_cand: int
    base_median: float
    cand_median: float
    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    alpha: float
    min_effect: float
    significant: bool
    persistent: bool
    enough_samples: bool
    direction: Direction
    subsampled_from: list[int] | None = None
    paired: bool = False
    block: int = Field(1, description="Paired: rounds per tested block (1: round by round).")
    min_attainable_p: float | None = Field(None, description="Too few samples: the smallest p the test can reach with them.")
    nonzero: int | None = Field(None, description="Paired, too few: the blocks with a difference.")
    persistence: list[Note] = Field(
        default_factory=list, description="Significant shifts: each persistence check, in order (codes 'core.*'); the first that fails ends them."
    )
    holm_level: float | None = Field(None, description="Tested at this alpha by a Holm step-down over holm_tests layer tests.")
    holm_tests: int | None = None
    drift_band: list[float] | None = Field(None, description="Judged same: within this machine's own drift between the replays (low, high).")
    needed: int | None = Field(
        None, description="Too few samples for the rule (core.judgement): the samples a side to capture or run to judge at all."
    )
