"""Step 5's choice of the candidate the fixed run is judged against (issue 57): locate's, unless the machine drifted.

The decision (``playbook.fixed.pairing_of``) on planted records: one replay of a planted workload, whose dense
reference is copied, slowed or made another computation for the "fixed run"."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.playbook.fixed import pairing_of
from sparsedebug.records.run import RunRecord
from sparsedebug.sources.detect import load_run
from tests.support.pairing import planted_reference

PLANTED = Path(__file__).resolve().parents[2] / "fixtures" / "workloads" / "planted"


@pytest.fixture(scope="module")
def candidate() -> RunRecord:
    return load_run(PLANTED / "scheduling_per_call.yaml", repeats=6)


def test_identical_work_timed_alike_reuses_locates_candidate(candidate: RunRecord) -> None:
    pairing = pairing_of(candidate, planted_reference(candidate, candidate, drifted=False))
    assert (pairing.candidate, pairing.judgement, pairing.drift) == ("locate", "no_change", 1.0)
    assert (pairing.alpha, pairing.factor) == (0.05, 1.05)


def test_a_machine_that_slowed_identical_work_pairs_a_fresh_candidate(candidate: RunRecord) -> None:
    pairing = pairing_of(candidate, planted_reference(candidate, candidate, drifted=True))
    assert (pairing.candidate, pairing.judgement) == ("fresh", "loss")
    assert pairing.drift == pytest.approx(1.5)
    faster = candidate.model_copy(update={"outcome": candidate.outcome.model_copy(update={
        "dense_baseline_samples_ms": [v / 1.5 for v in candidate.outcome.dense_baseline_samples_ms or []]})})
    assert pairing_of(candidate, faster).judgement == "win" and pairing_of(candidate, faster).candidate == "fresh"


def test_without_a_shared_reference_or_enough_samples_it_cannot_tell_and_pairs_fresh(candidate: RunRecord) -> None:
    calm = planted_reference(candidate, candidate, drifted=False)
    other_threads = calm.model_copy(update={"schedule": calm.schedule.model_copy(update={"threads": (calm.schedule.threads or 1) + 1})})
    assert pairing_of(candidate, other_threads).model_dump() == {
        "candidate": "fresh", "drift": None, "judgement": None, "alpha": 0.05, "factor": 1.05}
    untraced = candidate.model_copy(update={"outcome": candidate.outcome.model_copy(update={"latency_timing": "untraced"})})
    assert pairing_of(untraced, calm).candidate == "fresh" and pairing_of(untraced, calm).drift is None
    few = calm.model_copy(update={"outcome": calm.outcome.model_copy(update={
        "dense_baseline_samples_ms": (calm.outcome.dense_baseline_samples_ms or [])[:3]})})
    assert (pairing_of(candidate, few).candidate, pairing_of(candidate, few).judgement) == ("fresh", "inconclusive")
