"""Phrases for the notes core, reduce, kernels, freeze and quality write, and the words for a sample comparison
(``records.stats.SampleComparison``: the test, its verdict and the persistence checks behind it)."""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.records.notes import NoteValue
from sparsedebug.records.stats import SampleComparison
from sparsedebug.records.timing import TimingQuality
from sparsedebug.render.words.notes import Phrase, say


def _unit(paired: NoteValue) -> str:
    return "round" if paired else "sample"


PHRASES: dict[str, Phrase] = {
    "core.half_differs": lambda v: f"not persistent: in the {v['half']} the {'paired' if v.get('paired') else 'median'} ratio is {v['ratio']:.3f}",
    "core.halves_hold": "holds in both halves",
    "core.halves_too_few": lambda v: f"too few {_unit(v.get('paired'))}s to split in halves",
    "core.inliers_overlap": "not persistent: only {n_base} vs {n_cand} samples remain without outliers, and they overlap",
    "core.inliers_separated": "the {n_base} vs {n_cand} samples left without outliers are separated by x{factor:g}",
    "core.inlier_rounds_mixed": "not persistent: only {rounds} rounds remain without outliers, and not every one moved by x{factor:g}",
    "core.inlier_rounds_moved": "each of the {rounds} rounds left without outliers moved by x{factor:g}",
    "core.outlier_driven": lambda v: (f"outlier-driven: without {v['dropped']} outlier {_unit(v.get('paired'))}(s) "
                                      f"{'per-round ' if v.get('paired') else ''}ratio {v['ratio']:.3f}, p={v['p']:.3g}"),
    "core.outliers_dropped": lambda v: f"survives dropping {v['dropped']} outlier {_unit(v.get('paired'))}(s)",
    "core.no_outliers": lambda v: f"no outlier {_unit(v.get('paired'))}s",
}


def _tested_over(c: SampleComparison) -> str:
    if not c.paired:
        return ""
    unit = "paired rounds" if c.block == 1 else f"paired blocks of {c.block} rounds"
    return f" over {c.n_base} {unit}"


def comparison_words(c: SampleComparison) -> str:
    """Why a comparison came out as it did: too few samples, no significant difference, below the minimum effect,
    or the shift with its persistence checks; then a Holm step-down or the machine's drift it was judged within."""
    ratio = f"{'paired ratio' if c.paired else 'ratio'} {c.ratio:.3f}{_tested_over(c)}"
    sub = ""
    if c.subsampled_from is not None:
        sub = f"; test on a deterministic subsample of {c.n_base} of {c.subsampled_from[0]} vs {c.n_cand} of {c.subsampled_from[1]}"
    if not c.enough_samples:
        what = f"{c.nonzero} paired blocks with a difference" if c.paired else f"{c.n_base} vs {c.n_cand}"
        smallest = f"{c.min_attainable_p:.3g}" if c.min_attainable_p is not None else "n/a"
        text = f"too few samples: {what}; the smallest p the test can reach is {smallest} > alpha {c.alpha:g} ({ratio} not tested)"
    elif c.p_value is not None and c.p_value > c.alpha and c.drift_band is None:
        text = f"no significant difference: p={c.p_value:.3g} > {c.alpha:g} ({ratio}){sub}"
    elif not c.significant and c.drift_band is None:
        text = f"significant (p={c.p_value:.3g}) but below the minimum effect: {ratio} within x{c.min_effect:g}{sub}"
    else:
        checks = ", ".join(say(n) for n in c.persistence)
        lead = "persistent: " if c.persistent else ""
        text = f"x{c.ratio:.3f}{' paired' if c.paired else ''} (p={c.p_value:.3g}{_tested_over(c)}); {lead}{checks}{sub}"
    if c.holm_tests is not None and c.holm_level is not None:
        text += f"; Holm step-down over {c.holm_tests} layer tests: tested at alpha {c.holm_level:.3g}"
    if c.drift_band is not None:
        text = f"within this machine's drift between the replays (x{c.drift_band[0]:.3f} to x{c.drift_band[1]:.3f}): {text}"
    return text



def timing_words(q: TimingQuality) -> str:
    """Whether the timings stand, and why: each problem of an unstable one, the re-measured rounds of a stable one."""
    if q.problems:
        return "unstable: " + "; ".join(say(n) for n in q.problems)
    if q.still_flagged:
        return (f"stable: {q.still_flagged} of {q.rounds} round(s) stayed disturbed ({q.remeasured_rounds} re-measured), "
                "but the per-round ratios held")
    if q.flagged_rounds:
        return f"stable: {q.flagged_rounds} disturbed round(s) re-measured clean ({q.remeasured_rounds} extra round(s))"
    return "stable: no round disturbed"


def _disturbed(v: Mapping[str, NoteValue]) -> str:
    text = f"{v['variant']}: {v['left']} of {v['rounds']} rounds still disturbed after {v['remeasured']} re-measured"
    if v.get("against") is not None:
        text += f" and its per-round ratio to {v['against']} spreads {v['ratio_spread']:.2f} > {v['limit']:g}"
    return text


PHRASES.update({
    "core.timing_spread": "{variant} rounds spread {spread:.2f} (p90 - p10 over p50) > {limit:g}",
    "core.timing_disturbed": _disturbed,
    "core.timing_contention": ("other processes kept {others:.1f} of {cores} cores busy (this process used {ours:.1f}), taking the "
                               "spare cores in {share:.0%} of the time: sustained contention"),
})
