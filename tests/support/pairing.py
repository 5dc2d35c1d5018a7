"""Plant the machine drift step 5 sees between locate's session and the fixed run (``playbook.fixed.pairing_of``).

The walk's own decision runs on its own records, but with the fixed run's dense reference replaced by the
candidate's own samples (``drifted=False``: identical work timed identically, no change) or by them slowed 1.5x
(``drifted=True``: a shift the rule counts), so a test takes either path whatever the machine does meanwhile.
"""

from __future__ import annotations

import pytest

from sparsedebug.playbook import fixed
from sparsedebug.records.bundle import CandidatePairing
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import JudgementRule

DRIFT = 1.5


def planted_reference(candidate: RunRecord, run: RunRecord, drifted: bool) -> RunRecord:
    """``run`` with its dense reference samples the candidate's own, slowed by :data:`DRIFT` when ``drifted``."""
    reference = candidate.outcome.dense_baseline_samples_ms or []
    dense = [value * DRIFT for value in reference] if drifted else list(reference)
    return run.model_copy(update={"outcome": run.outcome.model_copy(update={"dense_baseline_samples_ms": dense})})


def plant_drift(monkeypatch: pytest.MonkeyPatch, drifted: bool) -> list[CandidatePairing]:
    """Make step 5 decide on a planted dense reference; the pairings it decided, in order."""
    real = fixed.pairing_of
    decided: list[CandidatePairing] = []

    def planted(candidate: RunRecord, run: RunRecord, rule: JudgementRule = fixed.DEFAULT_RULE) -> CandidatePairing:
        decided.append(real(candidate, planted_reference(candidate, run, drifted), rule))
        return decided[-1]

    monkeypatch.setattr(fixed, "pairing_of", planted)
    return decided
