"""Phrases for the notes core, reduce, kernels, freeze and quality write, and the words for a sample comparison
(``records.stats.SampleComparison``: the test, its verdict and the persistence checks behind it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparsedebug.records.notes import NoteValue
from sparsedebug.records.stats import SampleComparison
from sparsedebug.records.timing import TimingQuality
from sparsedebug.render.words.notes import Phrase, say

if TYPE_CHECKING:  # types only: the words of a bisect import no reduce record
    from sparsedebug.records.reduce import Change, ProbeLog, ReduceResult, TraceRepro


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
    "core.timing_unsettled": ("the two sides' per-round ratio did not settle within the {budget_s:g} s budget "
                              "({rounds} rounds timed): the comparison is not decided"),
    "core.timing_contention": ("other processes kept {others:.1f} of {cores} cores busy (this process used {ours:.1f}), taking the "
                               "spare cores in {share:.0%} of the time: sustained contention"),
})


def change_words(change: Change) -> str:
    """One difference between the good and the bad workload: ``precision: fp32 -> bf16``, ``added (linear 64x64)``."""
    if change.change == "added":
        return f"added ({change.diffs[0].now})" if change.diffs else "added"
    if change.change == "removed":
        return f"removed ({change.diffs[0].was})" if change.diffs else "removed"
    if change.kind == "knob" and len(change.diffs) == 1:
        d = change.diffs[0]
        return f"{d.field}: {d.was or '-'} -> {d.now or '-'}"
    return "; ".join(f"{d.field} {d.was or '-'} -> {d.now or '-'}" for d in change.diffs)


_PROBE_NOTES = {
    "other_finding": "diverges, but with another finding",
    "uncertain": "uncertain",
    "still_undecided": "still undecided with twice the repeats",
}


def probe_note_words(probe: ProbeLog) -> str:
    """Why a probe's outcome is not a plain fail or pass (empty when it is)."""
    if probe.invalid is not None:
        return f"invalid variant: {probe.invalid}"
    if probe.note == "earlier_stage":
        return f"diverges earlier, at {probe.earlier_stage}"
    return _PROBE_NOTES.get(probe.note or "", "")


def reduce_verdict(red: ReduceResult) -> str:
    """The reduction's verdict: nothing to reduce, not reproduced (and why), or what reproduces it at what cost."""
    if red.outcome == "nothing_to_reduce":
        return "nothing to reduce: the two workloads have no knob or layer difference"
    if red.outcome == "not_reproduced":
        last = red.not_reproduced
        state = f": {last.state}" if last is not None else ""
        return (f"cannot reproduce a regression: {red.bad} does not diverge from {red.good} (measured twice, "
                f"{red.probe_repeats} and {2 * red.probe_repeats} repeats){state}")
    target = f"{red.target_stage}" + (f" ({red.target_finding})" if red.target_finding else "")
    kept = ", ".join(change_words(c) if c.kind == "knob" else f"{c.name} ({change_words(c)})" for c in red.kept)
    graph = (f"{red.graph_source} kept whole (a checkpoint's graph is not shrunk)" if red.graph_source is not None
             else f"graph {red.layers_before} -> {red.layers_after} layers")
    text = (f"{len(red.kept)} of {len(red.changes)} change(s) reproduce the {target} divergence: {kept}; {graph}, tokens "
            f"{red.tokens_before} -> {red.tokens_after}; {red.probe_count} probe(s): {red.static_probes} static graph+lowering "
            f"run(s), {red.replays} timed replay(s)")
    if red.targets:
        removes = f", {red.targets_ms:+.3f} ms per iteration together" if red.targets_ms is not None else ""
        text += f"; it stands for all {len(red.targets)} layers sharing that cause ({', '.join(red.targets)}){removes}"
    if not red.confirmed and red.confirmation is not None:
        text += f"; the timed confirmation bisected to {red.confirmation.first_stage or red.confirmation.state} instead"
    if red.other_causes:
        text += "; other cause(s): " + "; ".join(f"{c.finding}: {', '.join(k.key for k in c.kept)}" for c in red.other_causes)
    if red.stopped_at_limit:
        text += f" (stopped at the {red.max_probes}-probe limit)"
    if red.full_graph:
        text += "; the shrunk graph did not confirm, so the reproducer keeps the full graph"
    return text


def _probe(v: Mapping[str, NoteValue]) -> str:
    return f"probe {v['n']} [{v['phase']}] {v['tried']}: {v['outcome']}{' (re-measured)' if v.get('flaky') else ''}"


PHRASES.update({
    "reduce.probe": _probe,
    "reduce.stop_shrinking": "{phase}: stop shrinking: {error}",
    "reduce.check_static": "checking the divergence (static: graph and lowering)",
    "reduce.check_timed": "no graph/lowering divergence; replaying both with timing",
    "reduce.tokens_only": "{source}: the graph is the checkpoint's, not shrunk; halving tokens only",
    "reduce.target": lambda v: (f"target: first divergence at {v['stage']}" + (f" ({v['finding']})" if v.get("finding") else "")
                                + f"; {v['changes']} change(s) to reduce"),
    "reduce.confirm": "confirming with a timed replay of the reproducer and its baseline",
})


def replay_reason_words(tr: TraceRepro) -> str:
    """What the built-in replay of a trace's reproducer can and cannot show, and why."""
    stage, finding, profile, target = tr.first_stage, tr.finding, tr.backend_profile, tr.profile_target
    projected = (
        f" Its target clock ({profile}) projects the op onto the {target.upper()} from the measured GEMM rows, per-call "
        "cost included for eager launch: that is where the trace's cost shows in the replay."
        if target is not None else ""
    )
    return {
        "dtype_without_kernel": "the trace's dtype has no built-in replay kernel (fp32, fp16 and bf16 only): no workload was written; "
                                "run repro.py on a GPU.",
        "attention_dispatch": (f"the trace diverges first at {stage} ({finding}): the attention call dispatched to another backend "
                               "(its layout, dtype or mask chose it); the built-in replay has one numpy attention and no backend "
                               "dispatch, so it cannot show that: run repro.py, which rebuilds the traced layouts, on a GPU."),
        "profile_falls_back": (f"the trace diverges first at {stage} ({finding}); the replay's backend profile {profile} decides this "
                               f"layer dense without timing ({tr.replay_fallback}), so the replay shows the same {stage} finding."),
        "profile_runs_sparse": (f"the trace diverges first at {stage} ({finding}); the replay's backend profile {profile} runs this "
                                "layer sparse, so the replay's lowering does not show it."),
        "host_wait": (f"the trace diverges first at {stage} ({finding}: the device waits on the host before each call); the built-in "
                      "replay runs numpy kernels on this CPU, with no device to wait and none of the GPU stack's host-side dispatch, "
                      "so it cannot show that stage: its schedule stage measures only this process's own overhead (threads, per-call "
                      "conversion), and its kernel stage times the sparse kernel against the dense one on this CPU." + projected),
        "cpu_timing": (f"the trace diverges first at {stage} ({finding}, mechanism {tr.mechanism or 'none'}); the built-in replay "
                       "times numpy kernels on this CPU, whose speeds are not the GPU's, so a kernel, schedule or outcome divergence "
                       "there is not the trace's." + projected),
    }[tr.replay_reason]
