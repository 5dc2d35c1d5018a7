"""Every note the compute, scheduling and thermal rules, attribution and scoring write has words (render.words.mechanisms)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparsedebug.records.classification import (
    AttributedPart,
    Attribution,
    Classification,
    Evidence,
    Fix,
    FixTarget,
    Mechanism,
    MechanismShare,
    Proof,
)
from sparsedebug.records.notes import Note, NoteValue, note
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.mechanisms import PHRASES
from sparsedebug.render.words.mechanisms_records import (
    advice_words,
    fix_words,
    margin_words,
    part_words,
    proof_words,
)
from sparsedebug.render.words.notes import say

CLASSIFY = Path(__file__).parents[3] / "sparsedebug" / "classify"
WRITERS = ("compute.py", "scheduling.py", "thermal.py", "attribution.py", "score.py")

# One set of values per code, shaped as the writers write them.
SAMPLES: dict[str, dict[str, NoteValue]] = {
    "mechanisms.none_declared_sparse": {},
    "mechanisms.fallback_flops": {"lost_flops": 2e9, "total_flops": 8e9, "layers": ["fc1"], "reasons": ["shape_not_aligned"]},
    "mechanisms.fallback_layers": {"lost": 1, "declared": 4, "layers": ["fc1"], "reasons": ["dtype_unsupported"]},
    "mechanisms.neighbours_changed_precision": {"count": 1, "layers": ["ln"], "changes": ["fp16 -> fp32"]},
    "mechanisms.no_neighbour_changed": {},
    "mechanisms.neighbours_latency_flat": {"count": 2},
    "mechanisms.neighbour_growth": {"grown_ms": 0.5, "total_ms": 0.6, "count": 2, "layer": "attn", "layer_ms": 0.4,
                                    "path_before": "dense/attention", "path_after": "dense/fp32_gemm", "op": "attention",
                                    "backend_before": "cudnn", "backend_after": "math", "cause_codes": ["non_contiguous"],
                                    "cause_tensors": ["query"], "cause_was": ["1"], "cause_now": ["2048"]},
    "mechanisms.fallback_time": {"fallback_ms": 0.2, "total_ms": 1.0, "timed": 3, "untimed": 1, "layer": "fc1", "layer_ms": 0.2,
                                 "reason": "shape_not_aligned"},
    "mechanisms.no_compute_bound_pairs": {"ridge": 12.5},
    "mechanisms.sparse_vs_dense": {"count": 2, "sparse_ms": 1.2, "dense_ms": 1.0, "layer": "fc1", "layer_sparse_ms": 0.7,
                                   "layer_dense_ms": 0.5},
    "mechanisms.ncu_not_for_replay": {},
    "mechanisms.ncu_no_sm": {"file": "ncu.csv", "kernel": "sm90_sparse_gemm"},
    "mechanisms.span_vs_busy": {"span_ms": 2.0, "busy_ms": 1.0, "iterations": 5, "base_span_ms": 1.1, "base_busy_ms": 1.0},
    "mechanisms.replay_no_idle_split": {},
    "mechanisms.no_idle_time": {},
    "mechanisms.host_vs_kernel_wait": {"host_ms": 0.9, "kernel_ms": 0.1},
    "mechanisms.overhead_per_launch": {"overhead_ms": 0.5, "launches": 50, "per_launch_us": 10.0},
    "mechanisms.overhead_regression": {"base_latency_ms": 1.0, "cand_latency_ms": 1.5, "latency_change_ms": 0.5,
                                       "base_overhead_ms": 0.1, "cand_overhead_ms": 0.5, "overhead_change_ms": 0.4, "slower": True},
    "mechanisms.no_conversion": {},
    "mechanisms.conversion_cost": {"count": 2, "cost_ms": 0.3, "latency_ms": 1.0},
    "mechanisms.imported_no_threads": {},
    "mechanisms.threads_on_cores": {"threads": 16, "cores": 8},
    "mechanisms.latency_percentiles": {"p50_ms": 1.0, "p95_ms": 1.2, "p99_ms": 2.0, "n": 50},
    "mechanisms.smi_unaligned": {"window": None},
    "mechanisms.smi_no_sample": {"window": "no sample inside the run's window (its clock reads ...)"},
    "mechanisms.smi_not_for_replay": {},
    "mechanisms.smi_all_idle": {"samples": 4},
    "mechanisms.smi_throttled": {"throttled": 3, "busy": 4, "reasons": ["sw_power_cap 3"], "window": "4 sample(s) in the run's window",
                                 "base_value": 0.0},
    "mechanisms.smi_clock": {"min_mhz": 1500.0, "max_mhz": 1980.0, "max_source": "log", "window": None, "base_window": None},
    "mechanisms.latency_drift": {"first_ms": 1.0, "last_ms": 1.2, "rho": 0.8, "p": 0.001, "n": 30},
    "mechanisms.gate_baseline_shares": {"base_value": 1.4},
    "mechanisms.gate_not_finite": {"value": "inf"},
    "mechanisms.gate_no_baseline_window": {},
    "mechanisms.gate_baseline_window_same": {},
    "mechanisms.gate_no_trend": {"alpha": 0.05},
    "mechanisms.gate_busy_flat": {"last_ms": 1.0, "first_ms": 1.0},
    "mechanisms.no_baseline": {"judged": "path_change"},
    "mechanisms.no_latency_both": {},
    "mechanisms.no_kernel_samples": {},
    "mechanisms.no_span_busy": {},
    "mechanisms.busy_zero": {},
    "mechanisms.no_idle_split": {},
    "mechanisms.no_launches": {},
    "mechanisms.no_latency_either": {},
    "mechanisms.no_span_busy_either": {},
    "mechanisms.no_latency": {},
    "mechanisms.conversion_untimed": {"layers": ["fc1", "fc2"]},
    "mechanisms.no_threads": {},
    "mechanisms.cores_unknown": {"threads": 8},
    "mechanisms.few_samples_tail": {"n": 5},
    "mechanisms.few_samples_drift": {"n": 5},
    "mechanisms.no_smi_log": {},
    "mechanisms.no_cpu_clock": {},
    "mechanisms.smi_no_reasons": {"file": "smi.csv"},
    "mechanisms.smi_no_clock": {"file": "smi.csv"},
    "mechanisms.capture_baseline": {},
    "mechanisms.capture_trace": {},
    "mechanisms.capture_replay": {},
    "mechanisms.capture_replay_both": {},
    "mechanisms.capture_latency_samples": {},
    "mechanisms.capture_repeats": {"at_least": 20, "ordered": False},
    "mechanisms.capture_fingerprint": {},
    "mechanisms.capture_ncu": {},
    "mechanisms.capture_smi": {},
    "mechanisms.capture_cpu_freq": {},
    "mechanisms.part_conversion": {"per_call": 1, "base_per_call": 0, "measured": True, "timed_ms": 0.2},
    "mechanisms.part_fallback": {"intended": "2:4", "reason": None},
    "mechanisms.part_precision_path": {"moved": "backend", "before": "flash", "after": "math", "how": "fp16 -> fp32"},
    "mechanisms.part_sparse_path": {"moved": "path", "before": "sparse/sparse_gemm", "after": "sparse/dense_tc_gemm"},
    "mechanisms.part_path_changed": {"moved": "path", "before": "dense", "after": "dense/simt"},
    "mechanisms.part_precision": {"how": "fp16 -> fp32"},
    "mechanisms.part_bytes": {"base_bytes": 1e6, "cand_bytes": 2e6},
    "mechanisms.part_copies": {"base_ms": 0.0, "cand_ms": 1.5},
    "mechanisms.part_clocks_fell": {"rule": "thermal.clock_drop"},
    "mechanisms.part_threads_queue": {"rule": "scheduling.oversubscription"},
    "mechanisms.part_unexplained": {},
    "mechanisms.part_host_gap": {},
    "mechanisms.part_gaps_outside": {"base_ms": 0.1, "cand_ms": 0.3},
}


def _written_codes() -> set[str]:
    return {code for name in WRITERS for code in re.findall(r'"(mechanisms\.[a-z_]+)"', (CLASSIFY / name).read_text())}


def test_every_code_the_writers_write_has_a_phrase_and_a_sample() -> None:
    written = _written_codes()
    assert written, "no mechanisms note codes found in the writers"
    assert written <= set(PHRASES), sorted(written - set(PHRASES))
    assert written <= set(SAMPLES), sorted(written - set(SAMPLES))


@pytest.mark.parametrize("code", sorted(SAMPLES))
def test_every_phrase_words_its_sample(code: str) -> None:
    text = say(Note(code=code, values=SAMPLES[code]))
    assert text and "{" not in text and "}" not in text


def test_phrases_read_as_before() -> None:
    assert say(note("mechanisms.threads_on_cores", threads=16, cores=8)) == "16 threads on 8 logical cores"
    assert say(note("mechanisms.capture_repeats", at_least=9, ordered=True)) == "re-run with at least 9 (better 50+) repeats in order"
    assert say(note("mechanisms.part_fallback", intended="2:4", reason=None)) == "declared 2:4 but runs dense (no reason recorded)"
    assert say(note("mechanisms.no_baseline", judged="regression")) == "no baseline run to compare against"


def _classification(**update: object) -> Classification:
    line = Evidence(rule="thermal.clock_drop", mechanism=Mechanism.THERMAL, metric="smi_min_clock_ratio", value=0.7, op="<",
                    threshold=0.9, unit="ratio", fired=True, contribution=2.0, source="smi.csv: clocks.sm",
                    detail=note("mechanisms.smi_clock", min_mhz=1400.0, max_mhz=1980.0, max_source="log"),
                    gate=None)
    part = AttributedPart(part="fc1", kind="kernel", mechanism=Mechanism.THERMAL, ms=0.3, rule="thermal.clock_drop",
                          evidence=note("mechanisms.part_clocks_fell", rule="thermal.clock_drop"))
    att = Attribution(base_p50_ms=1.0, cand_p50_ms=1.3, delta_ms=0.3, parts=[part], unattributed_ms=0.0,
                      mechanisms=[MechanismShare(mechanism=Mechanism.THERMAL, ms=0.3, share=1.0, largest="fc1", parts=1)])
    base = Classification(run="cand", scores=[], evidence=[line], missing_evidence=[], winner=Mechanism.THERMAL,
                          ranked_by="attribution", attribution=att, margin=None,
                          proof=Proof(artifact="cand.json", rule="thermal.clock_drop", part="fc1", part_kind="kernel"), fix=None)
    return base.model_copy(update=update)


def test_proof_part_and_margin_words() -> None:
    cls = _classification()
    assert cls.attribution is not None
    said = part_words(cls.attribution.parts[0], cls)
    assert said.startswith("same path, clocks fell inside the candidate's window (lowest non-idle SM clock 1400 MHz")
    proof = proof_words(cls)
    assert proof is not None and proof.startswith("cand.json: fc1 (kernel) +0.300 ms: same path, clocks fell")
    assert "; rule thermal.clock_drop: lowest non-idle SM clock 1400 MHz vs max 1980 MHz (log)" in proof
    assert margin_words(cls) == "no other mechanism carries any of the change"
    by_score = _classification(ranked_by="score", margin=2.5, proof=Proof(artifact="smi.csv", rule="thermal.clock_drop"))
    assert margin_words(by_score) == "2.50 times the runner-up's score"
    assert proof_words(by_score) == "smi.csv: smi.csv: clocks.sm: lowest non-idle SM clock 1400 MHz vs max 1980 MHz (log)"
    gated = cls.evidence[0].model_copy(update={"gate": note("mechanisms.gate_baseline_shares", base_value=0.72)})
    assert evidence_words(gated).endswith("(the baseline shows it too (0.72): not what changed)")


@pytest.mark.parametrize(
    ("fix", "words"),
    [
        (Fix(kind="knob", knob="conversion", value="once", rule="r", metric="latency_p50_ms", direction="down", code="convert_once"),
         "convert weights once at load instead of on every call, and re-time"),
        (Fix(kind="knob", knob="threads", value=8, rule="r", metric="latency_p50_ms", direction="down", code="set_threads"),
         "set threads to 8 (the logical core count) and re-time"),
        (Fix(kind="knob", knob="threads", value=8, rule="r", metric="span_busy_ratio", direction="down", code="set_threads"),
         "set threads to 8 and re-time; if the gap stays, batch calls"),
        (Fix(kind="layer", layer="fc1", action="exclude", rule="r", metric="fallback_flop_share", direction="down", code="exclude_layer"),
         "exclude fc1 from sparsity (it falls back to dense) and check latency does not move"),
        (Fix(kind="layer", layer="fc1", action="exclude", rule="r", metric="latency_p50_ms", direction="down", code="exclude_layer"),
         "exclude fc1 from sparsity: its sparse kernel is slower than dense"),
        (Fix(kind="layer", layer="fc1", action="pad", rule="r", metric="latency_p50_ms", direction="down", code="pad_shape"),
         "pad fc1 to an aligned shape so it takes the sparse path, and re-time"),
        (Fix(kind="layer", layer="fc1", action="cast", value="fp16", rule="r", metric="latency_p50_ms", direction="down", code="cast_layer"),
         "cast fc1 to fp16 (the dtype the other sparse layers run in) so the backend accepts it on the sparse path, and re-time"),
        (Fix(kind="advice", rule="r", metric="busy_p50_ms", direction="down", code="check_sparse_kernel"),
         "check the sparse kernel chosen for the shape, or raise tokens per call so 2:4 pays off"),
        (Fix(kind="advice", layer="ln", rule="r", metric="latency_p50_ms", direction="down", code="restore_neighbour_path"),
         "restore the neighbouring op's previous kernel path (ln): check its input layout, dtype and mask, and re-trace"),
        (Fix(kind="advice", rule="r", metric="span_busy_ratio", direction="down", code="cuda_graph"),
         "capture the forward in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace"),
        (Fix(kind="advice", rule="r", metric="span_busy_ratio", direction="down", code="batch_calls"),
         "batch calls so per-call overhead is paid once per batch, then re-time"),
        (Fix(kind="advice", rule="r", metric="latency_tail_ratio", direction="down", code="isolate_run"),
         "pin threads and isolate the run, then re-trace"),
        (Fix(kind="advice", rule="r", metric="smi_min_clock_ratio", direction="up", code="lock_clocks"),
         "lock clocks (`nvidia-smi -lgc`) or check the power cap (`nvidia-smi -q -d POWER`), then re-time"),
        (Fix(kind="advice", rule="r", metric="latency_drift_ratio", direction="down", code="pin_cpu_governor"),
         "pin the CPU frequency governor to performance, cool down between runs, then re-time"),
        (Fix(kind="advice", layer="attn", rule="r", metric="latency_p50_ms", direction="down", code="make_contiguous",
             targets=[FixTarget(cause="non_contiguous", layers=["attn"], tensors=["query"], removes_ms=0.2)]),
         "make the query of attn contiguous (call .contiguous() on their producers' outputs) and re-trace"),
    ],
)
def test_fix_words_from_codes(fix: Fix, words: str) -> None:
    assert fix_words(fix) == words


def test_memo_advice_from_claim_terms() -> None:
    terms = {"action_code": "make_contiguous", "metric": "latency_p50_ms", "tensors": "query,key,value", "restore": ""}
    assert advice_words(terms, "`attn0`") == (
        "make the query, key and value of `attn0` contiguous (call .contiguous() on their producers' outputs) and re-trace")
    cast = {"action_code": "cast_back", "metric": "latency_p50_ms", "tensors": "query", "restore": "fp16"}
    assert advice_words(cast, "`attn0`") == "cast the query of `attn0` back to fp16 and re-trace"
    assert advice_words({"action_code": "cuda_graph", "metric": "span_busy_ratio"}, None).startswith("capture the forward in a CUDA graph")
