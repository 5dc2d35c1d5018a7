"""Every note code the locate code writes has a phrase, and every bisect output renders from facts alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparsedebug.locate.ranks import _findings
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.findings import BisectResult
from sparsedebug.records.notes import Note, NoteValue, note
from sparsedebug.records.ranks import RankChange, RankComparison, Straggler
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath
from sparsedebug.render.words.locate import PHRASES
from sparsedebug.render.words.locate_text import finding_text, metric_text, reference_text, stage_text, verdict_text
from sparsedebug.render.words.notes import say
from tests.locate.test_walk import make_run

LOCATE = Path(__file__).resolve().parents[3] / "sparsedebug" / "locate"

# Values each code is written with (the same names the locate code uses).
CMP: dict[str, NoteValue] = {"ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3, "base_p50": 1.0, "cand_p50": 1.2, "n_base": 20, "n_cand": 20}
LISTS: dict[str, NoteValue] = {"layers": ["a", "b"], "ratio": [1.2, 1.5], "with_ci": ["a"], "ci_low": [1.1], "ci_high": [1.3]}
MODEL: dict[str, NoteValue] = {"matched": 3, "total": 5, "share": 0.6, "base": "b", "only_base": ["x (linear 4x4)"], "more_base": 1,
                               "cand": "c", "only_cand": [], "more_cand": 0}
SAMPLES: dict[str, dict[str, NoteValue]] = {
    "locate.finding.layout": {"change": "removed"},
    "locate.finding.removed": {"op": "linear"},
    "locate.finding.added": {"op": "linear"},
    "locate.finding.changed": {"fields": ["weight_shape"], "before": ["[4, 4]"], "after": ["[8, 4]"]},
    "locate.finding.declared": {"sparsity_before": "None", "sparsity_after": "2:4", "dtype_before": None, "dtype_after": None},
    "locate.finding.fallback": {"intent": "2:4", "reason": "shape_not_aligned"},
    "locate.finding.path_changed": {"before": "dense/attention", "after": "dense/fp32_gemm", "cause_codes": ["non_contiguous"], "cause_tensors": ["query"], "cause_was": ["1"], "cause_now": ["2"],
                                    "op": "attention", "backend_before": "cudnn", "backend_after": "math"},
    "locate.finding.sparse_as_declared": {"path": "sparse/sparse_gemm"},
    "locate.finding.per_call_conversion": {"count": 2, "base": 0, "each_ms": 0.1},
    "locate.finding.sparse_gemms": {"count": 2},
    "locate.finding.new_kernel_class": {"kernel_class": "fp32_gemm", "kernels": ["sgemm_128"]},
    "locate.finding.layout_copies": {"kernels": ["Memcpy DtoD (Device -> Device)"]},
    "locate.finding.slower": {**CMP, "explained": [], "sparse_path": False, "persistent": False},
    "locate.finding.faster": {**CMP, "sparse_path": True},
    "locate.finding.precision": {"rel_err": 0.2, "precision": "fp16", "tolerance": 0.01},
    "locate.finding.idle": {**CMP, "grew": True, "per_layer_ms": 0.1, "persistent": True},
    "locate.finding.quality": {"cosine": 0.9, "guardrail": 0.95},
    "locate.metric.latency_ms": {},
    "locate.metric.busy_ms": {},
    "locate.metric.overhead_ms": {"base_p50": 0.5, "cand_p50": 0.9},
    "locate.graph.not_annotated": {},
    "locate.graph.differ": {"count": 1, "layers": ["fc1"], "kinds": ["added"]},
    "locate.graph.intended": {"count": 2},
    "locate.graph.same": {"count": 4},
    "locate.graph.layout": {"count": 5, "layers": ["a", "b", "c", "d"], "more": True},
    "locate.graph.revision": {"before": "r1", "after": "r2"},
    "locate.lower.fallback": {"layers": ["fc1"], "reasons": ["shape_not_aligned"]},
    "locate.lower.path_changed": {"layers": ["attn"]},
    "locate.lower.kind": {"kind": "per_call_conversion", "count": 5, "layers": ["a", "b", "c"]},
    "locate.lower.intended": {"count": 2},
    "locate.lower.same": {},
    "locate.lower.backend": {"before": "cuda:a", "after": "cuda:b"},
    "locate.lower.layout": {"count": 1, "layers": ["view"], "more": False},
    "locate.lower.by_class": {"new": [], "sparse_only": True},
    "locate.kernel.slower": LISTS,
    "locate.kernel.precision": {"layers": ["fc1"]},
    "locate.kernel.faster": LISTS,
    "locate.kernel.busy": {**CMP, "enough": False},
    "locate.kernel.too_few": {**LISTS, "n_base": [2.0, 2.0], "n_cand": [2.0, 2.0]},
    "locate.kernel.only": {"cand": 1, "base": 0},
    "locate.kernel.drifted": {"count": 2, "low": 0.9, "high": 1.1},
    "locate.kernel.same": {},
    "locate.schedule.overhead": {**CMP, "base_overhead": 0.5, "cand_overhead": 0.9},
    "locate.schedule.too_few": {"n_base": 3, "n_cand": 3},
    "locate.schedule.host_wait": {"before": 0.1, "after": 0.2},
    "locate.schedule.idle_layers": {"count": 2, "layers": ["a"], "ms": 0.3},
    "locate.schedule.threads": {"before": 4, "after": 8},
    "locate.schedule.empty": {},
    "locate.outcome.latency": {**CMP, "direction": "same", "enough": True, "reason": "p=0.4"},
    "locate.outcome.untraced": {"files": ["b.json"]},
    "locate.outcome.host_bound": {"share": 0.7},
    "locate.outcome.budget": {"p99": 3.2, "budget": 3.0, "over": True},
    "locate.outcome.speedup": {"speedup": 1.3},
    "locate.outcome.cosine": {"cosine": 0.99},
    "locate.outcome.dense_wins": {},
    "locate.outcome.no_samples": {"runs": ["b"]},
    "locate.outcome.empty": {},
    "locate.verdict.divergence": {"stage": "lower"},
    "locate.verdict.earlier_undecided": {"stages": ["graph"]},
    "locate.verdict.explains": {"stages": ["kernel"]},
    "locate.verdict.carries": {"share": 0.8, "delta_ms": 0.4},
    "locate.verdict.overlap": {"share": 2.5, "delta_ms": 0.4},
    "locate.verdict.outcome_flat": {},
    "locate.verdict.undecided": {"unstable": False, "stages": ["outcome"]},
    "locate.verdict.no_regression": {},
    "locate.verdict.outcome_improved": {"speedup": 1.2, "base_p50": 1.2, "cand_p50": 1.0, "enough": False, "n_base": 3, "n_cand": 3},
    "locate.verdict.improved": {"stages": ["kernel"]},
    "locate.drift.session": {},
    "locate.drift.bands": {"forward": 1.1, "layers": 3, "low": 0.9, "high": 1.2},
    "locate.ranks.straggler": {"side": "candidate", "rank": 1, "collective": "allreduce", "share": 1.0, "instances": 5, "late_ms": 2.0},
    "locate.ranks.confined": {"rank": 1, "ratio": 1.5, "elsewhere": 1.0, "path_changes": ["fc1"], "slowest": []},
    "locate.ranks.waiting": {"ratio": 1.4, "rank": 1},
    "locate.ranks.uniform": {"ranks": 4, "ratio": 1.2},
    "locate.differ.model": MODEL,
    "locate.differ.device": {"base": "cuda:H200", "cand": "cuda:A100", "props": ["multiprocessors"], "before": ["132"], "after": ["108"]},
    "locate.differ.phase": {"base": "inference", "cand": "training step"},
    "locate.differ.tokens": {"base": 4096, "cand": 8192, "ratio": 2.0},
    "locate.differ.launch": {"base": "eager", "cand": "cuda_graph"},
    "locate.differ.dtype": {"base": "fp16", "cand": "fp32", "count": 4, "share": 1.0, "layers": ["fc0", "fc1", "fc2"], "more": True},
    "locate.compare.kernel_named": {},
    "locate.outcome.too_few": {"n_base": 3, "n_cand": 3, "needed": 6},
    "locate.outcome.profiler_cost": {"share": 0.3, "traced_base": 1.2, "traced_cand": 1.5, "untraced_base": 1.0, "untraced_cand": 1.1},
    "locate.compare.layers_changed": MODEL,
    "locate.compare.renamed": {"count": 2},
    "locate.compare.merged": {"fine": "candidate", "count": 9, "groups": 3, "coarse": "baseline"},
    "locate.compare.merged_layer": {"count": 6, "layers": ["mm#0", "add#0", "gelu#0", "mm#1"], "more": 2},
    "locate.differ.kernels": {"common": 2, "smaller": 5, "base": "sparse", "cand": "other", "base_kernels": 7, "cand_kernels": 9},
    "locate.compare.backend": {"base": "cuda:a", "cand": "cuda:b"},
    "locate.compare.dtype_changed": {"count": 1, "layers": ["fc1"], "more": False},
}


def test_every_code_written_in_locate_has_a_phrase_and_a_sample() -> None:
    written = {m for path in LOCATE.glob("*.py") for m in re.findall(r'"(locate\.[a-z_]+\.[a-z_]+)"', path.read_text())}
    assert written <= set(PHRASES), sorted(written - set(PHRASES))
    assert set(SAMPLES) == set(PHRASES)


@pytest.mark.parametrize("code", sorted(SAMPLES))
def test_each_phrase_renders_its_values(code: str) -> None:
    text = say(note(code, **SAMPLES[code]))
    assert text and "{" not in text and "not recorded" not in text


def _render_all(result: BisectResult) -> list[str]:
    out = [verdict_text(result), reference_text(result) or ""]
    for stage in result.stages:
        out.append(stage_text(stage))
        out += [finding_text(f) for f in stage.layers] + [metric_text(m) for m in stage.metrics]
    return out


FALLBACK = (KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED, KernelClass.DENSE_TC_GEMM)


@pytest.mark.parametrize("cand", [
    {"scale": {"layers.0.mlp.up": 1.5}},
    {"intended": {"layers.0.mlp.up": "2:4"}, "path": {"layers.0.mlp.up": FALLBACK}},
    {"conversions": {"layers.0.mlp.up": 2}},
    {"overhead_ms": 2.0},
    {"cosine": 0.9},
    {"rel_err": {"layers.0.mlp.up": 0.2}},
    {"iterations": 3, "scale": {"layers.0.mlp.up": 1.3}},
])
def test_bisect_outputs_render_from_facts(cand: dict[str, object]) -> None:
    result = bisect_runs(make_run("b", seed=1, rel_err={"layers.0.mlp.up": 1e-3}), make_run("c", seed=2, **cand), min_cosine=0.95)  # type: ignore[arg-type]
    texts = _render_all(result)
    assert texts[0] and all("{" not in t for t in texts)
    assert all(isinstance(n, Note) for s in result.stages for n in s.facts)


def test_rank_findings_render() -> None:
    late = Straggler(rank=1, collective="ncclAllReduce", late_ms=2.0, last_share=1.0, instances=5)
    changes = [RankChange(rank=0, step_ratio=1.0, compute_ratio=1.0, communication_ratio=1.5),
               RankChange(rank=1, step_ratio=1.4, compute_ratio=1.5, communication_ratio=1.0, path_changes=["fc1"])]
    comparison = RankComparison(baseline="b", candidate="c", ranks=2, changes=changes, candidate_straggler=late,
                                confined_to=[1], uniform=False, walked_rank=1)
    texts = [say(n) for n in _findings(comparison)]
    assert texts[0].startswith("candidate straggler: rank 1") and "confined to rank 1" in texts[1] and "wait for rank 1" in texts[2]


def test_a_flat_outcome_and_a_passing_change_say_why_from_their_comparison() -> None:
    flat = bisect_runs(make_run("b", seed=1), make_run("c", seed=2))
    assert "(no significant difference: p=" in stage_text(flat.stage("outcome"))
    slow = bisect_runs(make_run("b", seed=1), make_run("c", seed=2, scale={"layers.0.mlp.up": 1.5}))
    (finding,) = [f for f in slow.stage("kernel").layers if f.kind == "slower"]
    assert finding.comparison is not None
    shown = finding_text(finding)
    assert shown.startswith("kernel time slower x1.") and (finding.comparison.persistent or "not persistent (" in shown)
