"""Phrases for the notes signoff (metrics, stack, movement, energy, memo) and the playbook write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparsedebug.records.notes import Note, NoteValue
from sparsedebug.render.words.notes import Phrase, say
from sparsedebug.render.words.run_figures import equal_latency_words
from sparsedebug.render.words.sources_power import window_words

if TYPE_CHECKING:  # types only: wording a note (say) imports no energy record
    from sparsedebug.records.energy import EnergyEstimate, SideEnergy


def _own_pairs(v: Mapping[str, NoteValue]) -> str:
    text = f"measured on {v['layers']} sparse layer(s): dense/sparse kernel time"
    if v.get("converting"):
        text += f", per-call weight conversion of {v['converting']} layer(s) excluded (measured apart)"
    return text


def _no_pairs(v: Mapping[str, NoteValue]) -> str:
    tail = " and no layer of the baseline ran dense where this run ran sparse" if v["baseline"] else ", and no baseline to pair them with"
    return "not measured: no paired dense samples on the sparse layers" + tail


_BASIS_TEXT = {
    "math_path_time": "the kernel-time change of the attention that fell to the math path",
    "changed_path_time": "the kernel-time change of the layers whose path changed",
    "host_gap_growth": "the host-gap growth",
    "conversion_time": "the per-call conversion time",
    "fallback_time": "the dense-fallback time",
}


def _fix_removes(v: Mapping[str, NoteValue]) -> str:
    return (
        f"candidate p50 {v['p50_ms']:.3f} ms minus the time the fix removes, {v['removes_ms']:.3f} ms: "
        f"{_BASIS_TEXT.get(str(v['basis']), str(v['basis']))} of {v['layers']} layer(s) against the baseline"
    )


def _conversion(v: Mapping[str, NoteValue]) -> str:
    text = (
        f"candidate p50 {v['p50_ms']:.3f} ms minus the per-call conversion time of {v['layers']} layer(s), "
        f"{v['cost_ms']:.3f} ms (lower.conversion_ms x conversions_per_call)"
    )
    if v.get("growth_ms") is not None:
        text += (
            f"; if all of the non-kernel time growth over the baseline (+{v['growth_ms']:.3f} ms, span - busy) is "
            f"conversion, p50 could reach {v['reach_ms']:.3f} ms"
        )
    return text


def _layer_to_sparse(v: Mapping[str, NoteValue]) -> str:
    code = v.get("source")
    source = say(Note(code=str(code), values={k[7:]: x for k, x in v.items() if k.startswith("source_")})) if code else "source not recorded"
    count = v.get("layers")  # the layers the fix covers, when it names a set
    whose = f"the {count} layers' summed" if isinstance(count, int) and count > 1 else f"{v['layer']}'s"
    return (
        f"candidate p50 {v['p50_ms']:.3f} ms minus {whose} dense time {v['dense_ms']:.3f} ms run at the sparse "
        f"kernel speedup {v['speedup']:.2f}x ({source}): {v['saved_ms']:.3f} ms saved (Amdahl)"
    )


def _schedule_overhead(v: Mapping[str, NoteValue]) -> str:
    label = "the baseline's overhead" if v["baseline"] else "zero overhead"
    return (
        f"candidate p50 {v['p50_ms']:.3f} ms minus its schedule overhead (span - busy) p50 {v['overhead_ms']:.3f} ms "
        f"down to {label} {v['keep_ms']:.3f} ms"
    )


def describe_range(v: Mapping[str, NoteValue]) -> str:
    """``>= 0.19.1``, ``< 0.19.1``, ``measured at 2.11.0``, ``versions not stated (until ...)`` from ``stack.range_values``."""
    if not v.get("known", True):
        return "versions not stated" + (f" ({v['boundary']})" if v.get("boundary") else "")
    parts = []
    if v.get("since") is not None:
        parts.append(f">= {v['since']}")
    if v.get("before") is not None:
        parts.append(f"< {v['before']}")
    text = ", ".join(parts) or "every version"
    measured = v.get("measured_at")
    if measured and isinstance(measured, list):
        text += f" (measured at {', '.join(str(m) for m in measured)})"
    return text


def _limit_applies(v: Mapping[str, NoteValue]) -> str:
    when = f"removed in {v['removed_in']} {v['since']}" if v.get("removed_in") else describe_range(v)
    return f"{v['profile_note']} ({when})"


def _tactic(v: Mapping[str, NoteValue]) -> str:
    tail = f": {v['profile_note']}" if v.get("profile_note") else ""
    return f"eligible; the builder keeps a sparse tactic only when it is faster than dense{tail}"


def _measured(v: Mapping[str, NoteValue]) -> str:
    at = "no version given" if v.get("version") is None else f"{v['version']} was not measured"
    measured = v["measured_at"] if isinstance(v["measured_at"], list) else []
    return f"rules measured at {', '.join(str(m) for m in measured)}; {at}"


# What this machine reads of a walk's energy (``EnergyReport.machine``).
MACHINE_WORDS: dict[str, str] = {
    "imported": "the runs are imported: their energy comes from the power log given, this machine measures none",
    "rapl_read": (
        "this machine's CPU package energy (RAPL) was read around each replay: CPU package, not the GPU and not wall "
        "power, over the whole replay (timing, dense reference and quality passes), so not per forward"
    ),
    "rapl_unused": "a RAPL counter is readable here but no replay was read with it",
    "no_reading": (
        "this machine has no energy reading: no RAPL counter is readable at /sys/class/powercap/intel-rapl:*/energy_uj, "
        "so the built-in replay's energy is not measured"
    ),
}


def side_note(side: SideEnergy) -> str:
    """How one side's energy figures were taken, or what is missing and why."""
    first = side.windows[0] if side.windows else None
    if side.status == "no_window":
        what = "a replay on this machine" if side.replayed else "its source records no absolute time"
        return f"`{side.run}` has no absolute time window ({what}): no power log can be aligned to it"
    if side.status == "no_log" or first is None:
        return f"no power log was given for `{side.run}`'s window"
    if side.status != "measured":
        return window_words(first)
    how = {"iterations": "one window per iteration", "windows": f"{len(side.windows)} windows of consecutive iterations",
           "run_window": "the run's whole window (one value: no interval)"}[side.over or "run_window"]
    return f"{how}, {first.method or 'measured'} of `{side.channel}`: {window_words(first)}"


def board_power_words(est: EnergyEstimate) -> str:
    """Where an estimate's board power comes from: the log, its samples under load, their range and the power limit."""
    basis = est.power_basis
    limit = ""
    if est.power_limit_w is not None:
        limit = f"; power limit {est.power_limit_w:g} W" + (f" ({basis.limit_source})" if basis.limit_source else "")
    return (
        f"{basis.file}: median power.draw of the {len(basis.lines)} samples at utilization.gpu >= {basis.min_utilization_pct:g}% "
        f"(lines {', '.join(str(n) for n in basis.lines)}), range {est.board_power_low_w:.1f} to {est.board_power_high_w:.1f} W, "
        f"board power (not wall power){limit}"
    )


def estimate_basis(est: EnergyEstimate) -> str:
    """Where an energy estimate's two factors come from, and what it assumes."""
    return (
        f"estimate: the forward projected on the {est.device} ({est.launch}, basis {est.forward_basis}) times the "
        f"board power measured there under load ({board_power_words(est)}); it assumes the run draws that power, dense or sparse"
    )


# The interleaved replay session one RAPL reading covers (``RaplReading.session``).
SESSION_WORDS: dict[str, str] = {
    "baseline_candidate": "baseline and candidate",
    "fixed_candidate": "the fixed candidate and the candidate again",
}


def _next_by_attribution(v: Mapping[str, NoteValue]) -> str:
    share = v.get("share")
    pct = f" ({share:.0%})" if isinstance(share, (int, float)) else ""
    return (f"the fixed run classified again against the baseline: {v['winner']} wins by attribution, {v['ms']:.3f} ms of the "
            f"{v['delta_ms']:+.3f} ms change{pct}")


def _rerun_moved(v: Mapping[str, NoteValue]) -> str:
    if v.get("direction") is not None and isinstance(v.get("change"), (int, float)):
        return f"fixed p50 {v['direction']} (x{v['change']:.3f})"
    return f"fixed p50 moved: {v.get('moved')}"


def _energy_unmeasured(v: Mapping[str, NoteValue]) -> str:
    roles = v["roles"] if isinstance(v["roles"], list) else []
    statuses = v["statuses"] if isinstance(v["statuses"], list) else []
    return "energy: not measured: " + "; ".join(f"{r} {str(s).replace('_', ' ')}" for r, s in zip(roles, statuses, strict=False))


def _removed_stale(v: Mapping[str, NoteValue]) -> str:
    what = "partial bundle" if v["partial"] else "previous bundle moved aside"
    return f"removed {v['entry']}: a {what} left by pid {v['pid']}, which is no longer running"


def _no_trace_repro(v: Mapping[str, NoteValue]) -> str:
    if v.get("stage") is None:
        return f"no trace reproducer: the traces do not diverge ({v['state']})"
    return f"no trace reproducer: no regression at {v['stage']} names a layer whose call the trace records with its shapes"


PHRASES: dict[str, Phrase] = {
    "signoff.equal_latency": equal_latency_words,
    # playbook: what each step of the walk is doing, and what it did
    "playbook.freeze": "fingerprint the environment",
    "playbook.fixed_given": "fixed candidate given: {path} ({kind})",
    "playbook.no_fix": "no fix proposed",
    "playbook.fix_needs_rerun": lambda v: (f"the candidate is a {v['kind']}, not a workload: pass --fixed with a re-run after the "
                                           f"fix rule {v['rule']} proposes" + (f" ({v['action']})" if v.get("action") else "")),
    "playbook.opened": "opened {source} ({file})",
    "playbook.frozen": "seed {seed}, git {git}",
    "playbook.locate": "load both runs",
    "playbook.replay_pair": "replay baseline {baseline} and candidate {candidate} in one interleaved session",
    "playbook.load_input": "{verb} {role} {file}",
    "playbook.load_fixed_early": "load the fixed candidate {file} and check it comparable with the candidate",
    "playbook.load_fixed": "load the fixed candidate {file}",
    "playbook.bisect": "bisect the five stages",
    "playbook.located": lambda v: f"{v['state']}: first stage {v['first_stage'] or '-'}",
    "playbook.classify": "score compute, memory, scheduling, precision, thermal",
    "playbook.classified": lambda v: f"winner {v['winner'] or 'none'}",
    "playbook.reproduce": "reproduce and fix",
    "playbook.reduce": "reduce to a focused reproducer (ddmin over the differences)",
    "playbook.reduced": lambda v: f"reduced: {v['file']}" + (f", reproducer {v['reproducer']}" if v.get("reproducer") else ", no reproducer"),
    "playbook.reduce_skipped": "reduce skipped on request",
    "playbook.no_reduction": "no reduction: both sides must be workloads (or both traces)",
    "playbook.trace_cut": "cut the blamed layer out of the trace pair",
    "playbook.no_trace_repro": _no_trace_repro,
    "playbook.trace_repro": lambda v: (f"trace reproducer of {v.get('layer')} ({v.get('stage')}: {v.get('finding')})"
                                       + (f", standing for all {v['targets']} layers the fix covers" if v.get("targets") else "")
                                       + f": {v.get('files')}"),
    "playbook.fix_applied": "fix applied (fix.json says how)",
    "playbook.fix_not_applied": "fix not applied (fix.json says why)",
    "playbook.rerun": "re-run the matrix",
    "playbook.replay_fixed_pair": lambda v: (
        f"replay the fixed candidate{' ' + str(v['file']) if v.get('file') else ''} and the candidate again in one interleaved session"
    ),
    "playbook.replay_fixed": lambda v: (
        f"replay the fixed candidate{' ' + str(v['file']) if v.get('file') else ''}, to compare with the candidate locate measured "
        "unless the machine drifted since"
    ),
    "playbook.fixed_drifted": lambda v: (
        "the candidate is replayed again beside the fixed candidate: "
        + ("no dense reference shared with locate's session tells whether the machine drifted" if v.get("judgement") is None
           else "too few samples of the dense reference to tell whether the machine drifted since locate"
           if v.get("judgement") == "inconclusive" else f"the machine drifted since locate (the dense reference x{v['drift']:.3f})")
    ),
    "playbook.rerun_moved": _rerun_moved,
    "playbook.no_fixed": "no fixed candidate to re-run",
    "playbook.next_by_attribution": _next_by_attribution,
    "playbook.next_by_score": "the fixed run classified again against the baseline: {winner} wins (score {score:.2f})",
    "playbook.run_sets": "run sets of {ranks} ranks; the walk compares rank {walked}",
    "playbook.energy_measured": "energy: measured for {roles} from {option} {file}",
    "playbook.energy_machine": lambda v: f"energy: {MACHINE_WORDS[str(v['machine'])]}",
    "playbook.energy_unmeasured": _energy_unmeasured,
    "playbook.restored_previous": "restored the previous bundle {bundle} from {entry} (left by pid {pid}, no longer running)",
    "playbook.removed_stale": _removed_stale,
    # stack: why a tensor would not run sparse on a stack, and the caveats of its sparse path
    "stack.pattern": "{path} runs {patterns} only, not {pattern}",
    "stack.op_not_lowered": "the consumer op is {op}: {path} lowers only {ops} sparse",
    "stack.no_kernel": "no sparse kernel for {dtype} on {path} (kernels: {dtypes})",
    "stack.k_alignment": "K={k} (in features) is not a multiple of {multiple} (at least {min}) for {dtype} on {path}",
    "stack.n_alignment": "N={n} (out features) is not a multiple of {multiple} (at least {min}) for {dtype} on {path}",
    "stack.layout": "stored [in, out] (Conv1D): the sparse operand would be column-major; {path} needs {layout} for {dtype}",
    "stack.k_not_multiple": "K={k} is not a multiple of M={m}",
    "stack.groups_break": "groups break {pattern}: the weights do not comply",
    "stack.negative_zero": (
        "{count} element(s) stored as -0.0: {path}'s compressor counts them as non-zero, "
        "so {groups} group(s) compliant by value break {pattern}"
    ),
    "stack.epilogue": "sparse only with {epilogue}",
    "stack.tactic": _tactic,
    "stack.capability": "the kernels run on compute capability {capability}",
    "stack.measured": _measured,
    "stack.limit": "{profile_note}",
    "stack.limit_applies": _limit_applies,
    "stack.limit_range": lambda v: f"{v['profile_note']} ({describe_range(v)})",
    "stack.limit_unknown": lambda v: f"{v['profile_note']}; {describe_range(v)}: cannot tell for {v['version'] or 'an unstated version'}",
    "stack.version_outside": lambda v: f"{v['title']}: {describe_range(v)}, not {v['version']}",
    # movement: what a latency projection stands on, or why there is none
    "movement.no_samples_or_fix": "no latency samples or no fix to estimate",
    "movement.fix_removes": _fix_removes,
    "movement.no_conversion_time": "no per-call conversion time recorded in the lower stage",
    "movement.saving_past_forward": "not projected: the time the fix would remove ({saving_ms:.3f} ms, {basis}) is more than the "
                                    "whole forward (p50 {p50_ms:.3f} ms), so it was timed apart from the forward, under other load",
    "movement.conversion": _conversion,
    "movement.no_sparse_speedup": "no sparse kernel speedup recorded to project {layer} onto the sparse path",
    "movement.layer_to_sparse": _layer_to_sparse,
    "movement.already_dense": "{layer} already runs dense (fallback): excluding it should leave p50 {p50_ms:.3f} ms unchanged",
    "movement.exclude_layer": (
        "candidate p50 {p50_ms:.3f} ms minus {layer}'s sparse-over-dense kernel time {sparse_ms:.3f} - {dense_ms:.3f} = {delta_ms:.3f} ms"
    ),
    "movement.schedule_overhead": _schedule_overhead,
    "movement.no_projection": "the record holds no figure that projects a {kind} fix onto latency",
    "movement.speedup_expected": "baseline p50 over the expected p50",
    # metrics: how the sparse kernel speedup was measured, or why it was not
    "signoff.speedup_own_pairs": _own_pairs,
    "signoff.speedup_baseline_pairs": "measured on {layers} sparse layer(s) against the same layers of the baseline run dense: kernel time",
    "signoff.speedup_by_op": (
        "measured by op against the baseline (kernel-named layers, no shapes to pair): its {base_calls} GEMM calls, "
        "{base_ms:.3f} ms per iteration, less the run's {dense_calls} dense ones, {dense_ms:.3f} ms, over the run's "
        "{sparse_calls} sparse ones, {sparse_ms:.3f} ms"
    ),
    "signoff.speedup_none_sparse": "not measured: no layer meant to be sparse ran sparse",
    "signoff.speedup_no_pairs": _no_pairs,
    "signoff.speedup_no_sparse_gemm": "not measured: no timed sparse GEMM in the run",
    "signoff.speedup_baseline_sparse": (
        "not measured: the baseline runs {base_sparse_calls} sparse GEMM call(s) per iteration itself: no dense reference by op"
    ),
    "signoff.speedup_gemm_unpaired": (
        "not measured: the baseline runs {base_calls} GEMM calls per iteration, the run {calls} ({sparse_calls} sparse): "
        "the GEMM work does not pair by op"
    ),
    "signoff.speedup_no_dense_left": (
        "not measured: the run's {dense_calls} dense GEMM calls take {dense_ms:.3f} ms per iteration, no less than the "
        "baseline's {base_calls} ({base_ms:.3f} ms): no dense time left to pair with the sparse kernels"
    ),
}
