"""One list of precision changes: the gate's precision_drift, classify's precision.dtype_change, the attribution
and ``fallbacks`` name the same layers, also when the trace carries no shapes or dtypes (the kernels only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.classify.score import classify_run
from sparsedebug.core.patterns import precision_changes
from sparsedebug.locate.paths import compare_paths
from sparsedebug.records.classification import Mechanism
from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.gate import detail_words
from sparsedebug.signoff.gate import evaluate
from sparsedebug.sources.importers.trace.importer import import_trace
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.tracegen import TraceSpec, generate, layer_name, move_to_fp32, strip, write_doc

SPEC = TraceSpec(layers=6, iterations=6, backward=False, optimizer=False, nccl=False, memcpy=False, streams=1, jitter=0.0)


def _pair(tmp: Path, variation: str | None) -> tuple[RunRecord, RunRecord]:
    base, _ = generate(SPEC)
    cand, _ = generate(TraceSpec(**{**SPEC.__dict__, "slow_layers": frozenset({0}), "slow_factor": 4.0}))
    cand = move_to_fp32(cand, layer_name(0))
    for name, doc in (("base", base), ("cand", cand)):
        write_doc(tmp / f"{name}.json", strip(doc, variation) if variation else doc)
    return import_trace(tmp / "base.json"), import_trace(tmp / "cand.json")


@pytest.mark.parametrize("variation", [None, "no_shapes", "no_annotations"])
def test_a_gemm_moved_to_fp32_fails_the_gate_on_the_layers_classify_names(tmp_path: Path, variation: str | None) -> None:
    base, cand = _pair(tmp_path, variation)
    changes = precision_changes(base, cand)
    assert changes and all(c.after == "fp32" for c in changes)
    moved = {c.layer for c in changes}
    cls = classify_run(cand, baseline=base)
    rule = next(e for e in cls.evidence if e.rule == "precision.dtype_change")
    assert rule.fired and rule.value == len(moved)
    assert all(layer in evidence_words(rule) for layer in moved)
    gate = next(c for c in evaluate(base, cand).checks if c.id == "precision_drift")
    assert gate.status == "fail", detail_words(gate)  # never "skipped: no evidence" while classify fires
    changed = next(n for n in gate.basis if n.code == "gate.precision_changed")
    assert all(any(str(c).startswith(f"{layer} ") for c in changed.values["changes"]) for layer in moved)  # type: ignore[union-attr]
    report = compare_paths(base, cand)
    # fallbacks lists path changes; each that changed precision says so (a gelu whose inputs turned fp32
    # on its unchanged elementwise kernel is a precision change, not a path change)
    assert {c.layer for c in report.changed if c.precision is not None} == moved & {c.layer for c in report.changed} != set()
    assert cls.winner is Mechanism.PRECISION and cls.attribution is not None
    assert {p.part for p in cls.attribution.parts if p.mechanism is Mechanism.PRECISION} <= moved
    memo = render_memo_detail(make_bundle(base, cand), load_playbook())
    assert "fails the precision check" in memo and "unassessed" not in memo.split("correctness:", 1)[1].split("\n", 1)[0]


def test_an_unchanged_pair_has_no_precision_change(tmp_path: Path) -> None:
    base, _ = _pair(tmp_path, None)
    assert precision_changes(base, base) == []
    gate = next(c for c in evaluate(base, base).checks if c.id == "precision_drift")
    assert gate.status == "skipped"
