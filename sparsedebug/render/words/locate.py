"""Phrases for the notes the locate code writes (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from sparsedebug.records.notes import NoteValue
from sparsedebug.render.words.dispatch import causes_from_values
from sparsedebug.render.words.notes import Phrase, as_float, as_floats, as_names, embedded, say


def ratio_ci(ratio: float, low: float | None, high: float | None) -> str:
    """``x1.234 [1.100, 1.400]``: a median ratio and its confidence interval."""
    known = low is not None and high is not None and not math.isnan(low) and not math.isnan(high)
    return f"x{ratio:.3f}" + (f" [{low:.3f}, {high:.3f}]" if known else "")


def cmp_text(v: Mapping[str, NoteValue]) -> str:
    """The ratio and interval of a note carrying one comparison's figures (``locate.common.cmp_values``)."""
    low, high = v.get("ci_low"), v.get("ci_high")
    return ratio_ci(as_float(v.get("ratio")), as_float(low) if low is not None else None, as_float(high) if high is not None else None)


def _cmp_items(v: Mapping[str, NoteValue]) -> list[str]:
    """``layer x1.234 [..]`` per layer of a note carrying parallel lists (``locate.common.cmp_lists``)."""
    ci = dict(zip(as_names(v.get("with_ci")), zip(as_floats(v.get("ci_low")), as_floats(v.get("ci_high")), strict=False), strict=False))
    rows = zip(as_names(v.get("layers")), as_floats(v.get("ratio")), strict=False)
    return [f"{layer} {ratio_ci(r, *ci.get(layer, (None, None)))}" for layer, r in rows]


def _shown(layers: list[str], more: NoteValue) -> str:
    return ", ".join(layers) + (", ..." if more else "")


def _not_persistent(v: Mapping[str, NoteValue]) -> str:
    return "" if v.get("persistent", True) else " - not persistent"


# ---------------------------------------------------------------- layer findings


def _changed(v: Mapping[str, NoteValue]) -> str:
    fields, before, after = as_names(v.get("fields")), as_names(v.get("before")), as_names(v.get("after"))
    if fields == ["tokens"]:
        return f"tokens {before[0]} -> {after[0]}"
    return "; ".join(f"{f}: {b} -> {a}" for f, b, a in zip(fields, before, after, strict=False))


def _declared(v: Mapping[str, NoteValue]) -> str:
    parts = []
    if v.get("sparsity_before") is not None or v.get("sparsity_after") is not None:
        parts.append(f"declared sparsity {v.get('sparsity_before')} -> {v.get('sparsity_after')}")
    if v.get("dtype_before") is not None or v.get("dtype_after") is not None:
        parts.append(f"dtype {v.get('dtype_before')} -> {v.get('dtype_after')}")
    return "; ".join(parts)


def _fallback(v: Mapping[str, NoteValue]) -> str:
    reason = v.get("reason") or "no reason recorded"
    detail = ""
    inner = embedded(v, "detail")  # the lowering decision's note, carried flat
    if inner is not None:
        detail = f" ({say(inner)})"
    return f"declared {v.get('intent')} but runs dense: {reason}{detail}"


def _path_change(v: Mapping[str, NoteValue]) -> str:
    """``dense/attention -> dense/fp32_gemm (attention backend cudnn -> math, cause seen in the trace: ...)``."""
    parts = []
    if v.get("backend_before") is not None and v.get("backend_after") is not None:
        parts.append(f"{v.get('op')} backend {v.get('backend_before')} -> {v.get('backend_after')}")
    causes = causes_from_values(v)
    if causes:
        parts.append("cause seen in the trace: " + "; ".join(causes))
    dispatch = f" ({', '.join(parts)})" if parts else ""
    return f"{v.get('before')} -> {v.get('after')}{dispatch}"


def _conversion(v: Mapping[str, NoteValue]) -> str:
    cost = f", {as_float(v['each_ms']):.3g} ms each" if v.get("each_ms") is not None else ""
    return f"re-converts its weights {v.get('count')}x per call (baseline {v.get('base')}){cost}"


def _slower(v: Mapping[str, NoteValue]) -> str:
    explained = as_names(v.get("explained"))
    if explained:
        text = f"slower {cmp_text(v)}; follows from lowering ({', '.join(explained)})"
    elif v.get("sparse_path"):
        text = f"sparse path slower than the dense baseline {cmp_text(v)}"
    else:
        text = f"kernel time slower {cmp_text(v)}"
    return text + _not_persistent(v)


def _idle(v: Mapping[str, NoteValue]) -> str:
    grew = "grew" if v.get("grew") else "shrank"
    return (f"device idle before each call {grew} by {as_float(v.get('per_layer_ms')):.3f} ms per layer per iteration "
            f"(per-call wall {cmp_text(v)})" + _not_persistent(v))


_FINDINGS: dict[str, Phrase] = {
    "locate.finding.layout": lambda v: (
        f"layout/view op {'removed from' if v.get('change') == 'removed' else 'inserted in'} the candidate: "
        "part of a neighbouring layer's lowering, not a model graph change"
    ),
    "locate.finding.removed": "{op} layer missing from the candidate",
    "locate.finding.added": "{op} layer not in the baseline",
    "locate.finding.changed": _changed,
    "locate.finding.declared": _declared,
    "locate.finding.fallback": _fallback,
    "locate.finding.path_changed": lambda v: f"not declared sparse, but its path changed: {_path_change(v)}",
    "locate.finding.sparse_as_declared": "sparse as declared ({path})",
    "locate.finding.per_call_conversion": _conversion,
    "locate.finding.sparse_gemms": "{count} sparse GEMM kernel(s) appeared",
    "locate.finding.new_kernel_class": "kernel class {kernel_class} appeared: {kernels}",
    "locate.finding.layout_copies": "a layout op that copies, in the candidate only: {kernels}",
    "locate.finding.slower": _slower,
    "locate.finding.faster": lambda v: f"faster {cmp_text(v)}" + (" (sparse path, as intended)" if v.get("sparse_path") else ""),
    "locate.finding.precision": lambda v: (
        f"relative error {as_float(v.get('rel_err')):.3g} vs fp64 exceeds the {v.get('precision')} tolerance {as_float(v.get('tolerance')):g}"
    ),
    "locate.finding.idle": _idle,
    "locate.finding.quality": lambda v: f"output cosine {as_float(v.get('cosine')):.4f} below the guardrail {v.get('guardrail')}",
}

# ---------------------------------------------------------------- metrics


_METRICS: dict[str, Phrase] = {
    "locate.metric.latency_ms": "whole-forward latency",
    "locate.metric.busy_ms": "summed kernel/layer time per iteration",
    "locate.metric.overhead_ms": lambda v: (
        f"span - busy per iteration, p50 {as_float(v.get('base_p50')):.3f} -> {as_float(v.get('cand_p50')):.3f} ms; "
        "ratio is of the latency with the baseline's kernel time"
    ),
}

# ---------------------------------------------------------------- stage summaries


def _differ(v: Mapping[str, NoteValue]) -> str:
    items = ", ".join(f"{layer} ({kind})" for layer, kind in zip(as_names(v.get("layers")), as_names(v.get("kinds")), strict=False))
    return f"{v.get('count')} layer(s) differ beyond declared intent: {items}"


def path_changes(layers: list[str], changes: list[Mapping[str, NoteValue]] | None = None) -> str:
    """The lower stage's clause for layers whose path changed without intent, with each change where known."""
    if changes is None:
        return "path changed without declared intent: " + ", ".join(layers)
    return "path changed without declared intent: " + ", ".join(f"{layer} ({_path_change(c)})" for layer, c in zip(layers, changes, strict=False))


def _lower_path_changed(v: Mapping[str, NoteValue]) -> str:
    return path_changes(as_names(v.get("layers")))


def _lower_kind(v: Mapping[str, NoteValue]) -> str:
    count = int(as_float(v.get("count")))
    names = ", ".join(as_names(v.get("layers"))) + (f" and {count - 3} more" if count > 3 else "")
    return f"{str(v.get('kind')).replace('_', ' ')} on {count} layer(s): {names}"


def _by_class(v: Mapping[str, NoteValue]) -> str:
    head = "compared by kernel class (no layer annotations):"
    if as_names(v.get("new")):
        return head
    return f"{head} {'only the declared sparse GEMMs are new' if v.get('sparse_only') else 'same kernel classes'}"


def _kernel_too_few(v: Mapping[str, NoteValue]) -> str:
    items = [f"{item} ({int(b)} vs {int(c)} samples)" for item, b, c in zip(_cmp_items(v), as_floats(v.get("n_base")), as_floats(v.get("n_cand")), strict=False)]
    return "too few samples for: " + "; ".join(items)


def _busy(v: Mapping[str, NoteValue]) -> str:
    few = "" if v.get("enough") else f" ({v.get('n_base')} vs {v.get('n_cand')} iterations: too few to test alone)"
    return f"busy per iteration {cmp_text(v)}{few}"


def _overhead(v: Mapping[str, NoteValue]) -> str:
    return f"overhead span - busy per iteration, p50 {as_float(v.get('base_overhead')):.3f} -> {as_float(v.get('cand_overhead')):.3f} ms ({cmp_text(v)} of latency)"


def _profiler_cost(v: Mapping[str, NoteValue]) -> str:
    """The profiler-overhead caveat, with the untraced p50s beside the traced ones when they were given."""
    share = v.get("share")
    waited = f"the GPU waited on the host {as_float(share):.0%} of the span; " if share is not None else ""
    traced = f"traced p50 {as_float(v.get('traced_base')):.3f} -> {as_float(v.get('traced_cand')):.3f} ms"
    if v.get("untraced_base") is not None and v.get("untraced_cand") is not None:
        untraced = f"untraced {as_float(v.get('untraced_base')):.3f} -> {as_float(v.get('untraced_cand')):.3f} ms"
        return (f"the traces show the profiler's own cost ({waited}{traced}, {untraced}): the outcome is judged untraced, "
                "every per-layer and per-gap figure stays on the trace's clock")
    return (f"rests on traced latency, which shows the profiler's own cost ({waited}{traced}; its cost per op is in it): "
            "time both runs untraced and pass --latency BASE CAND")


def _latency(v: Mapping[str, NoteValue]) -> str:
    word = {"slower": "slower", "faster": "faster"}.get(str(v.get("direction")), "latency")
    text = f"{word} {cmp_text(v)}: p50 {as_float(v.get('base_p50')):.3f} -> {as_float(v.get('cand_p50')):.3f} ms"
    if not v.get("enough"):
        text += f" ({v.get('n_base')} vs {v.get('n_cand')} iterations: too few samples for a rank test)"
    elif v.get("reason"):
        text += f" ({v.get('reason')})"
    return text


_STAGES: dict[str, Phrase] = {
    "locate.graph.not_annotated": "no layer annotations in at least one run (layers are kernel names): graph inventory not compared",
    "locate.graph.differ": _differ,
    "locate.graph.intended": "same layer inventory; {count} layer(s) changed declared sparsity or dtype (declared intent)",
    "locate.graph.same": "same layer inventory ({count} layers)",
    "locate.graph.layout": lambda v: (
        f"{v.get('count')} layout/view op(s) differ ({_shown(as_names(v.get('layers')), v.get('more'))}): lowering, see lower"
    ),
    "locate.graph.revision": "model revision {before} -> {after}",
    "locate.lower.fallback": lambda v: "dense fallback: " + ", ".join(
        f"{layer} ({reason})" for layer, reason in zip(as_names(v.get("layers")), as_names(v.get("reasons")), strict=False)
    ),
    "locate.lower.path_changed": _lower_path_changed,
    "locate.lower.kind": _lower_kind,
    "locate.lower.intended": "{count} layer(s) took the sparse path as declared; no unintended path change",
    "locate.lower.same": "every layer kept its path",
    "locate.lower.backend": "(backend {before} -> {after})",
    "locate.lower.layout": lambda v: (
        f"{v.get('count')} layout/view op(s) differ ({_shown(as_names(v.get('layers')), v.get('more'))}): "
        "the framework re-laid out inputs around the changed layers"
    ),
    "locate.lower.by_class": _by_class,
    "locate.kernel.slower": lambda v: "slower: " + ", ".join(_cmp_items(v)),
    "locate.kernel.precision": "numeric error beyond what its precision explains: {layers}",
    "locate.kernel.faster": lambda v: "faster: " + ", ".join(_cmp_items(v)),
    "locate.kernel.busy": _busy,
    "locate.kernel.too_few": _kernel_too_few,
    "locate.kernel.only": "{cand} kernel entr(ies) only in the candidate, {base} only in the baseline",
    "locate.kernel.drifted": lambda v: (
        f"{v.get('count')} layer(s) moved within this machine's own drift (x{as_float(v.get('low')):.3f} to x{as_float(v.get('high')):.3f})"
    ),
    "locate.kernel.same": "no significant per-layer change",
    "locate.schedule.overhead": _overhead,
    "locate.schedule.too_few": "{n_base} vs {n_cand} iterations: too few to test per iteration",
    "locate.schedule.host_wait": lambda v: f"host wait {as_float(v.get('before')):.3f} -> {as_float(v.get('after')):.3f} ms per iteration",
    "locate.schedule.idle_layers": lambda v: (
        f"the device waits before {v.get('count')} layer(s) ({', '.join(as_names(v.get('layers')))}): +{as_float(v.get('ms')):.3f} ms idle per iteration"
    ),
    "locate.schedule.threads": "threads {before} -> {after}",
    "locate.schedule.empty": "no schedule samples",
    "locate.outcome.latency": _latency,
    "locate.outcome.untraced": "on untraced latencies ({files})",
    "locate.outcome.host_bound": lambda v: (
        f"rests on traced latency of a host-bound run (the GPU waited on the host {as_float(v.get('share')):.0%} of the span; "
        "the profiler's own cost per op is in it): time both runs untraced and pass --latency BASE CAND"
    ),
    "locate.outcome.profiler_cost": _profiler_cost,
    "locate.outcome.budget": lambda v: (
        f"p99 {as_float(v.get('p99')):.3f} ms {'over' if v.get('over') else 'within'} the {as_float(v.get('budget')):g} ms budget"
    ),
    "locate.outcome.speedup": lambda v: f"effective speedup vs dense x{as_float(v.get('speedup')):.3f}",
    "locate.outcome.cosine": lambda v: f"output cosine {as_float(v.get('cosine')):.4f}",
    "locate.outcome.dense_wins": "at equal latency a narrowed dense model has better quality",
    "locate.outcome.too_few": lambda v: (
        f"{v['n_base']} vs {v['n_cand']} samples, too few to judge the whole forward ({v['needed']} a side needed: "
        "capture or run that many)"
    ),
    "locate.outcome.no_samples": lambda v: (
        f"no latency samples in {' and '.join(as_names(v.get('runs')))} (0 measured): whole-forward latency not compared"
    ),
    "locate.outcome.empty": "no outcome samples",
}

# ---------------------------------------------------------------- the verdict, the machine's drift


def _improved_outcome(v: Mapping[str, NoteValue]) -> str:
    text = f"outcome improved x{as_float(v.get('speedup')):.3f} faster (p50 {as_float(v.get('base_p50')):.3f} -> {as_float(v.get('cand_p50')):.3f} ms"
    if v.get("enough"):
        return text + ")"
    return text + f"; {v.get('n_base')} vs {v.get('n_cand')} iterations, too few for a rank test alone)"


def _drift(v: Mapping[str, NoteValue]) -> str:
    parts = []
    if v.get("forward") is not None:
        parts.append(f"the shared dense forward ran x{as_float(v.get('forward')):.3f} as long in the candidate's replay")
    if v.get("low") is not None:
        parts.append(f"{v.get('layers')} shared layer references moved x{as_float(v.get('low')):.3f} to x{as_float(v.get('high')):.3f}")
    return "this machine's own drift between the replays: " + "; ".join(parts) + "; changes within it are not findings"


_VERDICT: dict[str, Phrase] = {
    "locate.verdict.divergence": "first persistent divergence: {stage}",
    "locate.verdict.earlier_undecided": "(earlier stage(s) {stages} undecided: too few samples)",
    "locate.verdict.explains": "explains {stages}",
    "locate.verdict.carries": lambda v: f"its layers carry {as_float(v.get('share')):.0%} of the {as_float(v.get('delta_ms')):+.3f} ms outcome change",
    "locate.verdict.overlap": lambda v: (
        f"its layers' per-layer changes sum to {as_float(v.get('share')):.1f}x the {as_float(v.get('delta_ms')):+.3f} ms outcome change "
        "(per-layer timings overlap: isolated layer timings and idle time count some work twice)"
    ),
    "locate.verdict.outcome_flat": "the outcome itself did not change significantly",
    "locate.verdict.undecided": lambda v: f"undecided: {'timings unstable' if v.get('unstable') else 'too few samples'}",
    "locate.verdict.no_regression": "no regression: no stage diverged beyond declared intent and noise",
    "locate.verdict.outcome_improved": _improved_outcome,
    "locate.verdict.improved": "improved: {stages}",
    "locate.drift.session": (
        "baseline and candidate were timed in one interleaved session and compared round by round: "
        "the machine's drift during the session cancels in each round's ratio (no drift band)"
    ),
    "locate.drift.bands": _drift,
}

# ---------------------------------------------------------------- multi-rank runs


def _confined(v: Mapping[str, NoteValue]) -> str:
    ratio = f"x{as_float(v['ratio']):.3f}" if v.get("ratio") is not None else "n/a"
    elsewhere = f"x{as_float(v['elsewhere']):.3f}" if v.get("elsewhere") is not None else "n/a"
    text = f"the change is confined to rank {v.get('rank')}: compute per iteration {ratio} there, median {elsewhere} on the other ranks"
    if as_names(v.get("path_changes")):
        text += f"; layers that changed path there: {', '.join(as_names(v.get('path_changes')))}"
    if as_names(v.get("slowest")):
        text += f"; slowest layers: {', '.join(as_names(v.get('slowest')))}"
    return text


_RANKS: dict[str, Phrase] = {
    "locate.ranks.straggler": lambda v: (
        f"{v.get('side')} straggler: rank {v.get('rank')} arrives last at {v.get('collective')} in {as_float(v.get('share')):.0%} of "
        f"{v.get('instances')} instances, a median {as_float(v.get('late_ms')):.3f} ms after the median rank"
    ),
    "locate.ranks.confined": _confined,
    "locate.ranks.waiting": lambda v: (
        f"communication per iteration grew x{as_float(v.get('ratio')):.3f} on the other ranks: they wait for rank "
        f"{v.get('rank')} at the collectives; the cause is that rank's, not scheduling on every rank"
    ),
    "locate.ranks.uniform": lambda v: (
        f"the change is uniform across the {v.get('ranks')} ranks: compute per iteration x{as_float(v.get('ratio')):.3f} (median)"
    ),
}

# ---------------------------------------------------------------- comparability


def _model(v: Mapping[str, NoteValue]) -> str:
    text = f"{v.get('matched')} of {v.get('total')} layers match by op and shape ({as_float(v.get('share')):.0%})"
    for side in ("base", "cand"):
        only = as_names(v.get(f"only_{side}"))
        more = int(as_float(v.get(f"more_{side}")) or 0)
        if only:
            text += f"; only in {v.get(side)}: {', '.join(only)}" + (f" and {more} more" if more > 0 else "")
    return text


_DEVICE_PROPS = {
    "compute_capability": "compute capability {0} vs {1}",
    "multiprocessors": "{0} vs {1} multiprocessors",
    "memory_gib": "{0} vs {1} GiB",
    "name": "device names differ and no properties tell them apart",
}


def _device(v: Mapping[str, NoteValue]) -> str:
    rows = zip(as_names(v.get("props")), as_names(v.get("before")), as_names(v.get("after")), strict=False)
    differs = [_DEVICE_PROPS[prop].format(b, a) for prop, b, a in rows]
    return f"{v.get('base')} vs {v.get('cand')}" + (f" ({', '.join(differs)})" if differs else "")


_COMPARE: dict[str, Phrase] = {
    "locate.differ.model": _model,
    "locate.differ.kernels": (
        "{common} of the {smaller} kernels of the run with fewer are in both ({base} vs {cand}; layers are kernel names, a "
        "CUDA-graph replay: one model's runs share most of their kernels)"
    ),
    "locate.differ.device": _device,
    "locate.differ.phase": "{base} vs {cand}",
    "locate.differ.tokens": lambda v: f"{v.get('base')} vs {v.get('cand')} tokens per call (x{as_float(v.get('ratio')):.3g})",
    "locate.differ.launch": "{base} vs {cand} launch: host overhead is paid differently, not like for like",
    "locate.differ.dtype": lambda v: (
        f"{v.get('base')} vs {v.get('cand')}: {v.get('count')} layers changed dtype, carrying {as_float(v.get('share')):.0%} of the "
        "compute layers' FLOPs" + (f": {', '.join(as_names(v.get('layers')))}" if v.get("layers") else "") + (" ..." if v.get("more") else "")
    ),
    "locate.compare.kernel_named": "layers are kernel names in at least one run (a CUDA-graph replay, or a kernel trace without host ops): model identity not checked by shape",
    "locate.compare.layers_changed": lambda v: f"layers changed: {_model(v)}",
    "locate.compare.renamed": "{count} matched layer(s) have other names in the candidate: compared under the baseline's names",
    "locate.compare.merged": "the {fine}'s {count} op layers merged into {groups} of the {coarse}'s annotated layers, op for op",
    "locate.compare.merged_layer": lambda v: (
        f"merged from {v['count']} op layer(s) of the unannotated run: {', '.join(as_names(v.get('layers')))}"
        + (f" and {v['more']} more" if v.get("more") else "")
    ),
    "locate.compare.backend": "backend {base} vs {cand}",
    "locate.compare.dtype_changed": lambda v: (
        f"dtype changed on {v.get('count')} layer(s): {', '.join(as_names(v.get('layers')))}" + (" ..." if v.get("more") else "")
    ),
}

PHRASES: dict[str, Phrase] = {**_FINDINGS, **_METRICS, **_STAGES, **_VERDICT, **_RANKS, **_COMPARE}
