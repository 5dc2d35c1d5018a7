"""Step 5's fixed run: replayed beside the candidate when both are workloads, and checked comparable with it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sparsedebug.playbook.energy import Meter
from sparsedebug.records.comparability import Comparability, Dimension
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import RunRecord
from sparsedebug.sources.detect import InputFile


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
) -> tuple[RunRecord, RunRecord | None]:
    """The fixed run, checked comparable with the candidate, and the candidate replayed again beside it when both are workloads.

    A fixed workload (applied here, or given) and a candidate workload are replayed in one
    interleaved session (``replay_pair``), so the fix's movement is judged round by round;
    the candidate of that session is returned for the verdict only (the bundle's
    candidate stays the one bisect and classify saw). Otherwise ``load_fixed`` loads it.
    A fixed run that is not comparable with the candidate (another model, device, phase,
    tokens or dtype) is refused as the baseline/candidate pair would be, unless
    ``allow`` names the difference.
    """
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.sources.detect import load_inputs, replayed_together

    session_cand: RunRecord | None = None
    if replayed_together(inputs.candidate_file.kind) and replayed_together(inputs.fixed_file.kind):
        say(note("playbook.replay_fixed_pair", file=None if inputs.applied else inputs.fixed_file.path.name))
        session_cand, run = meter.run_session(  # one RAPL reading (where readable) for the whole session
            ("fixed",), "fixed_candidate",
            lambda: load_inputs(inputs.candidate_file, inputs.fixed_file, repeats=repeats, progress=progress),
        )
    else:
        run = load_fixed()
    if inputs.applied:
        run = relabel(run, inputs.fixed_file.path.name)
    pair = require_comparable(inputs.candidate, run, tuple(allow))
    compared(pair.check)
    return pair.cand, session_cand


def relabel(run: RunRecord, name: str) -> RunRecord:
    """Cite the fixed workload by its name inside the bundle rather than the temporary path."""
    if run.workload is None or run.workload.file is None:
        return run
    ref = run.workload.model_copy(update={"file": run.workload.file.model_copy(update={"path": name})})
    return run.model_copy(update={"workload": ref})
