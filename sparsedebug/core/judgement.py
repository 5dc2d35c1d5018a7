"""The one rule for when a difference of timings is a win, a loss, no change or inconclusive.

Gate, bisect, the decision and every pass/fail check (p50 speed, p99 tail, speedup) judge a
candidate's samples against a baseline's by this rule, with the settings of
:class:`~sparsedebug.records.stats.JudgementRule` (a gate policy's ``significance`` section sets
them; docs/reference/judgement.md writes the rule out):

1. **Enough samples.** Fewer than ``min_samples`` a side (trace iterations, replay rounds; two
   runs of one interleaved session: paired rounds), or too few for the test to reach ``alpha``
   at all: ``inconclusive``, whatever the ratio, and ``needed`` says how many a side to capture
   or run.
2. **Test and factor.** A two-sided rank test (Mann-Whitney U; the signed-rank test on the
   per-round ratios of one session, :mod:`sparsedebug.core.paired`) rejects "same" at ``alpha``
   AND the median ratio is beyond ``factor`` (either way): the asv rule.
3. **Persistent.** The shift also holds in each time-ordered half and without outliers
   (:func:`sparsedebug.core.stats.compare_samples`): one burst of noise is not a change.

Slower by 1-3: ``loss``; faster: ``win``; anything else on enough samples: ``no_change``.
A caller that knows how far the machine itself moved identical work (``locate.reference``)
marks a change within that drift as no change before reading the judgement.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparsedebug.core.paired import compare_timings, fewest_pairs
from sparsedebug.core.stats import Samples, fewest_samples
from sparsedebug.records.stats import DEFAULT_MIN_SAMPLES, Judgement, JudgementRule, SampleComparison

__all__ = ["DEFAULT_MIN_SAMPLES", "DEFAULT_RULE", "judge", "judgement_of", "needed_samples", "settled", "short_of"]

# The rule's defaults: alpha 0.05, factor 1.05, 6 samples a side.
DEFAULT_RULE = JudgementRule()


def needed_samples(rule: JudgementRule = DEFAULT_RULE, *, paired: bool = False, block: int = 1) -> int:
    """Samples a side the rule needs before it judges: ``min_samples``, or more when the test needs more to reach alpha."""
    reach = fewest_pairs(rule.alpha) if paired else fewest_samples(rule.alpha)
    return max(rule.min_samples, reach) * max(block, 1)


def short_of(n_base: int, n_cand: int, rule: JudgementRule = DEFAULT_RULE) -> int | None:
    """Samples a side to capture when ``n_base`` against ``n_cand`` are too few for the rule; None when they suffice."""
    need = needed_samples(rule)
    return need if min(n_base, n_cand) < need else None


def judge(
    before: Samples, after: Samples, rule: JudgementRule = DEFAULT_RULE, *, block: int | None = None,
    segments: Sequence[int] | None = None,
) -> SampleComparison:
    """Compare ``after`` with ``before`` by the rule; read the result with :func:`judgement_of`.

    ``block`` (both timed in the same rounds of one session): compared round by round by balanced
    blocks of that many samples (:func:`sparsedebug.core.paired.compare_timings`; ``segments`` as there).
    With fewer samples than the rule needs, the comparison keeps its medians and ratio but is not
    tested (``enough_samples`` False, no p-value) and ``needed`` holds the samples a side to capture.
    """
    cmp = compare_timings(before, after, block=block, alpha=rule.alpha, min_effect=rule.factor, segments=segments)
    units = min(cmp.n_base, cmp.n_cand)
    if units >= rule.min_samples and cmp.enough_samples:
        return cmp
    need = needed_samples(rule, paired=cmp.paired, block=cmp.block if cmp.paired else 1)
    return cmp.model_copy(update={
        "enough_samples": False, "significant": False, "persistent": False, "direction": "same", "p_value": None,
        "persistence": [], "needed": need, "min_attainable_p": None,
    })


def judgement_of(cmp: SampleComparison) -> Judgement:
    """What a comparison judged by the rule is: ``inconclusive`` on too few samples, ``loss`` or ``win`` on a
    significant, persistent shift beyond the factor, else ``no_change``."""
    if not cmp.enough_samples:
        return "inconclusive"
    if cmp.direction == "slower" and cmp.persistent:
        return "loss"
    if cmp.direction == "faster" and cmp.persistent:
        return "win"
    return "no_change"


def settled(cmp: SampleComparison, rule: JudgementRule = DEFAULT_RULE) -> bool:
    """Whether the ratio of a comparison has settled on one side of the factor: judged (enough samples) and its
    confidence interval lies wholly within ``(1/factor, factor)`` (no change) or wholly beyond it on one side. More
    samples cannot then move the rule's verdict across the factor; a replay samples until this holds
    (:func:`sparsedebug.core.timing.measure`'s ``settle``)."""
    if not cmp.enough_samples or cmp.ci_low is None or cmp.ci_high is None:
        return False
    inside = cmp.ci_low > 1.0 / rule.factor and cmp.ci_high < rule.factor
    beyond = cmp.ci_low >= rule.factor or cmp.ci_high <= 1.0 / rule.factor
    return inside or beyond
