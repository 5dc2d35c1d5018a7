"""Precision rules: a layer whose precision changed is precision evidence, named as the gate names it."""

from __future__ import annotations

from sparsedebug.classify.precision import layer_precisions
from sparsedebug.classify.score import classify_evidence
from sparsedebug.records.classification import Classification, Evidence, Mechanism
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath, RunRecord
from sparsedebug.render.words.gate import detail_words
from sparsedebug.render.words.mechanisms_records import fix_words
from sparsedebug.render.words.notes import say
from sparsedebug.signoff.gate import GatePolicy, check_precision
from tests.classify.test_score import make_run


def _dtype_change(result: Classification) -> Evidence:
    return next(e for e in result.evidence if e.rule == "precision.dtype_change")


def raised_to_fp32(layer: str = "l1", fell_back: bool = True) -> tuple[RunRecord, RunRecord]:
    """An fp16 baseline and a candidate whose ``layer`` now runs in fp32 (the default bundle's down_proj)."""
    base, cand = make_run("baseline", dtype="fp16"), make_run(dtype="fp16")
    next(g for g in cand.graph.layers if g.name == layer).dtype = "fp32"
    next(k for k in cand.kernel.layers if k.name == layer).precision = "fp32"
    if fell_back:
        lo = next(lo for lo in cand.lower.layers if lo.name == layer)
        lo.path, lo.reason = KernelPath.DENSE, FallbackReason.DTYPE_UNSUPPORTED
    return base, cand


def test_fp16_to_fp32_layer_is_precision_evidence_naming_it() -> None:
    base, cand = raised_to_fp32("l1")
    result = classify_evidence(cand, baseline=base)
    line = _dtype_change(result)
    assert line.fired and line.value == 1.0
    assert "l1 fp16 -> fp32" in say(line.detail)
    precision = next(s for s in result.scores if s.mechanism == Mechanism.PRECISION)
    assert precision.status == "supported" and precision.score > 0


def test_classify_and_gate_name_the_same_precision_change() -> None:
    base, cand = raised_to_fp32("l2")
    gate = check_precision(base, cand, GatePolicy())
    line = _dtype_change(classify_evidence(cand, baseline=base))
    assert gate.status == "fail" and "l2 fp16 -> fp32" in detail_words(gate)
    assert line.fired and "l2 fp16 -> fp32" in say(line.detail)


def test_raised_precision_fix_restores_the_baseline_precision() -> None:
    base, cand = raised_to_fp32("l0", fell_back=False)
    result = classify_evidence(cand, baseline=base)
    assert result.winner == Mechanism.PRECISION
    assert result.fix is not None and result.fix.rule == "precision.dtype_change"
    assert (result.fix.kind, result.fix.knob, result.fix.value) == ("knob", "precision", "fp16")
    assert result.fix.names_layer == "l0" and "l0" in fix_words(result.fix)


def test_lowered_precision_restores_the_most_precise_baseline_format() -> None:
    base, cand = make_run("baseline", dtype="fp32"), make_run(dtype="bf16")
    result = classify_evidence(cand, baseline=base)
    line = _dtype_change(result)
    assert line.fired and line.value == 3.0 and "l0 fp32 -> bf16" in say(line.detail)
    assert result.fix is not None and result.fix.value == "fp32"


def test_precision_labels_are_read_by_the_shared_dtype_table() -> None:
    base, cand = make_run("baseline", dtype="fp16"), make_run(dtype="fp16")
    for k in base.kernel.layers:
        k.precision = "torch.float16"
    for k in cand.kernel.layers:
        k.precision = "fp16 in / fp32 acc"  # same input format, spelled differently: no change
    assert _dtype_change(classify_evidence(cand, baseline=base)).value == 0.0
    cand.kernel.layers[1].precision = "c10::BFloat16"
    line = _dtype_change(classify_evidence(cand, baseline=base))
    assert line.fired and line.value == 1.0 and "l1 fp16 -> bf16" in say(line.detail)


def test_kernel_precision_wins_over_graph_dtype() -> None:
    run = make_run(dtype="fp16")
    run.kernel.layers[2].precision = "fp32"
    assert layer_precisions(run) == {"l0": "fp16", "l1": "fp16", "l2": "fp32"}


def test_a_layer_is_counted_once_when_dtype_and_path_both_changed() -> None:
    base, cand = make_run("baseline", dtype="fp32"), make_run(dtype="fp32")
    base.lower.layers[0].kernel_class = KernelClass.DENSE_TC_GEMM
    cand.graph.layers[0].dtype = "fp16"
    cand.kernel.layers[0].precision = "fp16"
    cand.lower.layers[0].kernel_class = KernelClass.FP32_GEMM
    line = _dtype_change(classify_evidence(cand, baseline=base))
    assert line.value == 1.0 and "l0 fp32 -> fp16" in say(line.detail)


def test_unchanged_precision_names_no_layer() -> None:
    line = _dtype_change(classify_evidence(make_run(dtype="fp16"), baseline=make_run("baseline", dtype="fp16")))
    assert not line.fired and line.value == 0.0 and "no layer changed precision" in say(line.detail)
