"""Phrases for the notes the target, workload, replay and model sources write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparsedebug.records.notes import NoteValue
from sparsedebug.render.words.notes import Phrase, embedded, figure, say

if TYPE_CHECKING:  # a type only: wording a note (say) imports no bundle record
    from sparsedebug.records.bundle import FixOutcome

# What each projection method id (``TargetClock.method``, ``PredictReport.method``) does, in words.
METHODS: dict[str, str] = {
    "roofline_dense+nm_kernel_model+host_floor": (
        "dense GPU time: roofline-shaped interpolation (log tokens, log FLOPs) of measured per-call p50 and trace kernel "
        "times; sparse GPU time: 2:4 kernel model (waves of tiles x reduction length, at least one wave, over a memory "
        "floor) fitted to the GPU-only sparse times; host: measured per-call host floor; per call max(host, GPU) eager, "
        "GPU under a CUDA graph; 90% intervals from fit residuals and distance from measured points, a verdict only where "
        "the speedup interval excludes 1.0; non-linear ops estimated as bytes (attention FLOPs) over trace rates"
    ),
}

# What each backend support profile (``sparsedebug.sources.workload.lowering.PROFILES``) models.
PROFILE_WORDS: dict[str, str] = {
    "cpu-numpy": "built-in numpy N:M and V:N:M kernels (fp32/fp16/bf16, M <= 16)",
    "h200-cusparselt": "PyTorch 2.11 + cuSPARSELt 0.8 on an H200: 2:4, fp16/bf16/int8, dims multiple of 16 (32 for int8)",
    "h200-cutlass": "PyTorch 2.11 CUTLASS 2:4 on an H200: converts, but matmul needs compute capability 8.x",
}


# How a quality study split its text, by the split rule's id (``SplitInfo.rule``).
SPLIT_RULES: dict[str, str] = {
    "windows_even_odd": "consecutive windows of the tokenized text; even-numbered: evaluation, odd: calibration; k evenly spaced taken",
    "sentences_sha256_parity": (
        "prose sentences of 5-60 words (capital to full stop); sha256 first byte even: evaluation, odd: calibration; "
        "taken in digest order"
    ),
}

# What a real model's quality figure measures, by ``QualityEvidence.metric`` id.
QUALITY_METRICS: dict[str, str] = {
    "sentence_embedding_cosine": "sentence-embedding cosine (mean over sentences) vs the dense model",
    "perplexity_windows": "perplexity on the evaluation windows (cosine: final hidden states vs the dense model)",
}


def fix_how_words(outcome: FixOutcome) -> str:
    """How the walk applied its fix, or why not; advice quotes the proposed fix's own text."""
    how = outcome.how
    if how.code in ("targets.fix_is_advice", "playbook.fix_needs_rerun") and outcome.proposed is not None:
        from sparsedebug.render.words.mechanisms_records import fix_words

        if how.code == "playbook.fix_needs_rerun":
            return f"the candidate is a {how.values.get('kind')}, not a workload: pass --fixed with a re-run after: {fix_words(outcome.proposed)}"
        return f"advice, not a workload change: {fix_words(outcome.proposed)}"
    return say(how)


def method_words(method: str) -> str:
    """A projection method id in words (the id itself for one this release does not know)."""
    return METHODS.get(method, method)



def _roofline(v: Mapping[str, NoteValue]) -> str:
    return f"roofline fit: floor {figure(v, 'floor_us', math.nan):.1f} us, {figure(v, 'gb_s', math.nan):.0f} GB/s, {figure(v, 'tflops', math.nan):.0f} TFLOP/s"


def _fp32_scaled(v: Mapping[str, NoteValue]) -> str:
    return (
        f"float32 was never measured here: the 16-bit {_roofline(v)} with 4-byte elements and its throughput "
        f"scaled by the datasheet FP32 / 16-bit tensor ratio {figure(v, 'fp32_tflops', math.nan):g}/{figure(v, 'tensor_tflops', math.nan):g} ({v['reference']})"
    )


def _sparse_model(v: Mapping[str, NoteValue]) -> str:
    text = (
        f"2:4 kernel model: {figure(v, 'waves', math.nan):.2f} wave(s) of {v['tile_m']}x{v['tile_n']} tiles over {v['ctas']} SMs x in {v['k']} x "
        f"{figure(v, 'ns_per_k', math.nan):.2f} ns = {figure(v, 'compute_us', math.nan):.1f} us (tile fill {figure(v, 'fill', math.nan):.0%}); memory floor "
        f"{figure(v, 'memory_us', math.nan):.1f} us at the dense roofline's {figure(v, 'gb_s', math.nan):.0f} GB/s"
    )
    return text + (" (memory-bound)" if v.get("memory_bound") else "")


def _no_dtype_rows(v: Mapping[str, NoteValue]) -> str:
    measured = v.get("measured")
    shown = ", ".join(str(m) for m in measured) if isinstance(measured, list) and measured else "none"
    return f"no {v['dtype']} rows measured on this GPU (measured: {shown})"


def _measure_layer(v: Mapping[str, NoteValue]) -> str:
    launch = str(v["launch"])
    what = "GPU-only dense and 2:4 kernel time" if launch == "cuda_graph" else "per-call dense and 2:4 time"
    text = f"measure {v['out']}x{v['k']} at {v['tokens']} tokens, {launch.replace('_', ' ')}: {what}"
    if v.get("nearest_out") is not None:
        text += (
            f"; the nearest measured 2:4 kernel time is {v['nearest_out']}x{v['nearest_k']} at {v['nearest_tokens']} tokens, "
            f"{figure(v, 'decades', math.nan):.1f} decades away"
        )
    return text


def _written(text: str, v: Mapping[str, NoteValue]) -> str:
    """A fix's change, and the file the fixed workload was written to when the walk wrote one."""
    return f"{text}, written to {v['written_to']}" if v.get("written_to") else text


def _fix(template: str) -> Phrase:
    """A phrase for an applied fix: ``template`` over the values, then where the fixed workload went."""
    return lambda v: _written(template.format(**{k: ", ".join(map(str, x)) if isinstance(x, list) else x for k, x in v.items()}), v)


def _fix_block(v: Mapping[str, NoteValue]) -> str:
    layers, old, new = (v.get(k) for k in ("layers", "old", "new"))
    assert isinstance(layers, list) and isinstance(old, list) and isinstance(new, list)
    return _written("block size: " + ", ".join(f"{n} {o} -> {w}" for n, o, w in zip(layers, old, new, strict=True)), v)


def _padded(v: Mapping[str, NoteValue]) -> str:
    producers = v.get("producers")
    shown = ", ".join(map(str, producers)) if isinstance(producers, list) else ""
    text = (
        f"{v['layer']}: padded {v['dim']} {v['old']} -> {v['new']}; {shown} widened to {v['new']} outputs and {v['consumer']} "
        f"to {v['new']} inputs (added rows are seeded weights, not zeros: timing as zero padding, quality sees the extra neurons)"
    )
    return _written(text, v)


def _names(v: Mapping[str, NoteValue], key: str) -> list[str]:
    value = v.get(key)
    return [str(x) for x in value] if isinstance(value, list) else []


_SET_ACTION = {"cast": "dtype", "exclude": "sparsity", "pad": "padded"}


def _fix_set(v: Mapping[str, NoteValue]) -> str:
    """A layer fix applied to every layer sharing its cause: each member's change, and the members an earlier one covered."""
    layers, dims, old, new, covered = (_names(v, k) for k in ("layers", "dims", "old", "new", "covered"))
    what = _SET_ACTION.get(str(v.get("action")), str(v.get("action")))
    each = ", ".join(f"{n} {what} {f'{d} ' if d else ''}{o} -> {w}" for n, d, o, w in zip(layers, dims, old, new, strict=True))
    text = f"all {len(layers) + len(covered)} layers sharing the cause ({', '.join(_names(v, 'causes'))}): {each}"
    if covered:
        text += f"; {', '.join(covered)} covered by that padding (now sparse)"
    return _written(text, v)


def _fix_knob(v: Mapping[str, NoteValue]) -> str:
    """A workload knob changed; the layers it covers when the fix names them (every layer converting on every call)."""
    layers = _names(v, "layers")
    covers = f" (all {len(layers)} layers it covers: {', '.join(layers)})" if layers else ""
    return _written(f"{v['knob']} {v['old']} -> {v['new']}{covers}", v)


def _fix_set_refused(v: Mapping[str, NoteValue]) -> str:
    inner = embedded(v, "why")
    return (f"the fix covers all {len(_names(v, 'layers'))} layers sharing the cause ({', '.join(_names(v, 'causes'))}) or none, "
            f"and {v['layer']} refuses it: {say(inner) if inner is not None else 'no reason recorded'}")


def _fix_advice(v: Mapping[str, NoteValue]) -> str:
    action = f", {v['action']}" if v.get("action") else ""
    return f"advice, not a workload change (rule {v['rule']}{action})"


PHRASES: dict[str, Phrase] = {
    # fixes applied to a workload (sources/replay/synthetic/fix.py, checkpoint/source.py, reduce/apply_fix.py)
    "targets.fix_layer_missing": "layer {layer} is not in workload {workload}",
    "targets.fix_set": _fix_set,
    "targets.fix_set_refused": _fix_set_refused,
    "targets.fix_excluded": _fix("{layer}: sparsity {old} -> dense (excluded)"),
    "targets.fix_cast": _fix("{layer}: dtype {old} -> {new}"),
    "targets.fix_block": _fix_block,
    "targets.fix_no_vnm_layer": "no V:N:M layer to change the block size of",
    "targets.fix_is_advice": _fix_advice,
    "targets.fix_block_checkpoint": "block size: model {model} is pruned per its pruning block; set pruning.pattern instead",
    "targets.fix_pad_checkpoint": "{layer}: a checkpoint's shapes are fixed; padding it would change the model, not the lowering",
    "targets.fix_knob": _fix_knob,
    "targets.fix_precision": _fix("precision {old} -> {new} (per-layer dtype overrides cleared)"),
    "targets.fix_unknown_knob": "knob {knob}={value} is not a workload knob sparsedebug can set",
    "targets.pad_width_from_input": "{layer}: its input width comes from the model input; pad the input instead",
    "targets.pad_width_through": "{layer}: its input width passes through {op} {through}, which cannot be padded",
    "targets.pad_width_shared": "{layer}: that width also feeds {feeds}; padding would change them too",
    "targets.pad_not_sparse_linear": "{layer} is not a sparse linear layer",
    "targets.pad_already_sparse": "{layer}: shape ({out}, {k}) already lowers sparse; padding changes nothing",
    "targets.pad_output_feeds": "{layer}: its output feeds {op} {consumer}, which cannot be padded",
    "targets.pad_consumers": "{layer}: its output width reaches {count} linear layers; pad needs exactly one",
    "targets.pad_none_found": "{layer}: no padding of up to {search} on one dimension makes ({out}, {k}) lower sparse",
    "targets.pad_breaks_graph": "{layer}: padding {dim} {old} -> {new} breaks the graph: {error}",
    "targets.padded": _padded,
    # target projection (sources/target/model.py, sparse.py, project.py)
    "targets.dense_roofline": lambda v: f"{_roofline(v)} over {v['points']} points, residual interpolated",
    "targets.launch_floor_bound": (
        "on the launch floor, where a per-call row bounds the kernel from above only: interval down to the "
        "datasheet bound {bound_us:.1f} us ({reference})"
    ),
    "targets.fp32_scaled": _fp32_scaled,
    "targets.sparse_kernel_model": _sparse_model,
    "targets.sparse_measured": "measured {measured_us:.1f} us (the model gives {model_us:.1f} us)",
    "targets.sparse_dtypes_measured": "2:4 times measured for {dtypes} only",
    "targets.sparse_host_floor": (
        "per-call host floor of eager sparse F.linear (rows whose per-call time is not the kernel's); its interval "
        "spans the floors of every measured shape off them"
    ),
    "targets.graph_no_host": "no host work per call inside a CUDA graph",
    "targets.dense_host_bound": "fastest dense call measured bounds its host cost",
    "targets.reconversion_every_call": "plus re-conversion every call",
    "targets.no_dtype_rows": _no_dtype_rows,
    "targets.sparse_raises": "no sparse path: every {backend} row raises ({error})",
    "targets.no_sparse_rows": "no sparse {dtype} rows measured for {backend} on this GPU",
    "targets.no_rate": "no {family} rate measured on this GPU",
    "targets.op_rate": "{amount:.4g} {unit} / effective {family} rate",
    "targets.op_host": "host time of one {kind} call",
    "targets.measure_layer": _measure_layer,
    "targets.lowered_dense": "{backend} lowers it dense ({reason})",
    "targets.importance_weight_magnitude": (
        "per FFN neuron: L2 norm of its row in every producer x L2 norm of its column in the consumer (weight magnitude)"
    ),
    "targets.importance_calibration": (
        "per FFN neuron: L2 norm of its activation over {tokens} calibration tokens of {text}, dense model, "
        "x L2 norm of its output-projection column"
    ),
    # replay verdicts (sources/replay/replay.py)
    "targets.sla_p99": "p99 {p99_ms:.3f} ms vs budget {budget_ms:g} ms (p50 {p50_ms:.3f}, p95 {p95_ms:.3f}; this machine, measured)",
    # lowering decisions (sources/workload/lowering.py; signoff/audit.py for stored formats)
    "targets.stored_format_unknown": "stored as {dtype}: {backend} runs sparse only the formats of its profile; dequantize or convert first",
    "targets.profile_linear_only": "{profile} sparsifies linear layers only, not {op}",
    "targets.numpy_dtype": "the numpy kernels emulate fp32/fp16/bf16 inputs, not {dtype}",
    "targets.m_above_max": "M={m} exceeds the kernels' maximum {max_m}",
    "targets.k_not_multiple": "K={k} is not a multiple of M={m}",
    "targets.not_compliant": "weights do not comply with {pattern}",
    "targets.torch_2_4_only": "torch semi-structured sparsity is 2:4 only, not {pattern}",
    "targets.torch_raises": (
        "{stage} raises {error} (the message PyTorch 2.11 gives on a real H200, from the shared H200 support matrix "
        "{source}; torch did not run here)"
    ),
}
