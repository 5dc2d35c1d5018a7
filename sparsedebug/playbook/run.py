"""The walk (``sparsedebug playbook run``): one function per playbook step, writing one bundle.

:func:`run_playbook` checks the inputs, then calls freeze, locate, classify, reproduce
and re-run in order on a :class:`_Walk`, which holds what the steps hand each other and
the files written so far. Step 5 ends with the decision (``signoff.decide``), stored as a
record before the memo and the report are rendered from the bundle as written. The
bundle is built in a temporary sibling directory and moved into place at the end, so a
failed walk leaves no half-written bundle.
"""

from __future__ import annotations

import datetime
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from sparsedebug.core.errors import UserError
from sparsedebug.playbook.bundle import PARTIAL, check_out_dir, clear_stale, discard, swap_into_place, work_dir
from sparsedebug.playbook.energy import Meter
from sparsedebug.playbook.fixed import FixedInputs
from sparsedebug.playbook.fixed import fixed_run as load_fixed
from sparsedebug.playbook.reporter import QuietReporter, Reporter
from sparsedebug.records.bundle import Bundle, BundleInput, FixOutcome, InputKind, StepRecord
from sparsedebug.records.comparability import Dimension
from sparsedebug.records.notes import Note, note
from sparsedebug.records.playbook import Playbook, Step
from sparsedebug.records.ranks import RankComparison
from sparsedebug.records.run import RunRecord
from sparsedebug.reduce.apply_fix import apply_fix
from sparsedebug.sources.bundle import FILES, MANIFEST, LoadedBundle, load_bundle
from sparsedebug.sources.evidence import NO_EVIDENCE_PATHS, EvidencePaths, check_evidence_paths, load_evidence
from sparsedebug.sources.playbook import load_playbook
from sparsedebug.sources.registry import capabilities, input_kind
from sparsedebug.sources.workload.schema import absolute_paths

if TYPE_CHECKING:
    from sparsedebug.records.classification import Classification, Fix
    from sparsedebug.records.fingerprint import Fingerprint
    from sparsedebug.sources.workload.schema import Workload

DEFAULT_BASELINE = "minilm_dense"
# The embedded default pair: the real all-MiniLM-L6-v2 dense, and pruned 2:4 (Wanda, real text) with planted
# regressions.
DEFAULT_CANDIDATE = "minilm_2of4_regressed"


@dataclass
class _Walk:
    """What the steps of one walk hand each other, and the bundle files written so far."""

    book: Playbook
    tmp: Path
    out_dir: Path
    say: Reporter
    paths: dict[str, Path]
    kinds: dict[str, InputKind]
    repeats: int | None
    allow: tuple[Dimension, ...] = ()
    calibrate: bool = False
    embedded: bool = False
    files: dict[str, str] = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)
    runs: dict[str, RunRecord] = field(default_factory=dict)
    # A fixed run given as a trace or run record, loaded in step 2 and checked comparable with the candidate there.
    fixed_early: RunRecord | None = None
    workloads: dict[str, Workload] = field(default_factory=dict)
    fingerprint: Fingerprint | None = None
    classification: Classification | None = None
    fixed_source: Literal["applied_to_workload", "given", "none"] = "none"
    fix_how: Note | None = None
    meter: Meter = field(default_factory=Meter)
    _started: float = 0.0
    created_at: str = ""  # when the manifest was first written: every later write (and page rendered from one) says the same

    def save(self, role: str, record: BaseModel) -> None:
        """Write one record into the bundle under its fixed file name."""
        from sparsedebug.core.io import save_record

        save_record(record, self.tmp / FILES[role])
        self.files[role] = FILES[role]

    def begin(self, step_id: str, what: Note) -> Step:
        """Start a step: tell the reporter and start its clock."""
        step = self.book.step(step_id)
        self._started = time.perf_counter()
        self.say.step(step, what)
        return step

    def finish(self, step: Step, status: Literal["done", "skipped"], detail: list[Note]) -> None:
        """Record a step as done or skipped, with its one-line detail and duration."""
        seconds = round(time.perf_counter() - self._started, 3)
        self.steps.append(StepRecord(step=step.id, status=status, detail=detail, seconds=seconds))
        self.say.done(step, status, detail)

    def replayed(self, role: str) -> bool:
        """Whether the input of ``role`` is replayed here (a workload), not loaded or imported."""
        from sparsedebug.sources.detect import replayed_together

        return replayed_together(self.kinds[role])

    def load(self, role: str) -> RunRecord:
        """Replay, import or load one input as a run record (a replay with the CPU package's RAPL counter read around it)."""
        from sparsedebug.sources.detect import load_run
        return self.meter.run(role if self.replayed(role) else None, lambda: load_run(self.paths[role], repeats=self.repeats, progress=self.say.progress, compared=True))


def _freeze(w: _Walk) -> None:
    from sparsedebug.freeze import fingerprint as fp_mod
    from sparsedebug.sources.detect import load_workload

    step = w.begin("freeze", note("playbook.freeze"))
    for role in ("baseline", "candidate"):
        if w.replayed(role):
            w.workloads[role] = load_workload(w.paths[role])
    cand_wl = w.workloads.get("candidate")
    checkpoint: Path | None = None
    if cand_wl is not None:
        from sparsedebug.sources.replay.sources import graph_source

        source = graph_source(cand_wl, w.paths["candidate"].parent)
        checkpoint = source.model_file()
        if checkpoint:
            w.say.step(step, note("playbook.opened", source=source.label, file=checkpoint.name))
    w.fingerprint = fp_mod.relative_to(
        fp_mod.collect(
            seed=cand_wl.seed if cand_wl is not None else None,
            workload=w.paths["candidate"] if cand_wl is not None else None,
            model=checkpoint,
            calibrate_machine=w.calibrate,
        ),
        w.out_dir,
    )
    w.save("fingerprint", w.fingerprint)
    git = w.fingerprint.git.revision[:12] if w.fingerprint.git else "-"
    w.finish(step, "done", [note("playbook.frozen", seed=w.fingerprint.seed, git=git)])


def _locate(w: _Walk, evidence: EvidencePaths) -> None:
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.locate.walk import bisect_runs
    from sparsedebug.sources.detect import load_pair
    from sparsedebug.sources.latency import with_untraced_latencies

    step = w.book.step("locate")
    w.begin("locate", note("playbook.locate"))
    if w.replayed("baseline") and w.replayed("candidate"):
        w.say.step(step, note("playbook.replay_pair", baseline=w.paths["baseline"].name, candidate=w.paths["candidate"].name))
    else:
        for role in ("baseline", "candidate"):
            w.say.step(step, note("playbook.load_input", verb=input_kind(w.kinds[role]).verb, role=role, file=w.paths[role].name))
    def both() -> tuple[RunRecord, RunRecord]:
        return load_pair(w.paths["baseline"], w.paths["candidate"], repeats=w.repeats, progress=w.say.progress)

    in_session = w.replayed("baseline") and w.replayed("candidate")  # one RAPL reading for the session
    w.runs["baseline"], w.runs["candidate"] = w.meter.run_session(("baseline", "candidate"), "baseline_candidate", both) if in_session else both()
    w.runs["baseline"], w.runs["candidate"] = with_untraced_latencies(w.runs["baseline"], w.runs["candidate"], evidence.latency)
    pair = require_comparable(w.runs["baseline"], w.runs["candidate"], w.allow)
    w.runs["baseline"], w.runs["candidate"] = pair.base, pair.cand
    for role in ("baseline", "candidate"):
        w.save(role, w.runs[role])
    w.say.compared(pair.check)
    if "fixed" in w.paths and not w.replayed("fixed"):  # refused here, not after classify and reduce
        w.say.step(step, note("playbook.load_fixed_early", file=w.paths["fixed"].name))
        w.fixed_early = w.load("fixed")
        try:
            require_comparable(w.runs["candidate"], w.fixed_early, (*w.allow, "launch") if "launch" not in w.allow else w.allow)
        except UserError as exc:
            raise UserError(f"--fixed {w.paths['fixed']}: {exc}") from None
    w.say.step(step, note("playbook.bisect"))
    result = bisect_runs(w.runs["baseline"], w.runs["candidate"]).model_copy(update={"comparability": pair.check})
    w.save("bisect", result)
    w.finish(step, "done", [note("playbook.located", state=result.state, first_stage=result.first_stage)])


def _classify(w: _Walk, evidence: EvidencePaths) -> None:
    from sparsedebug.classify.score import classify_run

    step = w.begin("classify", note("playbook.classify"))
    w.classification = classify_run(
        w.runs["candidate"], baseline=w.runs["baseline"], evidence=load_evidence(evidence),
        fingerprint=w.fingerprint if w.replayed("candidate") else None,
        run_path=f"{FILES['candidate']} (the candidate run in this bundle, from {_input_name(w, 'candidate')})",
    )
    w.save("classification", w.classification)
    winner = w.classification.winner
    w.finish(step, "done", [note("playbook.classified", winner=winner.value if winner else None)])


def _reduce(w: _Walk) -> Note:
    """Step 4a: ddmin over the differences of two workloads; the note for the step line."""
    from sparsedebug.reduce.reduce import reduce_workloads
    from sparsedebug.render.words.notes import say
    from sparsedebug.sources.workload.schema import save_workload

    step = w.book.step("reproduce")
    w.say.step(step, note("playbook.reduce"))
    reduction = reduce_workloads(
        w.workloads["baseline"], w.workloads["candidate"], progress=lambda event: w.say.progress(say(event), 0, 0),
        good_dir=w.paths["baseline"].parent, bad_dir=w.paths["candidate"].parent, repro_path=Path(FILES["reproducer"]),
    )
    red = reduction.record
    w.save("reduce", red)
    if reduction.repro is not None and reduction.base is not None:
        save_workload(reduction.repro, w.tmp / FILES["reproducer"])
        save_workload(reduction.base, w.tmp / FILES["reproducer_base"])
        w.files["reproducer"] = FILES["reproducer"]
        w.files["reproducer_base"] = FILES["reproducer_base"]
    return note("playbook.reduced", file=FILES["reduce"], reproducer=FILES["reproducer"] if "reproducer" in w.files else None)


def _apply_fix(w: _Walk) -> Note:
    """Step 4b: the fix applied to a copy of the candidate workload, or why it cannot be."""
    from sparsedebug.sources.workload.schema import save_workload

    assert w.classification is not None
    fix = w.classification.fix
    cand_wl = w.workloads.get("candidate")
    if "fixed" in w.paths:
        w.fixed_source = "given"
        return note("playbook.fixed_given", path=str(w.paths["fixed"]), kind=w.kinds["fixed"])
    if fix is None:
        return note("playbook.no_fix")
    if cand_wl is None:
        return note("playbook.fix_needs_rerun", kind=w.kinds["candidate"], rule=fix.rule, action=fix.code)
    new_wl, how = apply_fix(cand_wl, fix)
    if new_wl is None:
        return how
    new_wl = absolute_paths(new_wl, w.paths["candidate"].parent).model_copy(update={"name": f"{cand_wl.name}_fixed"})
    save_workload(new_wl, w.tmp / FILES["fixed_workload"])
    w.files["fixed_workload"] = FILES["fixed_workload"]
    w.fixed_source = "applied_to_workload"
    return how.model_copy(update={"values": {**how.values, "written_to": FILES["fixed_workload"]}})


def _trace_reproducer(w: _Walk) -> Note:
    """Step 4a on a trace pair: the blamed layer as reproducer.yaml (and its dense twin) and repro.py."""
    from sparsedebug.core.io import atomic_write_text, load_record
    from sparsedebug.records.findings import BisectResult
    from sparsedebug.reduce.from_trace import repro_workloads, trace_repro
    from sparsedebug.render.repro import render_repro_script
    from sparsedebug.render.words.core import replay_reason_words
    from sparsedebug.sources.workload.schema import save_workload

    step = w.book.step("reproduce")
    w.say.step(step, note("playbook.trace_cut"))
    bisect = load_record(w.tmp / FILES["bisect"], BisectResult)
    repro = trace_repro(w.runs["baseline"], w.runs["candidate"], bisect, w.classification)
    if repro is None:
        if bisect.first_stage is None:
            return note("playbook.no_trace_repro", state=bisect.state, stage=None)
        return note("playbook.no_trace_repro", state=bisect.state, stage=bisect.first_stage)
    trace_name = w.paths["candidate"].name
    files = {"script": FILES["repro_script"]}
    workloads = repro_workloads(repro, trace_name, twin_file=FILES["reproducer_base"], note=replay_reason_words(repro))
    if workloads is not None:
        cand, base = workloads
        save_workload(cand, w.tmp / FILES["reproducer"])
        save_workload(base, w.tmp / FILES["reproducer_base"])
        for role in ("reproducer", "reproducer_base"):
            w.files[role] = FILES[role]
        files |= {"workload": FILES["reproducer"], "dense_twin": FILES["reproducer_base"]}
    atomic_write_text(w.tmp / FILES["repro_script"], render_repro_script(repro, trace_name))
    w.files["repro_script"] = FILES["repro_script"]
    w.save("trace_repro", repro.model_copy(update={"files": files}))
    return note("playbook.trace_repro", layer=repro.layer, stage=repro.first_stage, finding=repro.finding, files=sorted(files.values()),
                targets=len(repro.targets))


def _reproduce(w: _Walk, reduce: bool) -> None:
    step = w.begin("reproduce", note("playbook.reproduce"))
    notes: list[Note] = []
    if reduce and "baseline" in w.workloads and "candidate" in w.workloads:
        notes.append(_reduce(w))
    elif not reduce:
        notes.append(note("playbook.reduce_skipped"))
    elif all(capabilities(w.runs[role]).reproducer for role in ("baseline", "candidate")):
        notes.append(_trace_reproducer(w))
    else:
        notes.append(note("playbook.no_reduction"))
    if "fixed" in w.paths:
        w.say.step(step, note("playbook.load_fixed", file=w.paths["fixed"].name))
    w.fix_how = _apply_fix(w)
    notes.append(note("playbook.fix_applied" if w.fixed_source != "none" else "playbook.fix_not_applied"))
    w.finish(step, "done", notes)


def _rerun(w: _Walk) -> None:
    from sparsedebug.signoff.movement import measure_movement

    assert w.classification is not None
    step = w.begin("rerun", note("playbook.rerun"))
    fixed_run, session_cand = None, None
    if w.fixed_source != "none":
        applied = w.fixed_source == "applied_to_workload"
        inputs = FixedInputs(
            candidate=w.runs["candidate"], candidate_path=w.paths["candidate"], candidate_is_workload=w.replayed("candidate"),
            fixed_path=w.tmp / FILES["fixed_workload"] if applied else w.paths["fixed"],
            fixed_is_workload=applied or w.replayed("fixed"), applied=applied,
        )
        # a CUDA-graph fix changes the launch mode by design: its fixed run is compared with the candidate across it
        graph_fix = w.classification.fix is not None and w.classification.fix.code == "cuda_graph"
        allow: tuple[Dimension, ...] = (*w.allow, "launch") if graph_fix and "launch" not in w.allow else w.allow
        fixed_run, session_cand = load_fixed(
            inputs, repeats=w.repeats, allow=allow, load_fixed=lambda: w.fixed_early or w.load("fixed"), meter=w.meter,
            say=lambda what: w.say.step(step, what), compared=lambda check: w.say.compared(check, "fixed run"), progress=w.say.progress,
        )
    fix = w.classification.fix
    outcome = FixOutcome(proposed=fix, applied=w.fixed_source != "none", how=w.fix_how or note("playbook.no_fix"), fixed_source=w.fixed_source)
    if fixed_run is not None:
        w.runs["fixed"] = fixed_run
        w.save("fixed", fixed_run)
        moves, verdict, moved, target = measure_movement(w.runs["baseline"], w.runs["candidate"], fixed_run, fix, session_cand=session_cand)
        outcome = outcome.model_copy(update={"movements": moves, "significance": verdict, "moved": moved, "target": target})
        outcome = outcome.model_copy(update=_next_fix(w, fixed_run, fix))
    w.save("fix", outcome)
    if fixed_run is not None:
        lat = next((m for m in outcome.movements if m.metric == "latency p50" and m.direction is not None), None)
        w.finish(step, "done", [note("playbook.rerun_moved", direction=lat.direction if lat is not None else None,
                                     change=lat.change if lat is not None else None, moved=outcome.moved)])
    else:
        w.finish(step, "skipped", [note("playbook.no_fixed")])


def _next_fix(w: _Walk, fixed_run: RunRecord, applied: Fix | None) -> dict[str, object]:
    """The fixed run classified again against the baseline, and the next fix it calls for (empty: repeats the applied one)."""
    from sparsedebug.classify.score import classify_run

    again = classify_run(
        fixed_run, baseline=w.runs["baseline"], fingerprint=w.fingerprint if w.replayed("candidate") else None,
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
    path = w.paths[role]
    return f"embedded:{path.name}" if w.embedded and role != "fixed" else str(path)


def _input_name(w: _Walk, role: str) -> str:
    """An input named without local directories: ``embedded:NAME`` or the file name (the manifest has the full label)."""
    return f"embedded:{w.paths[role].name}" if w.embedded and role != "fixed" else w.paths[role].name


def _write_manifest(w: _Walk, embedded: bool) -> None:
    from sparsedebug.core.io import file_digest, save_record

    inputs = [BundleInput(role=role, kind=w.kinds[role], file=file_digest(path), label=_input_label(w, role)) for role, path in w.paths.items()]
    w.created_at = w.created_at or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    manifest = Bundle(created_at=w.created_at, playbook=w.book.id, inputs=inputs, steps=w.steps, files=dict(w.files), repeats=w.repeats)
    save_record(manifest, w.tmp / MANIFEST)


def _decide_and_render(w: _Walk, embedded: bool, out_dir: Path) -> None:
    """Decide once from the records as written, store the decision and the memo model, then render the outputs."""
    from sparsedebug.core.io import atomic_write_text
    from sparsedebug.playbook.bundle import write_rendered
    from sparsedebug.signoff.decide import decide_bundle
    from sparsedebug.signoff.memo import with_review

    _write_manifest(w, embedded)
    w.save("decision", decide_bundle(load_bundle(w.tmp), w.book))
    for role in ("memo", "report", "html"):
        w.files[role] = FILES[role]
        atomic_write_text(w.tmp / FILES[role], "(rendering)\n")
    _write_manifest(w, embedded)
    loaded = with_review(load_bundle(w.tmp).model_copy(update={"root": out_dir}), w.book)
    assert loaded.memo is not None
    w.save("memo_model", loaded.memo)
    _write_manifest(w, embedded)
    write_rendered(w.tmp, loaded, w.book)


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
    playbook: Path | None = None,
    reporter: Reporter | None = None,
    reduce: bool = True,
    force: bool = False,
    executor: str = "local",
    allow_different: Sequence[Dimension] = (),
    calibrate: bool = False,
) -> LoadedBundle:
    """Walk the five steps and write a complete bundle to ``out_dir``; return it loaded.

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
    from sparsedebug.sources.detect import detect_kind

    book = load_playbook(playbook)
    ranks = _rank_sets(baseline, candidate, executor, reporter or QuietReporter())
    if ranks is not None:
        comparison, baseline, candidate = ranks
    paths = _inputs(baseline, candidate, fixed)
    kinds: dict[str, InputKind] = {role: detect_kind(path) for role, path in paths.items()}
    check_evidence_paths(evidence)
    say = reporter or QuietReporter()
    for stale in clear_stale(out_dir):
        say.note(stale)
    check_out_dir(out_dir, force=force)
    tmp = work_dir(out_dir, PARTIAL)
    w = _Walk(book=book, tmp=tmp, out_dir=out_dir, say=say, paths=paths, kinds=kinds, repeats=repeats, allow=tuple(allow_different),
              calibrate=calibrate, embedded=baseline is None)
    try:
        if tmp.exists():
            shutil.rmtree(tmp)
        try:
            tmp.mkdir(parents=False)
        except OSError as exc:  # a folder os.access calls writable that is not (/proc, a read-only mount as root)
            raise UserError(f"{out_dir}: cannot create the bundle's working folder {tmp.name} in {tmp.parent} ({exc.strerror})") from None
        if ranks is not None:
            w.save("ranks", ranks[0])
        _freeze(w)
        _locate(w, evidence)
        _classify(w, evidence)
        _reproduce(w, reduce)
        _rerun(w)
        w.save("energy", w.meter.energy(w.runs, evidence, w.say.note))  # step 5's energy, each side from its own window
        _decide_and_render(w, embedded=baseline is None, out_dir=out_dir)
        swap_into_place(tmp, out_dir)
    except BaseException:
        discard(tmp)
        raise
    return load_bundle(out_dir)
