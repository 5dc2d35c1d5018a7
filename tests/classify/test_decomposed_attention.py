"""Attention moved from a fused SDPA kernel to the decomposed math sequence because its query arrived
non-contiguous: generated pairs (tests.support.tracegen), annotated, stripped, with layout ops inserted.

bisect stages it at ``lower``; the moved attention layers carry the change, and their mechanism
(precision: the math backend runs fp32 SIMT GEMMs) wins by its attributed share; the fix names the
layout; ``fallbacks``, the gate and the memo name the same layers. A fused-to-fused move (cuDNN to
memory-efficient) on the same layout change is compute, with the same fix.
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
from sparsedebug.render.words.locate_text import stage_text, verdict_text
from sparsedebug.render.words.mechanisms_records import fix_words
from sparsedebug.signoff.gate import evaluate
from sparsedebug.sources.importers.trace.importer import import_trace
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.tracegen import TraceSpec, generate, insert_layout_ops, strip, write_doc

SPEC = TraceSpec(layers=6, iterations=6, backward=False, optimizer=False, nccl=False, memcpy=False, streams=1, jitter=0.02)


def _pair(tmp: Path, base_backend: str, cand_backend: str, variant: str, scale: float = 1.0) -> tuple[RunRecord, RunRecord]:
    specs = {
        "base": TraceSpec(**{**SPEC.__dict__, "attention": base_backend}),
        "cand": TraceSpec(**{**SPEC.__dict__, "attention": cand_backend, "attention_noncontig": True, "attention_scale": scale, "seed": 1}),
    }
    for name, spec in specs.items():
        doc, _ = generate(spec)
        if "layout" in variant and name == "cand":
            doc = insert_layout_ops(doc)
        write_doc(tmp / f"{name}.json", strip(doc, "no_annotations") if "stripped" in variant else doc)
    return import_trace(tmp / "base.json"), import_trace(tmp / "cand.json")


def _attention_layers(run: RunRecord) -> set[str]:
    return {g.name for g in run.graph.layers if g.op.value == "attention"}


@pytest.mark.parametrize("variant", ["annotated", "stripped", "stripped+layout"])
@pytest.mark.parametrize("fused", ["cudnn", "flash"])
def test_fused_to_decomposed_attention_is_lower_and_its_mechanism_wins_with_the_layout_fix(
    tmp_path: Path, fused: str, variant: str
) -> None:
    base, cand = _pair(tmp_path, fused, "math", variant)
    moved = _attention_layers(cand)
    assert len(moved) == 2
    bis = bisect_runs(base, cand)
    assert bis.first_stage == "lower", verdict_text(bis)
    assert bis.stage("graph").status in ("same", "not_comparable"), stage_text(bis.stage("graph"))
    assert {f.layer for f in bis.stage("lower").layers if f.kind == "path_changed"} == moved
    assert f"{fused} -> math" in verdict_text(bis) and "not contiguous" in verdict_text(bis)

    cls = classify_run(cand, baseline=base)
    assert cls.ranked_by == "attribution" and cls.winner is Mechanism.PRECISION, cls.attribution
    assert cls.scores[0].mechanism is Mechanism.PRECISION
    assert cls.scores[0].attributed_share is not None and cls.scores[0].attributed_share > 0.9
    assert cls.attribution is not None
    assert {p.part for p in cls.attribution.parts if p.mechanism is Mechanism.PRECISION} == moved
    assert cls.fix is not None and cls.fix.layer in moved and "contiguous" in fix_words(cls.fix)

    report = compare_paths(base, cand)
    assert {c.layer for c in report.unintended} == moved
    assert all(c.precision is not None and any(k.code == "non_contiguous" for k in c.cause) for c in report.unintended)
    gate = next(c for c in evaluate(base, cand).checks if c.id == "precision_drift")
    changed = next(n for n in gate.basis if n.code == "gate.precision_changed")
    assert gate.status == "fail" and all(any(str(c).startswith(f"{layer} ") for c in changed.values["changes"]) for layer in moved)  # type: ignore[union-attr]

    memo = render_memo_detail(make_bundle(base, cand), load_playbook())
    share = cls.attribution.share_of(Mechanism.PRECISION)
    assert share is not None
    assert f"mechanism precision carries {share.ms:.3f} ms of the {cls.attribution.delta_ms:+.3f} ms change" in memo
    assert "contiguous" in memo and f"{fused} -> math" in memo
    assert "fails the precision check" in memo


@pytest.mark.parametrize("variant", ["annotated", "stripped"])
def test_fused_to_fused_on_a_layout_change_is_compute_with_the_same_fix(tmp_path: Path, variant: str) -> None:
    base, cand = _pair(tmp_path, "cudnn", "efficient", variant, scale=2.0)
    moved = _attention_layers(cand)
    bis = bisect_runs(base, cand)
    assert bis.first_stage == "lower", verdict_text(bis)
    assert "cudnn -> efficient" in verdict_text(bis)
    cls = classify_run(cand, baseline=base)
    assert cls.ranked_by == "attribution" and cls.winner is Mechanism.COMPUTE, cls.attribution
    assert cls.attribution is not None
    assert {p.part for p in cls.attribution.parts if p.mechanism is Mechanism.COMPUTE} == moved
    assert all(p.mechanism is not Mechanism.PRECISION for p in cls.attribution.parts)
    assert cls.fix is not None and cls.fix.layer in moved and "contiguous" in fix_words(cls.fix)
    report = compare_paths(base, cand)
    assert {c.layer for c in report.unintended} == moved and all(c.precision is None for c in report.unintended)
    gate = next(c for c in evaluate(base, cand).checks if c.id == "precision_drift")
    assert gate.status != "fail", gate.detail
