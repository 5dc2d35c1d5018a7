"""Step 5's fixed run, checked comparable with the candidate; when both are workloads, the candidate its latency
verdict compares it with: locate's, unless the machine drifted (then one replayed again beside it).

The fixed workload is replayed with its dense reference interleaved, as every replay is, sampled until its
ratio to locate's candidate settles. Locate's candidate timed the same dense forward in its own session; when
the two references are the same computation and the judgement rule (the one the fix's verdict uses) finds no
change between their samples, the machine ran identical work alike in both sessions and the verdict compares
the fixed run with the candidate locate measured (unpaired). Otherwise the candidate is replayed again beside the
fixed workload in one interleaved session (``replay_pair``) and the verdict compares those two round by round,
as before. The fix record says which (``FixOutcome.pairing``, :func:`pairing_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sparsedebug.playbook.energy import Meter
from sparsedebug.records.bundle import CandidatePairing
from sparsedebug.records.comparability import Comparability, Dimension
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import JudgementRule
from sparsedebug.sources.detect import InputFile

# The rule that judges whether the machine drifted between locate's session and the fixed run (the one rule of
# ``core.judgement``, at its defaults: the rule the fix's own verdict uses).
DEFAULT_RULE = JudgementRule()


@dataclass(frozen=True)
class FixedInputs:
    """Where the fixed run comes from, and the candidate it is compared with."""

    candidate: RunRecord
    # The candidate and the fixed input as read once by the walk (the fixed workload applied here: as written).
    candidate_file: InputFile
    fixed_file: InputFile
    # The fix was applied to a copy of the candidate workload here (its file is cited by its name in the bundle).
    applied: bool


def fixed_run(
    inputs: FixedInputs,
    *,
    repeats: int | None,
    allow: Sequence[Dimension],
    load_fixed: Callable[[], RunRecord],
    meter: Meter,
    say: Callable[[Note], None],
    compared: Callable[[Comparability], None],
    progress: Callable[[str, int, int], None],
    rule: JudgementRule = DEFAULT_RULE,
) -> tuple[RunRecord, RunRecord | None, CandidatePairing | None]:
    """The fixed run, checked comparable with the candidate; the candidate replayed again beside it when the machine
    drifted; and which candidate the verdict compares it with.

    A fixed workload (applied here, or given) with a candidate workload is replayed alone,
    sampled until its ratio to ``inputs.candidate`` (locate's) settles. When its dense
    reference shows the machine did not drift since locate (:func:`pairing_of` by
    ``rule``), that is the fixed run and the verdict compares it with locate's candidate
    (no candidate returned). Otherwise the candidate and the fixed workload are replayed
    again in one interleaved session (``replay_pair``), so the fix's movement is judged
    round by round; that session's fixed run is the fixed run and its candidate is
    returned for the verdict only (the bundle's candidate stays the one bisect and
    classify saw). Any other fixed input is loaded by ``load_fixed`` (no pairing). A
    fixed run that is not comparable with the candidate (another model, device, phase,
    tokens or dtype) is refused as the baseline/candidate pair would be, unless
    ``allow`` names the difference.
    """
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.sources.detect import load_inputs, replayed_together
    from sparsedebug.sources.replay.replay import replay

    session_cand: RunRecord | None = None
    pairing: CandidatePairing | None = None
    if replayed_together(inputs.candidate_file.kind) and replayed_together(inputs.fixed_file.kind):
        fixed_file = inputs.fixed_file
        say(note("playbook.replay_fixed", file=None if inputs.applied else fixed_file.path.name))
        run = meter.run("fixed", lambda: replay(
            fixed_file.workload, repeats=repeats, progress=progress, source_path=fixed_file.path, source_digest=fixed_file.digest,
            settle_against=inputs.candidate.outcome.latency_samples_ms, rule=rule,
        ))  # fmt: skip
        pairing = pairing_of(inputs.candidate, run, rule)
        if pairing.candidate == "fresh":
            say(note("playbook.fixed_drifted", drift=pairing.drift, judgement=pairing.judgement))
            say(note("playbook.replay_fixed_pair", file=None if inputs.applied else fixed_file.path.name))
            session_cand, run = meter.run_session(  # one RAPL reading (where readable) for the whole session
                ("fixed",), "fixed_candidate",
                lambda: load_inputs(inputs.candidate_file, fixed_file, repeats=repeats, progress=progress),
            )
    else:
        run = load_fixed()
    if inputs.applied:
        run = relabel(run, inputs.fixed_file.path.name)
    pair = require_comparable(inputs.candidate, run, tuple(allow))
    compared(pair.check)
    return pair.cand, session_cand, pairing


def pairing_of(candidate: RunRecord, fixed: RunRecord, rule: JudgementRule = DEFAULT_RULE) -> CandidatePairing:
    """Whether the fixed run's verdict may compare it with ``candidate`` as measured (``locate``) or needs a candidate
    replayed again beside it (``fresh``).

    ``locate`` when both runs timed the same dense forward as their reference (same layers, shapes, dtypes and
    threads: ``locate.reference.machine_drift``), the candidate's latencies are its replay's own (not
    ``--latency``'s untraced ones), and ``rule`` judges the fixed run's reference samples against the
    candidate's as no change (enough samples, and no significant, persistent shift beyond its factor): the
    machine ran identical work alike in both sessions. Pure: reads the two records only.
    """
    from sparsedebug.core.judgement import judge, judgement_of
    from sparsedebug.locate.reference import machine_drift

    before, after = candidate.outcome.dense_baseline_samples_ms or [], fixed.outcome.dense_baseline_samples_ms or []
    own = candidate.outcome.latency_timing != "untraced"
    drift = machine_drift(candidate, fixed).forward_factor if own else None
    judged = judgement_of(judge(before, after, rule)) if drift is not None else None
    return CandidatePairing(
        candidate="locate" if judged == "no_change" else "fresh", drift=drift, judgement=judged, alpha=rule.alpha, factor=rule.factor
    )


def relabel(run: RunRecord, name: str) -> RunRecord:
    """Cite the fixed workload by its name inside the bundle rather than the temporary path."""
    if run.workload is None or run.workload.file is None:
        return run
    ref = run.workload.model_copy(update={"file": run.workload.file.model_copy(update={"path": name})})
    return run.model_copy(update={"workload": ref})
