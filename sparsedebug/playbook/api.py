"""The library entry point, for notebooks and scripts: one function per playbook step, one for the walk.

Each function returns typed records (the same pydantic models the CLI writes as JSON), never text::

    from sparsedebug.playbook import api as sd

    pair = sd.load("base.json.gz", "cand.json.gz")   # replay, import or load both inputs; refused when not comparable
    found = sd.locate(pair)                          # step 2: BisectResult (first divergent stage, findings)
    why = sd.classify(pair)                          # step 3: Classification (mechanism, attribution, fix)
    review = sd.gate(pair)                           # the gate's review document (Memo), its verdict in review.gate
    walked = sd.walk("bundle", baseline="base.json.gz", candidate="cand.json.gz")  # all five steps, one bundle
    walked.review.decision.code                      # the bundle's review document

The page ``docs/journeys/notebook.md`` runs every function on the H200 trace pair (tested with the other docs blocks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparsedebug.records.bundle import FixOutcome
    from sparsedebug.records.classification import Classification, Fix
    from sparsedebug.records.comparability import Comparability, Dimension
    from sparsedebug.records.findings import BisectResult
    from sparsedebug.records.fingerprint import Fingerprint
    from sparsedebug.records.gate import GatePolicy
    from sparsedebug.records.memo import Memo
    from sparsedebug.records.reduce import ReduceResult, TraceRepro
    from sparsedebug.records.run import RunRecord
    from sparsedebug.sources.bundle import LoadedBundle


@dataclass(frozen=True)
class Pair:
    """A baseline and a candidate run, checked comparable, and the inputs they came from."""

    baseline: RunRecord
    candidate: RunRecord
    comparability: Comparability
    paths: tuple[Path, Path]


@dataclass(frozen=True)
class Reproduced:
    """Step 4: the reproducer (a ddmin reduction of two workloads, or the blamed layer cut from two traces) and the fix
    classify proposed; each None where the inputs allow none."""

    reduction: ReduceResult | None
    trace_repro: TraceRepro | None
    fix: Fix | None


@dataclass(frozen=True)
class Walked:
    """The walk: the bundle as written, and its review document."""

    bundle: LoadedBundle
    review: Memo


def load(baseline: str | Path, candidate: str | Path, *, repeats: int | None = None,
         allow_different: Sequence[Dimension] = ()) -> Pair:
    """Replay (workload YAML), import (PyTorch trace) or load (run record) both inputs, and check they are
    comparable (same model by layer shapes, device, backend family, phase, tokens, dtype) unless
    ``allow_different`` names what may differ; a ``UserError`` names what does not match."""
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.sources.detect import load_pair

    paths = (Path(baseline), Path(candidate))
    base, cand = load_pair(paths[0], paths[1], repeats=repeats)
    pair = require_comparable(base, cand, tuple(allow_different))
    return Pair(baseline=pair.base, candidate=pair.cand, comparability=pair.check, paths=paths)


def freeze(workload: str | Path | None = None, *, calibrate: bool = False) -> Fingerprint:
    """Step 1: the fingerprint of this machine and environment (and of ``workload``'s file and seed when given);
    ``calibrate`` measures this machine's GEMM and copy rates too."""
    from sparsedebug.freeze.fingerprint import collect
    from sparsedebug.sources.detect import load_workload

    path = Path(workload) if workload is not None else None
    seed = load_workload(path).seed if path is not None else None
    return collect(seed=seed, workload=path, calibrate_machine=calibrate)


def locate(pair: Pair) -> BisectResult:
    """Step 2: the first stage (graph, lower, kernel, schedule, outcome) where the candidate diverges, and why."""
    from sparsedebug.locate.walk import bisect_runs

    return bisect_runs(pair.baseline, pair.candidate).model_copy(update={"comparability": pair.comparability})


def classify(pair: Pair, *, fingerprint: Fingerprint | None = None) -> Classification:
    """Step 3: the mechanism (compute, memory, scheduling, precision, thermal) that carries the change, and one fix."""
    from sparsedebug.classify.score import classify_run

    return classify_run(pair.candidate, baseline=pair.baseline, fingerprint=fingerprint)


def reproduce(pair: Pair, bisect: BisectResult, classification: Classification) -> Reproduced:
    """Step 4: two workloads reduced (ddmin) to the smallest reproducer of their first divergence, or the layer the
    bisect blames cut from two traces; with the one bounded fix ``classification`` proposes."""
    from sparsedebug.reduce.from_trace import trace_repro
    from sparsedebug.reduce.reduce import reduce_workloads
    from sparsedebug.sources.detect import detect_kind, load_workload, replayed_together

    reduction = None
    repro = None
    if all(replayed_together(detect_kind(p)) for p in pair.paths):
        good, bad = (load_workload(p) for p in pair.paths)
        reduction = reduce_workloads(good, bad, good_dir=pair.paths[0].parent, bad_dir=pair.paths[1].parent).record
    else:
        repro = trace_repro(pair.baseline, pair.candidate, bisect, classification)
    return Reproduced(reduction=reduction, trace_repro=repro, fix=classification.fix)


def rerun(pair: Pair, fixed: str | Path | RunRecord, classification: Classification) -> FixOutcome:
    """Step 5's re-run: the fixed run (a path to replay, import or load, or a run record) against the candidate,
    each metric's movement, whether it is significant, and whether the fix's target metric moved."""
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.records.bundle import FixOutcome
    from sparsedebug.records.notes import note
    from sparsedebug.records.run import RunRecord
    from sparsedebug.signoff.movement import measure_movement
    from sparsedebug.sources.detect import load_run

    run = fixed if isinstance(fixed, RunRecord) else load_run(Path(fixed))
    run = require_comparable(pair.candidate, run, ("launch",)).cand
    moves, verdict, moved, target = measure_movement(pair.baseline, pair.candidate, run, classification.fix)
    how = note("playbook.fixed_given", path=run.name if isinstance(fixed, RunRecord) else str(fixed), kind="run record")
    return FixOutcome(proposed=classification.fix, applied=True, how=how, fixed_source="given", movements=moves,
                      significance=verdict, moved=moved, target=target)


def gate(pair: Pair, policy: str | Path | GatePolicy | None = None) -> Memo:
    """The CI gate on the pair under ``policy`` (a YAML path, a policy, or None for the default): its review
    document, whose ``gate`` is the verdict (``passed``, every check with its figures) that ``sparsedebug gate``
    prints, writes as JUnit and as a step summary."""
    from sparsedebug.records.gate import GatePolicy
    from sparsedebug.signoff.gate import evaluate, load_policy
    from sparsedebug.signoff.memo import gate_memo

    pol = policy if isinstance(policy, GatePolicy) else load_policy(Path(policy) if policy is not None else None)
    result = evaluate(pair.baseline, pair.candidate, pol).model_copy(update={"comparability": pair.comparability})
    return gate_memo(result, pair.baseline, pair.candidate)


def walk(out_dir: str | Path, *, baseline: str | Path | None = None, candidate: str | Path | None = None,
         fixed: str | Path | None = None, repeats: int | None = None, force: bool = False,
         allow_different: Sequence[Dimension] = ()) -> Walked:
    """All five steps (``sparsedebug playbook run``) into the bundle ``out_dir``: the bundle as written and its
    review document (the decision, its reasons, the memo's sections, the gate and the report's sections)."""
    from sparsedebug.playbook.run import run_playbook
    from sparsedebug.signoff.memo import require_current

    bundle = run_playbook(
        Path(out_dir), baseline=Path(baseline) if baseline is not None else None,
        candidate=Path(candidate) if candidate is not None else None, fixed=Path(fixed) if fixed is not None else None,
        repeats=repeats, force=force, allow_different=allow_different,
    )
    require_current(bundle)
    assert bundle.memo is not None
    return Walked(bundle=bundle, review=bundle.memo)
