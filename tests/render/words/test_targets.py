"""Every note code the target, workload, replay and model sources write has a phrase, and every phrase renders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparsedebug.records.notes import NoteValue, note
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.targets import PHRASES, PROFILE_WORDS, QUALITY_METRICS, SPLIT_RULES, method_words
from sparsedebug.sources.models.data import SENTENCE_RULE, WINDOW_RULE
from sparsedebug.sources.replay.checkpoint.quality import DECODER_METRIC, ENCODER_METRIC
from sparsedebug.sources.target.model import METHOD
from sparsedebug.sources.workload.lowering import PROFILES

PACKAGE = Path(__file__).resolve().parents[3] / "sparsedebug"

# One set of values per code, as the sources write them.
SAMPLES: dict[str, dict[str, NoteValue]] = {
    "targets.dense_roofline": {"floor_us": 6.1, "gb_s": 3900.0, "tflops": 650.0, "points": 40},
    "targets.launch_floor_bound": {"bound_us": 1.2, "reference": "H200 datasheet"},
    "targets.fp32_scaled": {"floor_us": 6.1, "gb_s": 3900.0, "tflops": 650.0, "fp32_tflops": 67.0, "tensor_tflops": 989.0, "reference": "H200 datasheet"},
    "targets.sparse_kernel_model": {
        "waves": 1.5, "tile_m": 128, "tile_n": 256, "ctas": 132, "k": 4096, "ns_per_k": 2.5, "compute_us": 15.4, "fill": 0.8,
        "memory_us": 9.0, "gb_s": 3900.0, "memory_bound": True,
    },
    "targets.sparse_measured": {"measured_us": 14.0, "model_us": 15.4},
    "targets.sparse_dtypes_measured": {"dtypes": ["float16"]},
    "targets.sparse_host_floor": {},
    "targets.graph_no_host": {},
    "targets.dense_host_bound": {},
    "targets.reconversion_every_call": {},
    "targets.no_dtype_rows": {"dtype": "int8", "measured": []},
    "targets.sparse_raises": {"backend": "h200-cutlass", "error": "RuntimeError('...')"},
    "targets.no_sparse_rows": {"dtype": "bfloat16", "backend": "h200-cusparselt"},
    "targets.no_rate": {"family": "attention"},
    "targets.op_rate": {"amount": 1.5e9, "unit": "bytes", "family": "pointwise"},
    "targets.op_host": {"kind": "norm"},
    "targets.measure_layer": {
        "out": 4096, "k": 4096, "tokens": 64, "launch": "eager", "nearest_out": 4096, "nearest_k": 11008, "nearest_tokens": 2048,
        "decades": 1.4,
    },
    "targets.lowered_dense": {"backend": "h200-cusparselt", "reason": "shape_not_aligned"},
    "targets.sla_p99": {"p99_ms": 1.25, "budget_ms": 2.0, "p50_ms": 1.0, "p95_ms": 1.2},
    "targets.stored_format_unknown": {"dtype": "q4_1", "backend": "h200-cusparselt"},
    "targets.profile_linear_only": {"profile": "cpu-numpy", "op": "attention"},
    "targets.numpy_dtype": {"dtype": "int8"},
    "targets.m_above_max": {"m": 32, "max_m": 16},
    "targets.k_not_multiple": {"k": 4098, "m": 4},
    "targets.not_compliant": {"pattern": "2:4"},
    "targets.torch_2_4_only": {"pattern": "1:4"},
    "targets.torch_raises": {"stage": "matmul", "error": "RuntimeError('x')", "source": "fixtures/h200/results.json"},
    "targets.fix_layer_missing": {"layer": "fc9", "workload": "mlp"},
    "targets.fix_excluded": {"layer": "fc1", "old": "2:4", "written_to": "fixed.yaml"},
    "targets.fix_cast": {"layer": "down", "old": "fp32", "new": "fp16"},
    "targets.fix_block": {"layers": ["fc0", "fc1"], "old": ["32:2:4", "32:2:4"], "new": ["128:2:4", "128:2:4"]},
    "targets.fix_set": {"action": "pad", "causes": ["shape_not_aligned"], "layers": ["l0.down", "l1.down"], "dims": ["K", "K"],
                        "old": ["1368", "1368"], "new": ["1376", "1376"], "covered": ["l0.up"], "written_to": "fixed.yaml"},
    "targets.fix_set_refused": {"action": "pad", "causes": ["shape_not_aligned"], "layers": ["l0.down", "l1.down"], "layer": "l1.down",
                                "why_code": "targets.pad_consumers", "why.layer": "l1.down", "why.count": 2},
    "targets.fix_no_vnm_layer": {},
    "targets.fix_is_advice": {"rule": "schedule.graph", "action": "cuda_graph"},
    "targets.fix_block_checkpoint": {"model": "minilm"},
    "targets.fix_pad_checkpoint": {"layer": "encoder.layer.0.output.dense"},
    "targets.fix_knob": {"knob": "conversion", "old": "per_call", "new": "once", "layers": ["l0.up", "l1.up"], "written_to": "f.yaml"},
    "targets.fix_precision": {"old": "fp32", "new": "fp16"},
    "targets.fix_unknown_knob": {"knob": "batch", "value": 8},
    "targets.pad_width_from_input": {"layer": "fc0"},
    "targets.pad_width_through": {"layer": "fc1", "op": "norm", "through": "ln"},
    "targets.pad_width_shared": {"layer": "down", "feeds": ["tap"]},
    "targets.pad_not_sparse_linear": {"layer": "act"},
    "targets.pad_already_sparse": {"layer": "fc1", "out": 128, "k": 512},
    "targets.pad_output_feeds": {"layer": "fc1", "op": "norm", "consumer": "ln"},
    "targets.pad_consumers": {"layer": "fc1", "count": 2},
    "targets.pad_none_found": {"layer": "fc1", "search": 1024, "out": 7, "k": 9},
    "targets.pad_breaks_graph": {"layer": "fc1", "dim": "K", "old": 1368, "new": 1376, "error": "widths differ"},
    "targets.padded": {"layer": "down", "dim": "K", "old": 1368, "new": 1376, "producers": ["gate", "up"], "consumer": "down"},
    "targets.importance_weight_magnitude": {},
    "targets.importance_calibration": {"tokens": 512, "text": "pydoc_data.topics"},
}


def test_every_phrase_has_a_sample_and_every_sample_a_phrase() -> None:
    assert set(SAMPLES) == set(PHRASES)


@pytest.mark.parametrize("code", sorted(SAMPLES))
def test_every_phrase_renders(code: str) -> None:
    text = say(note(code, **SAMPLES[code]))
    assert text and "{" not in text and "not recorded" not in text


def test_every_code_the_package_writes_has_a_phrase() -> None:
    """A ``note("targets.…")`` anywhere in the package names a code this table phrases."""
    written = set()
    for path in PACKAGE.rglob("*.py"):
        written |= set(re.findall(r'note\(\s*"(targets\.[a-z_0-9]+)"', path.read_text(encoding="utf-8")))
    assert written and written <= set(PHRASES)


def test_ids_have_words() -> None:
    assert "roofline" in method_words(METHOD)
    assert {WINDOW_RULE, SENTENCE_RULE} <= set(SPLIT_RULES) and {ENCODER_METRIC, DECODER_METRIC} <= set(QUALITY_METRICS)
    assert set(PROFILES) == set(PROFILE_WORDS)


def test_a_missing_nearest_point_and_memory_bound_read_right() -> None:
    far = say(note("targets.measure_layer", out=8, k=8, tokens=1, launch="cuda_graph", nearest_out=None, nearest_k=None, nearest_tokens=None, decades=None))
    assert far == "measure 8x8 at 1 tokens, cuda graph: GPU-only dense and 2:4 kernel time"
    assert "(memory-bound)" in say(note("targets.sparse_kernel_model", **SAMPLES["targets.sparse_kernel_model"]))
    assert say(note("targets.no_dtype_rows", dtype="int8", measured=[])) == "no int8 rows measured on this GPU (measured: none)"
    assert say(note("targets.fix_excluded", layer="fc1", old="2:4", written_to="fixed.yaml")) == "fc1: sparsity 2:4 -> dense (excluded), written to fixed.yaml"


def test_a_locate_fallback_words_the_lowering_note_it_carries() -> None:
    inner = note("targets.k_not_multiple", k=4098, m=4)
    flat: dict[str, NoteValue] = {f"detail.{k}": v for k, v in inner.values.items()}
    finding = note("locate.finding.fallback", intent="2:4", reason="shape_not_aligned", detail_code=inner.code, **flat)
    assert say(finding) == "declared 2:4 but runs dense: shape_not_aligned (K=4098 is not a multiple of M=4)"


def test_a_fix_a_trace_cannot_take_names_the_fix_in_words() -> None:
    from sparsedebug.records.bundle import FixOutcome
    from sparsedebug.records.classification import Fix
    from sparsedebug.render.words.targets import fix_how_words

    fix = Fix(kind="advice", code="cuda_graph", rule="scheduling.overhead_regression", metric="span_busy_ratio", direction="down")
    outcome = FixOutcome(proposed=fix, applied=False, how=note("playbook.fix_needs_rerun", kind="trace", rule=fix.rule, action=fix.code),
                         fixed_source="none")
    assert fix_how_words(outcome) == ("the candidate is a trace, not a workload: pass --fixed with a re-run after: capture the forward "
                                      "in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace")
