"""The bundle: one directory holding everything a playbook walk produced, and its manifest.

Layout (file names fixed so ``sparsedebug memo DIR`` can re-render from them)::

    bundle.json             manifest: inputs with digests, steps walked, files present
    fingerprint.json        step 1: the environment the walk ran in
    baseline.run.json       step 2: both sides as five-stage run records
    candidate.run.json
    bisect.json             step 2: first persistent divergent stage
    classification.json     step 3: the five mechanisms scored, the fix proposed
    reduce.json             step 4: ddmin result (when both sides are workloads)
    reproducer.yaml         step 4: the focused reproducer workload, and its baseline
    reproducer.base.yaml            (`sparsedebug bisect reproducer.base.yaml reproducer.yaml`)
    trace_repro.json        step 4 on a trace pair: the blamed layer as the traces recorded it
    repro.py                        and the standalone PyTorch script that rebuilds and times it
    fix.json                step 4: the fix, how it was applied, expected vs measured movement
    fixed.workload.yaml     step 4: the candidate with the fix applied (when it maps onto a workload)
    fixed.run.json          step 5: the re-run of the fixed candidate (or --fixed as given)
    energy.json             step 5: energy per side from each run's own window (or why none), estimates apart
    decision.json           step 5: ship, bounded rollout, rollback, escalate or no change, with reasons and the gate
    memo.json               step 5: the memo model (claims with their figures and provenance) every output renders
    ranks.json              run sets only: every rank compared (straggler, confined or uniform change)
    memo.md  report.md      the review memo and the sparsity deployment report (rendered from the records)
    report.html             both in one self-contained page, with the figures (inline SVG, no script, nothing fetched)

``load_bundle`` reads the manifest and every record it lists back into models; ``playbook.bundle``
builds and swaps the directory.
"""

from __future__ import annotations

from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_record
from sparsedebug.records.bundle import Bundle, FixOutcome
from sparsedebug.records.classification import Classification
from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.energy import EnergyReport
from sparsedebug.records.findings import BisectResult
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.loaded import LoadedBundle as LoadedBundle
from sparsedebug.records.memo import Memo
from sparsedebug.records.ranks import RankComparison
from sparsedebug.records.reduce import ReduceResult, TraceRepro
from sparsedebug.records.run import RunRecord

MANIFEST = "bundle.json"

# Role -> file name inside the bundle directory.
FILES: dict[str, str] = {
    "fingerprint": "fingerprint.json",
    "baseline": "baseline.run.json",
    "candidate": "candidate.run.json",
    "fixed": "fixed.run.json",
    "bisect": "bisect.json",
    "classification": "classification.json",
    "reduce": "reduce.json",
    "reproducer": "reproducer.yaml",
    "reproducer_base": "reproducer.base.yaml",
    "trace_repro": "trace_repro.json",
    "repro_script": "repro.py",
    "fix": "fix.json",
    "fixed_workload": "fixed.workload.yaml",
    "decision": "decision.json",
    "memo_model": "memo.json",
    "energy": "energy.json",
    "ranks": "ranks.json",
    "memo": "memo.md",
    "report": "report.md",
    "html": "report.html",
}


def _optional(root: Path, manifest: Bundle, role: str) -> Path | None:
    name = manifest.files.get(role)
    if name is None:
        return None
    path = root / name
    if not path.is_file():
        raise UserError(f"{root / MANIFEST}: files.{role}: {name} is listed but missing from the bundle")
    return path


def load_bundle(root: Path) -> LoadedBundle:
    """Read a bundle directory back; a missing or broken file is a one-line ``UserError``."""
    if not root.exists():
        raise UserError(f"{root}: bundle directory not found")
    if not root.is_dir():
        raise UserError(f"{root}: not a directory; pass the bundle directory written by `playbook run`")
    if not (root / MANIFEST).is_file():
        raise UserError(f"{root}: not a bundle directory (no {MANIFEST}); pass a directory written by `playbook run`")
    manifest = load_record(root / MANIFEST, Bundle)
    for role in ("baseline", "candidate"):
        if role not in manifest.files:
            raise UserError(f"{root / MANIFEST}: files.{role}: missing; the bundle has no {role} run")

    def run(role: str) -> RunRecord | None:
        path = _optional(root, manifest, role)
        return load_record(path, RunRecord) if path is not None else None

    baseline, candidate = run("baseline"), run("candidate")
    assert baseline is not None and candidate is not None
    fp_path = _optional(root, manifest, "fingerprint")
    bisect_path = _optional(root, manifest, "bisect")
    cls_path = _optional(root, manifest, "classification")
    reduce_path = _optional(root, manifest, "reduce")
    trace_repro_path = _optional(root, manifest, "trace_repro")
    _optional(root, manifest, "repro_script")
    fix_path = _optional(root, manifest, "fix")
    decision_path = _optional(root, manifest, "decision")
    ranks_path = _optional(root, manifest, "ranks")
    energy_path = _optional(root, manifest, "energy")
    memo_path = _optional(root, manifest, "memo_model")
    return LoadedBundle(
        root=root,
        manifest=manifest,
        fingerprint=load_record(fp_path, Fingerprint) if fp_path is not None else None,
        baseline=baseline,
        candidate=candidate,
        fixed=run("fixed"),
        bisect=load_record(bisect_path, BisectResult) if bisect_path is not None else None,
        classification=load_record(cls_path, Classification) if cls_path is not None else None,
        reduce=load_record(reduce_path, ReduceResult) if reduce_path is not None else None,
        trace_repro=load_record(trace_repro_path, TraceRepro) if trace_repro_path is not None else None,
        fix=load_record(fix_path, FixOutcome) if fix_path is not None else None,
        decision=load_record(decision_path, DecisionOutcome) if decision_path is not None else None,
        ranks=load_record(ranks_path, RankComparison) if ranks_path is not None else None,
        energy=load_record(energy_path, EnergyReport) if energy_path is not None else None,
        memo=load_record(memo_path, Memo) if memo_path is not None else None,
    )
