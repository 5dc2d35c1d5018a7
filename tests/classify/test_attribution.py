"""Mechanism by attributed latency, on variations of the H200 traces and on generated ones.

Each pair plants one cause; the mechanism that carries the largest measured share of the
latency change must win, with the fix at the cause, and bisect, ``fallbacks`` and the memo
must name the same moved layers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.classify.score import classify_run
from sparsedebug.locate.paths import compare_paths
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.classification import Mechanism
from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.locate_text import stage_text, verdict_text
from sparsedebug.render.words.mechanisms_records import fix_words
from sparsedebug.sources.importers.trace.importer import import_trace
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.tracegen import TraceSpec, insert_layout_ops, read_doc, strip, write_doc, write_trace

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "fixtures" / "h200"
TRACES = ROOT / "fixtures" / "traces"
DENSE = H200 / "trace_dense_T2048.json.gz"
NONCONTIG = TRACES / "h200_dense_sdpa_efficient_noncontig.json.gz"
MATH_FP32 = TRACES / "h200_dense_sdpa_math_fp32.json.gz"


def _variant(tmp: Path, source: Path, name: str, *, stripped: bool, layout: bool) -> RunRecord:
    doc = read_doc(source)
    if layout:
        doc = insert_layout_ops(doc)
    out = tmp / f"{name}.json.gz"
    write_doc(out, strip(doc, "no_annotations") if stripped else doc)
    return import_trace(out)


@pytest.fixture(scope="module")
def layout_pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RunRecord, RunRecord]]:
    """Attention moved cudnn -> efficient because the query is no longer contiguous: annotated, stripped, layout ops inserted."""
    tmp = tmp_path_factory.mktemp("layout")
    pairs = {}
    for stripped in (False, True):
        base = _variant(tmp, DENSE, f"base-{stripped}", stripped=stripped, layout=False)
        for layout in (False, True):
            cand = _variant(tmp, NONCONTIG, f"cand-{stripped}-{layout}", stripped=stripped, layout=layout)
            pairs[f"{'stripped' if stripped else 'annotated'}{'+layout' if layout else ''}"] = (base, cand)
    return pairs


@pytest.mark.parametrize("variant", ["annotated", "annotated+layout", "stripped", "stripped+layout"])
def test_layout_caused_backend_change_is_lower_compute_and_the_fix_names_the_layout(
    layout_pairs: dict[str, tuple[RunRecord, RunRecord]], variant: str
) -> None:
    base, cand = layout_pairs[variant]
    bis = bisect_runs(base, cand)
    assert bis.first_stage == "lower", verdict_text(bis)
    assert bis.stage("graph").status in ("same", "not_comparable"), stage_text(bis.stage("graph"))
    moved = {f.layer for f in bis.stage("lower").layers if f.kind == "path_changed"}
    assert len(moved) == 4
    cls = classify_run(cand, baseline=base)
    assert cls.winner is Mechanism.COMPUTE and cls.ranked_by == "attribution"
    assert cls.scores[0].mechanism is Mechanism.COMPUTE and cls.scores[0].attributed_share is not None
    assert cls.scores[0].attributed_share > 0.9
    assert cls.attribution is not None
    compute_parts = {p.part for p in cls.attribution.parts if p.mechanism is Mechanism.COMPUTE}
    assert compute_parts == moved
    assert cls.fix is not None and "contiguous" in fix_words(cls.fix) and cls.fix.layer in moved
    report = compare_paths(base, cand)
    assert {c.layer for c in report.unintended} == moved
    memo = render_memo_detail(make_bundle(base, cand), load_playbook())
    share = cls.attribution.share_of(Mechanism.COMPUTE)
    assert share is not None
    assert f"mechanism compute carries {share.ms:.3f} ms of the {cls.attribution.delta_ms:+.3f} ms change" in memo
    assert "contiguous" in memo


def test_attention_moved_to_fp32_math_is_precision_and_the_fix_casts_back(tmp_path: Path) -> None:
    base, cand = import_trace(DENSE), import_trace(MATH_FP32)
    cls = classify_run(cand, baseline=base)
    assert cls.winner is Mechanism.PRECISION and cls.ranked_by == "attribution"
    assert cls.fix is not None and "back to fp16" in fix_words(cls.fix)
    neighbour = next(e for e in cls.evidence if e.rule == "compute.neighbour_path_change")
    assert "fp32" in evidence_words(neighbour) and "no layer outside" not in evidence_words(neighbour)


def test_added_host_gaps_make_scheduling_win(tmp_path: Path) -> None:
    spec = TraceSpec(layers=6, iterations=6, backward=False, optimizer=False, nccl=False, memcpy=False, streams=1, jitter=0.0)
    write_trace(tmp_path / "base.json", spec)
    write_trace(tmp_path / "cand.json", TraceSpec(**{**spec.__dict__, "sparse_layers": frozenset({0, 2, 4}), "sparse_host_us": 400.0}))
    base, cand = import_trace(tmp_path / "base.json"), import_trace(tmp_path / "cand.json")
    cls = classify_run(cand, baseline=base)
    assert cls.winner is Mechanism.SCHEDULING and cls.ranked_by == "attribution", cls.attribution
    assert cls.attribution is not None and cls.attribution.delta_ms > 0
    share = cls.attribution.share_of(Mechanism.SCHEDULING)
    assert share is not None and share.ms > 0.5 * cls.attribution.delta_ms


def test_no_measured_growth_leaves_the_ranking_to_the_rule_scores() -> None:
    base = import_trace(DENSE)
    cls = classify_run(base, baseline=base)
    assert cls.ranked_by == "score" and cls.winner is None
    assert cls.attribution is not None and cls.attribution.delta_ms == 0


def test_a_gemm_moved_to_fp32_makes_precision_win(tmp_path: Path) -> None:
    from tests.support.tracegen import generate, layer_name, move_to_fp32

    spec = TraceSpec(layers=6, iterations=6, backward=False, optimizer=False, nccl=False, memcpy=False, streams=1, jitter=0.0)
    write_trace(tmp_path / "base.json", spec)
    doc, _ = generate(TraceSpec(**{**spec.__dict__, "slow_layers": frozenset({0}), "slow_factor": 4.0}))
    write_doc(tmp_path / "cand.json", move_to_fp32(doc, layer_name(0)))
    base, cand = import_trace(tmp_path / "base.json"), import_trace(tmp_path / "cand.json")
    cls = classify_run(cand, baseline=base)
    assert cls.winner is Mechanism.PRECISION and cls.ranked_by == "attribution", cls.attribution
    assert cls.attribution is not None
    part = max((p for p in cls.attribution.parts if p.mechanism is Mechanism.PRECISION), key=lambda p: p.ms)
    assert part.part == layer_name(0) and part.ms > 0.5 * cls.attribution.delta_ms
    assert cls.fix is not None and layer_name(0) in fix_words(cls.fix)
