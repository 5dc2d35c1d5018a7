"""The walk (``sparsedebug playbook run``): one function per playbook step, writing one bundle.

:func:`run_playbook` reads each input once, then calls freeze, locate, classify, reproduce
and re-run in order; each step returns one immutable result that the later steps take
(``_Frozen``, ``_Located``, ``_Classified``, ``_Reproduced``, ``_Rerun``) and writes its
records through the walk's ``BundleWriter``, each file once. Sign-off decides once from the
records as written (``signoff.decide``), builds the review document, renders memo.md,
report.md and report.html from it and writes the manifest last. The bundle is built in a
temporary sibling directory and moved into place at the end, so a failed walk leaves no
half-written bundle.
"""

from __future__ import annotations

import datetime
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sparsedebug.core.errors import UserError
from sparsedebug.playbook.bundle import PARTIAL, BundleWriter, check_out_dir, clear_stale, discard, swap_into_place, work_dir
from sparsedebug.playbook.energy import Meter
from sparsedebug.playbook.fixed import FixedInputs
from sparsedebug.playbook.fixed import fixed_run as load_fixed
from sparsedebug.playbook.reporter import QuietReporter, Reporter
from sparsedebug.records.bundle import Bundle, BundleInput, FixOutcome, StepRecord
from sparsedebug.records.comparability import Dimension
from sparsedebug.records.notes import Note, note
from sparsedebug.records.playbook import Playbook, Step
from sparsedebug.records.ranks import RankComparison
from sparsedebug.records.run import RunRecord
from sparsedebug.reduce.apply_fix import apply_fix
from sparsedebug.sources.bundle import FILES, LoadedBundle
from sparsedebug.sources.evidence import NO_EVIDENCE_PATHS, AttachedEvidence, EvidencePaths, check_evidence_paths
from sparsedebug.sources.playbook import load_playbook
from sparsedebug.sources.registry import capabilities, input_kind
from sparsedebug.sources.workload.schema import absolute_paths

if TYPE_CHECKING:
    from sparsedebug.records.classification import Classification, Fix
    from sparsedebug.records.findings import BisectResult
    from sparsedebug.records.fingerprint import Fingerprint
    from sparsedebug.sources.detect import InputFile

DEFAULT_BASELINE = "minilm_dense"
# The embedded default pair: the real all-MiniLM-L6-v2 dense, and pruned 2:4 (Wanda, real text) with planted
# regressions.
DEFAULT_CANDIDATE = "minilm_2of4_regressed"


@dataclass(frozen=True)
class _Walk:
    """What every step reads: the playbook, the inputs as read once, the options, and the bundle being written."""

    book: Playbook
    out: BundleWriter
    out_dir: Path
    say: Reporter
    inputs: Mapping[str, InputFile]
    repeats: int | None
    allow: tuple[Dimension, ...] = ()
    calibrate: bool = False
    embedded: bool = False
    meter: Meter = field(default_factory=Meter)

    def path(self, role: str) -> Path:
        """The path of the input of ``role``, as given."""
        return self.inputs[role].path

    def begin(self, step_id: str, what: Note) -> tuple[Step, float]:
        """Start a step: tell the reporter; the step and its start time."""
        step = self.book.step(step_id)
        self.say.step(step, what)
        return step, time.perf_counter()

    def finish(self, begun: tuple[Step, float], status: Literal["done", "skipped"], detail: list[Note]) -> StepRecord:
        """A step done or skipped, with its one-line detail and duration."""
        step, started = begun
        self.say.done(step, status, detail)
        return StepRecord(step=step.id, status=status, detail=detail, seconds=round(time.perf_counter() - started, 3))

    def replayed(self, role: str) -> bool:
        """Whether the input of ``role`` is replayed here (a workload), not loaded or imported."""
        from sparsedebug.sources.detect import replayed_together

        return replayed_together(self.inputs[role].kind)

    def load(self, role: str) -> RunRecord:
        """Replay, import or load one input as a run record (a replay with the CPU package's RAPL counter read around it)."""
        from sparsedebug.sources.detect import load_input

        item = self.inputs[role]
        return self.meter.run(role if self.replayed(role) else None, lambda: load_input(item, repeats=self.repeats, progress=self.say.progress, compared=True))


@dataclass(frozen=True)
class _Frozen:
    """Step 1: the fingerprint (paths relative to the bundle)."""

    step: StepRecord
    fingerprint: Fingerprint


@dataclass(frozen=True)
class _Located:
    """Step 2: both runs, made comparable; a fixed run given as a trace or run record (loaded and checked here, not
    after classify and reduce); the bisect as the bundle holds it."""

    step: StepRecord
    baseline: RunRecord
    candidate: RunRecord
    fixed_early: RunRecord | None
    bisect: BisectResult


@dataclass(frozen=True)
class _Classified:
    """Step 3: the mechanism and the fix it proposes."""

    step: StepRecord
    classification: Classification


@dataclass(frozen=True)
class _Reproduced:
    """Step 4: where the fixed run comes from (the fix applied to a copy of the candidate workload, as written; the
    one given; or none) and how the fix was applied, or why not."""

    step: StepRecord
    fixed_source: Literal["applied_to_workload", "given", "none"]
    fix_how: Note
    fixed_file: InputFile | None


@dataclass(frozen=True)
class _Rerun:
    """Step 5's re-run: the fixed run (None when there is none to run)."""

    step: StepRecord
    fixed: RunRecord | None


def _freeze(w: _Walk) -> _Frozen:
    from sparsedebug.freeze import fingerprint as fp_mod

    begun = w.begin("freeze", note("playbook.freeze"))
    cand_wl = w.inputs["candidate"].workload if w.replayed("candidate") else None
    if w.replayed("baseline"):
        _ = w.inputs["baseline"].workload  # a workload the walk cannot replay is refused here, before any timing
    checkpoint: Path | None = None
    if cand_wl is not None:
        from sparsedebug.sources.replay.sources import graph_source

        source = graph_source(cand_wl, w.path("candidate").parent)
        checkpoint = source.model_file()
        if checkpoint:
            w.say.step(begun[0], note("playbook.opened", source=source.label, file=checkpoint.name))
    fingerprint = fp_mod.relative_to(
        fp_mod.collect(
            seed=cand_wl.seed if cand_wl is not None else None,
            workload=w.inputs["candidate"].digest if cand_wl is not None else None,
            model=checkpoint,
            calibrate_machine=w.calibrate,
        ),
        w.out_dir,
    )
    w.out.record("fingerprint", fingerprint)
    git = fingerprint.git.revision[:12] if fingerprint.git else "-"
    return _Frozen(w.finish(begun, "done", [note("playbook.frozen", seed=fingerprint.seed, git=git)]), fingerprint)


def _locate(w: _Walk, evidence: EvidencePaths) -> _Located:
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.locate.walk import bisect_runs
    from sparsedebug.sources.detect import load_inputs
    from sparsedebug.sources.latency import with_untraced_latencies

    begun = w.begin("locate", note("playbook.locate"))
    step = begun[0]
    if w.replayed("baseline") and w.replayed("candidate"):
        w.say.step(step, note("playbook.replay_pair", baseline=w.path("baseline").name, candidate=w.path("candidate").name))
    else:
        for role in ("baseline", "candidate"):
            w.say.step(step, note("playbook.load_input", verb=input_kind(w.inputs[role].kind).verb, role=role, file=w.path(role).name))
    def both() -> tuple[RunRecord, RunRecord]:
        return load_inputs(w.inputs["baseline"], w.inputs["candidate"], repeats=w.repeats, progress=w.say.progress)

    in_session = w.replayed("baseline") and w.replayed("candidate")  # one RAPL reading for the session
    base, cand = w.meter.run_session(("baseline", "candidate"), "baseline_candidate", both) if in_session else both()
    pair = require_comparable(*with_untraced_latencies(base, cand, evidence.latency), w.allow)
    w.out.record("baseline", pair.base)
    w.out.record("candidate", pair.cand)
    w.say.compared(pair.check)
    fixed_early = None
    if "fixed" in w.inputs and not w.replayed("fixed"):  # refused here, not after classify and reduce
        w.say.step(step, note("playbook.load_fixed_early", file=w.path("fixed").name))
        fixed_early = w.load("fixed")
        try:
            require_comparable(pair.cand, fixed_early, (*w.allow, "launch") if "launch" not in w.allow else w.allow)
        except UserError as exc:
            raise UserError(f"--fixed {w.path('fixed')}: {exc}") from None
    w.say.step(step, note("playbook.bisect"))
    result = w.out.record("bisect", bisect_runs(pair.base, pair.cand).model_copy(update={"comparability": pair.check}))
    done = w.finish(begun, "done", [note("playbook.located", state=result.state, first_stage=result.first_stage)])
    return _Located(done, pair.base, pair.cand, fixed_early, result)


def _classify(w: _Walk, evidence: AttachedEvidence, frozen: _Frozen, located: _Located) -> _Classified:
    from sparsedebug.classify.score import classify_run

    begun = w.begin("classify", note("playbook.classify"))
    classification = classify_run(
        located.candidate, baseline=located.baseline, evidence=evidence,
        fingerprint=frozen.fingerprint if w.replayed("candidate") else None,
        run_path=f"{FILES['candidate']} (the candidate run in this bundle, from {_input_name(w, 'candidate')})",
    )
    w.out.record("classification", classification)
    winner = classification.winner
    return _Classified(w.finish(begun, "done", [note("playbook.classified", winner=winner.value if winner else None)]), classification)


def _reduce(w: _Walk) -> Note:
    """Step 4a: ddmin over the differences of two workloads; the note for the step line."""
    from sparsedebug.reduce.reduce import reduce_workloads
    from sparsedebug.render.words.notes import say
    from sparsedebug.sources.workload.schema import dump_workload

    w.say.step(w.book.step("reproduce"), note("playbook.reduce"))
    reduction = reduce_workloads(
        w.inputs["baseline"].workload, w.inputs["candidate"].workload, progress=lambda event: w.say.progress(say(event), 0, 0),
        good_dir=w.path("baseline").parent, bad_dir=w.path("candidate").parent, repro_path=Path(FILES["reproducer"]),
    )
    w.out.record("reduce", reduction.record)
    if reduction.repro is not None and reduction.base is not None:
        w.out.text("reproducer", dump_workload(reduction.repro))
        w.out.text("reproducer_base", dump_workload(reduction.base))
    return note("playbook.reduced", file=FILES["reduce"], reproducer=FILES["reproducer"] if "reproducer" in w.out.files else None)


def _apply_fix(w: _Walk, fix: Fix | None) -> tuple[Literal["applied_to_workload", "given", "none"], Note, InputFile | None]:
    """Step 4b: the fix applied to a copy of the candidate workload (written, and read from the text written), the
    fixed input given, or why there is none."""
    from sparsedebug.sources.detect import written_input
    from sparsedebug.sources.workload.schema import dump_workload

    if "fixed" in w.inputs:
        return "given", note("playbook.fixed_given", path=str(w.path("fixed")), kind=w.inputs["fixed"].kind), w.inputs["fixed"]
    if fix is None:
        return "none", note("playbook.no_fix"), None
    if not w.replayed("candidate"):
        return "none", note("playbook.fix_needs_rerun", kind=w.inputs["candidate"].kind, rule=fix.rule, action=fix.code), None
    cand_wl = w.inputs["candidate"].workload
    new_wl, how = apply_fix(cand_wl, fix)
    if new_wl is None:
        return "none", how, None
    new_wl = absolute_paths(new_wl, w.path("candidate").parent).model_copy(update={"name": f"{cand_wl.name}_fixed"})
    text = dump_workload(new_wl)
    fixed_file = written_input(w.out.text("fixed_workload", text), text, w.inputs["candidate"].kind)
    return "applied_to_workload", note(how.code, **how.values, written_to=FILES["fixed_workload"]), fixed_file


def _trace_reproducer(w: _Walk, located: _Located, classification: Classification) -> Note:
    """Step 4a on a trace pair: the blamed layer as reproducer.yaml (and its dense twin) and repro.py."""
    from sparsedebug.reduce.from_trace import repro_workloads, trace_repro
    from sparsedebug.render.repro import render_repro_script
    from sparsedebug.render.words.core import replay_reason_words
    from sparsedebug.sources.workload.schema import dump_workload

    w.say.step(w.book.step("reproduce"), note("playbook.trace_cut"))
    bisect = located.bisect
    repro = trace_repro(located.baseline, located.candidate, bisect, classification)
    if repro is None:
        return note("playbook.no_trace_repro", state=bisect.state, stage=bisect.first_stage)
    trace_name = w.path("candidate").name
    files = {"script": FILES["repro_script"]}
    workloads = repro_workloads(repro, trace_name, twin_file=FILES["reproducer_base"], note=replay_reason_words(repro))
    if workloads is not None:
        w.out.text("reproducer", dump_workload(workloads[0]))
        w.out.text("reproducer_base", dump_workload(workloads[1]))
        files |= {"workload": FILES["reproducer"], "dense_twin": FILES["reproducer_base"]}
    w.out.text("repro_script", render_repro_script(repro, trace_name))
    w.out.record("trace_repro", repro.model_copy(update={"files": files}))
    return note("playbook.trace_repro", layer=repro.layer, stage=repro.first_stage, finding=repro.finding, files=sorted(files.values()),
                targets=len(repro.targets))


def _reproduce(w: _Walk, reduce: bool, located: _Located, classified: _Classified) -> _Reproduced:
    begun = w.begin("reproduce", note("playbook.reproduce"))
    notes: list[Note] = []
    if reduce and w.replayed("baseline") and w.replayed("candidate"):
        notes.append(_reduce(w))
    elif not reduce:
        notes.append(note("playbook.reduce_skipped"))
    elif all(capabilities(run).reproducer for run in (located.baseline, located.candidate)):
        notes.append(_trace_reproducer(w, located, classified.classification))
    else:
        notes.append(note("playbook.no_reduction"))
    if "fixed" in w.inputs:
        w.say.step(begun[0], note("playbook.load_fixed", file=w.path("fixed").name))
    source, how, fixed_file = _apply_fix(w, classified.classification.fix)
    notes.append(note("playbook.fix_applied" if source != "none" else "playbook.fix_not_applied"))
    return _Reproduced(w.finish(begun, "done", notes), source, how, fixed_file)


def _rerun(w: _Walk, frozen: _Frozen, located: _Located, classified: _Classified, reproduced: _Reproduced) -> _Rerun:
    from sparsedebug.signoff.movement import measure_movement

    begun = w.begin("rerun", note("playbook.rerun"))
    fixed_run, session_cand, pairing = None, None, None
    fix = classified.classification.fix
    if reproduced.fixed_file is not None:
        inputs = FixedInputs(candidate=located.candidate, candidate_file=w.inputs["candidate"], fixed_file=reproduced.fixed_file,
                             applied=reproduced.fixed_source == "applied_to_workload")
        # a CUDA-graph fix changes the launch mode by design: its fixed run is compared with the candidate across it
        graph_fix = fix is not None and fix.code == "cuda_graph"
        allow: tuple[Dimension, ...] = (*w.allow, "launch") if graph_fix and "launch" not in w.allow else w.allow
        fixed_run, session_cand, pairing = load_fixed(
            inputs, repeats=w.repeats, allow=allow, load_fixed=lambda: located.fixed_early or w.load("fixed"), meter=w.meter,
            say=lambda what: w.say.step(begun[0], what), compared=lambda check: w.say.compared(check, "fixed run"), progress=w.say.progress,
        )
    outcome = FixOutcome(proposed=fix, applied=reproduced.fixed_source != "none", how=reproduced.fix_how, fixed_source=reproduced.fixed_source)
    if fixed_run is not None:
        w.out.record("fixed", fixed_run)
        moves, verdict, moved, target = measure_movement(located.baseline, located.candidate, fixed_run, fix, session_cand=session_cand)
        outcome = outcome.model_copy(update={"movements": moves, "significance": verdict, "moved": moved, "target": target, "pairing": pairing})
        outcome = outcome.model_copy(update=_next_fix(w, frozen, located, fixed_run, fix))
    w.out.record("fix", outcome)
    if fixed_run is None:
        return _Rerun(w.finish(begun, "skipped", [note("playbook.no_fixed")]), None)
    lat = next((m for m in outcome.movements if m.metric == "latency p50" and m.direction is not None), None)
    return _Rerun(w.finish(begun, "done", [note("playbook.rerun_moved", direction=lat.direction if lat is not None else None,
                                                change=lat.change if lat is not None else None, moved=outcome.moved)]), fixed_run)


def _next_fix(w: _Walk, frozen: _Frozen, located: _Located, fixed_run: RunRecord, applied: Fix | None) -> dict[str, object]:
    """The fixed run classified again against the baseline, and the next fix it calls for (empty: repeats the applied one)."""
    from sparsedebug.classify.score import classify_run

    again = classify_run(
        fixed_run, baseline=located.baseline, fingerprint=frozen.fingerprint if w.replayed("candidate") else None,
        run_path=f"{FILES['fixed']} (the fixed run in this bundle)",
    )
    if again.fix is None or again.winner is None:
        return {}
    proposed = again.fix
    keys = ("kind", "knob", "value", "layer", "action")
    if applied is not None and all(getattr(proposed, k) == getattr(applied, k) for k in keys):
        return {}
    score = next(s.score for s in again.scores if s.mechanism == again.winner)
    share = again.attribution.share_of(again.winner) if again.ranked_by == "attribution" and again.attribution else None
    if share is not None and again.attribution is not None:  # ranked by the share it carries, not by a rule score
        basis = note("playbook.next_by_attribution", winner=again.winner.value, ms=share.ms, delta_ms=again.attribution.delta_ms, share=share.share)
    else:
        basis = note("playbook.next_by_score", winner=again.winner.value, score=score)
    return {"next_fix": proposed, "next_basis": basis}


def _input_label(w: _Walk, role: str) -> str:
    """How the bundle names an input: ``embedded:NAME`` for the embedded default, else the path as given."""
    path = w.path(role)
    return f"embedded:{path.name}" if w.embedded and role != "fixed" else str(path)


def _input_name(w: _Walk, role: str) -> str:
    """An input named without local directories: ``embedded:NAME`` or the file name (the manifest has the full label)."""
    return f"embedded:{w.path(role).name}" if w.embedded and role != "fixed" else w.path(role).name


def _sign_off(w: _Walk, steps: list[StepRecord]) -> LoadedBundle:
    """Decide once from the records as written, store the decision and the review document, render memo.md,
    report.md and report.html from it, and write the manifest last: each file once. The bundle as it reads once in
    place."""
    from sparsedebug.playbook.bundle import write_rendered
    from sparsedebug.signoff.decide import decide_bundle
    from sparsedebug.signoff.memo import build_memo

    inputs = [BundleInput(role=role, kind=item.kind, file=item.digest, label=_input_label(w, role)) for role, item in w.inputs.items()]
    created_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    manifest = Bundle(created_at=created_at, playbook=w.book.id, inputs=inputs, steps=steps, files=dict(w.out.files), repeats=w.repeats)
    w.out.record("decision", decide_bundle(w.out.loaded(w.out_dir, manifest), w.book, written=w.out.digests))
    rendered = {role: FILES[role] for role in ("memo", "report", "html", "memo_model")}
    manifest = manifest.model_copy(update={"files": {**w.out.files, **rendered}})
    memo = build_memo(w.out.loaded(w.out_dir, manifest), w.book)
    w.out.record("memo_model", memo)
    write_rendered(w.out, w.out.loaded(w.out_dir, manifest, memo), w.book)
    w.out.manifest(manifest)
    return w.out.loaded(w.out_dir, manifest)


def _rank_sets(
    baseline: Path | None, candidate: Path | None, executor: str, say: Reporter
) -> tuple[RankComparison, Path, Path] | None:
    """Two run sets compared rank to rank, and the rank files the five-stage walk takes; None unless a side is a set."""
    from sparsedebug.locate.ranks import walk_pair
    from sparsedebug.sources.runset.discover import is_run_set

    if not any(path is not None and is_run_set(str(path)) for path in (baseline, candidate)):
        return None
    if baseline is None or candidate is None:
        raise UserError("give both --baseline and --candidate run sets")
    comparison, base_file, cand_file = walk_pair(
        str(baseline), str(candidate), executor=executor, on_rank=lambda _s, done, total: say.progress("ranks", done, total)
    )
    say.note(note("playbook.run_sets", ranks=comparison.ranks, walked=comparison.walked_rank))
    return comparison, base_file, cand_file


def _inputs(baseline: Path | None, candidate: Path | None, fixed: Path | None) -> dict[str, Path]:
    from sparsedebug.core.resources import embedded_workload

    if (baseline is None) != (candidate is None):
        raise UserError("give both --baseline and --candidate, or neither for the embedded default pair")
    paths = {
        "baseline": baseline if baseline is not None else embedded_workload(DEFAULT_BASELINE),
        "candidate": candidate if candidate is not None else embedded_workload(DEFAULT_CANDIDATE),
    }
    if fixed is not None:
        paths["fixed"] = fixed
    return paths


def run_playbook(
    out_dir: Path,
    *,
    baseline: Path | None = None,
    candidate: Path | None = None,
    fixed: Path | None = None,
    repeats: int | None = None,
    evidence: EvidencePaths = NO_EVIDENCE_PATHS,
    playbook: Path | Playbook | None = None,
    reporter: Reporter | None = None,
    reduce: bool = True,
    force: bool = False,
    executor: str = "local",
    allow_different: Sequence[Dimension] = (),
    calibrate: bool = False,
) -> LoadedBundle:
    """Walk the five steps and write a complete bundle to ``out_dir``; return it as it reads back from there.

    Each input is read once, and each bundle file written once. ``playbook``: a playbook
    file, one already loaded, or None for the embedded one.

    With ``calibrate`` the freeze step measures this machine's GEMM and copy rates
    (``freeze --calibrate``), the roofline classify uses for replayed runs.

    With neither ``baseline`` nor ``candidate``, the embedded default pair is used.
    A workload is replayed, a trace imported, a run record loaded. When both sides
    are workloads, step 4 reduces them to a reproducer and, when the proposed fix
    maps onto a workload, applies it to a copy of the candidate and replays it;
    ``fixed`` (any input kind) is used as the fixed candidate instead. Baseline and
    candidate must be comparable (``locate.comparable``) unless ``allow_different``
    names what differs; the bisect record and the memo state what was allowed.

    An existing bundle at ``out_dir`` is replaced only with ``force`` (else a
    ``UserError`` before any work). The bundle is built in ``.NAME.partial-PID``
    beside ``out_dir`` and swapped in at the end; a signal or an error on the way
    removes it, and one left by a killed run is removed (or put back, for the
    previous bundle moved aside) at the start of the next.
    """
    from sparsedebug.sources.detect import read_input

    book = playbook if isinstance(playbook, Playbook) else load_playbook(playbook)
    ranks = _rank_sets(baseline, candidate, executor, reporter or QuietReporter())
    if ranks is not None:
        comparison, baseline, candidate = ranks
    inputs = {role: read_input(path) for role, path in _inputs(baseline, candidate, fixed).items()}  # each read once
    ncu, smi = check_evidence_paths(evidence)  # read before any work, and attached to classify as read
    say = reporter or QuietReporter()
    for stale in clear_stale(out_dir):
        say.note(stale)
    check_out_dir(out_dir, force=force)
    tmp = work_dir(out_dir, PARTIAL)
    w = _Walk(book=book, out=BundleWriter(tmp), out_dir=out_dir, say=say, inputs=inputs, repeats=repeats, allow=tuple(allow_different),
              calibrate=calibrate, embedded=baseline is None)
    try:
        if tmp.exists():
            shutil.rmtree(tmp)
        try:
            tmp.mkdir(parents=False)
        except OSError as exc:  # a folder os.access calls writable that is not (/proc, a read-only mount as root)
            raise UserError(f"{out_dir}: cannot create the bundle's working folder {tmp.name} in {tmp.parent} ({exc.strerror})") from None
        if ranks is not None:
            w.out.record("ranks", ranks[0])
        frozen = _freeze(w)
        located = _locate(w, evidence)
        classified = _classify(w, AttachedEvidence(ncu=ncu, smi=smi, smi_utc_offset_h=evidence.smi_utc_offset_h), frozen, located)
        reproduced = _reproduce(w, reduce, located, classified)
        rerun = _rerun(w, frozen, located, classified, reproduced)
        runs = {"baseline": located.baseline, "candidate": located.candidate} | ({"fixed": rerun.fixed} if rerun.fixed is not None else {})
        w.out.record("energy", w.meter.energy(runs, evidence, w.say.note))  # step 5's energy, each side from its own window
        bundle = _sign_off(w, [r.step for r in (frozen, located, classified, reproduced, rerun)])
        swap_into_place(tmp, out_dir)
    except BaseException:
        discard(tmp)
        raise
    return bundle
