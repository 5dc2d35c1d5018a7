"""Build in-memory bundles from synthetic runs, with the real bisect, classify and movement code."""

from __future__ import annotations

from pathlib import Path

from sparsedebug.classify.score import classify_run
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.bundle import Bundle, BundleInput, FixOutcome
from sparsedebug.records.notes import note
from sparsedebug.records.run import RunRecord
from sparsedebug.signoff.decide import with_decision
from sparsedebug.signoff.memo import with_review
from sparsedebug.signoff.movement import measure_movement
from sparsedebug.sources.bundle import FILES, LoadedBundle
from sparsedebug.sources.playbook import load_playbook


def make_bundle(base: RunRecord, cand: RunRecord, fixed: RunRecord | None = None, root: Path = Path("bundle")) -> LoadedBundle:
    """A bundle as `playbook run` would hold it in memory (nothing written)."""
    cls = classify_run(cand, baseline=base)
    outcome = None
    if fixed is not None:
        moves, verdict, moved, target = measure_movement(base, cand, fixed, cls.fix)
        outcome = FixOutcome(
            proposed=cls.fix, applied=True, how=note("playbook.fixed_given", path="fixed.json", kind="run record"), fixed_source="given",
            movements=moves, significance=verdict, moved=moved, target=target,
        )
    files = {role: FILES[role] for role in ("baseline", "candidate", "bisect", "classification", "memo", "report")}
    inputs = [
        BundleInput(role="baseline", kind="run", label="base.json"),
        BundleInput(role="candidate", kind="run", label="cand.json"),
    ]
    if fixed is not None:
        inputs.append(BundleInput(role="fixed", kind="run", label="fixed.json"))
        files["fixed"] = FILES["fixed"]
    manifest = Bundle(created_at="2026-01-01T00:00:00+00:00", playbook="structured-sparsity", inputs=inputs, files=files)
    bundle = LoadedBundle(
        root=root, manifest=manifest, fingerprint=None, baseline=base, candidate=cand, fixed=fixed,
        bisect=bisect_runs(base, cand), classification=cls, reduce=None, fix=outcome,
    )
    return with_review(with_decision(bundle, load_playbook()), load_playbook())


def reviewed(bundle: LoadedBundle) -> LoadedBundle:
    """A bundle whose records a test changed, decided and reviewed again (as `memo` does on edited records)."""
    return with_review(with_decision(bundle, load_playbook()), load_playbook())
