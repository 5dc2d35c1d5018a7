"""The library entry point: each step's function returns the records its CLI command writes, and the walk returns
the bundle with its review document (the one memo.json holds)."""

from __future__ import annotations

from pathlib import Path

from sparsedebug.core.io import save_record
from sparsedebug.playbook import api as sd
from sparsedebug.records.memo import Memo
from sparsedebug.signoff.gate import evaluate
from tests.support.synth import dense_run, sparse_run


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0), base)
    save_record(sparse_run(6.5, fallback=True), cand)
    return base, cand


def test_steps_return_the_records_of_their_commands(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    pair = sd.load(base, cand)
    assert (pair.baseline.name, pair.candidate.name) == ("dense", "sparse_fallback")
    found = sd.locate(pair)
    assert found.first_stage == "lower" and found.comparability == pair.comparability
    why = sd.classify(pair)
    assert why.fix is not None
    assert sd.reproduce(pair, found, why).fix == why.fix
    review = sd.gate(pair)
    assert review.verdict() == evaluate(pair.baseline, pair.candidate).model_copy(update={"comparability": pair.comparability})
    assert not review.verdict().passed


def test_rerun_measures_the_fixed_run_against_the_candidate(tmp_path: Path) -> None:
    pair = sd.load(*_pair(tmp_path))
    outcome = sd.rerun(pair, sparse_run(4.0), sd.classify(pair))
    p50 = next(m for m in outcome.movements if m.metric == "latency p50")
    assert p50.after < p50.before and outcome.applied


def test_walk_returns_the_bundle_and_its_review_document(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    walked = sd.walk(tmp_path / "bundle", baseline=base, candidate=cand)
    stored = Memo.model_validate_json((tmp_path / "bundle" / "memo.json").read_text())
    assert walked.review == stored == walked.bundle.memo
    decision = walked.bundle.decision
    assert decision is not None and walked.review.report is not None and walked.review.decision.code == decision.decision
