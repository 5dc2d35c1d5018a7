"""`sparsedebug bisect`: step 2, the first persistent stage where a candidate diverges from its baseline."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sparsedebug.cli.common import (
    AllowDifferentOption,
    ExecutorOption,
    JsonOption,
    LatencyOption,
    WideOption,
    allowed_dimensions,
    console,
    emit_json,
    err_console,
    handle_errors,
    rank_pair,
    say_comparability,
)
from sparsedebug.core.errors import UserError
from sparsedebug.records.defaults import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, MAX_REPEATS

if TYPE_CHECKING:
    from sparsedebug.records.run import RunRecord

RunArg = Annotated[
    Path,
    typer.Argument(
        help="A run record (.json/.yaml), a workload YAML (replayed) or a PyTorch trace (.json/.json.gz, imported).",
        show_default=False,
    ),
]


@handle_errors
def bisect(
    base: RunArg,
    cand: RunArg,
    alpha: Annotated[float, typer.Option(help="Significance level of the two-sided Mann-Whitney U test.", min=1e-6, max=0.5)] = DEFAULT_ALPHA,
    min_effect: Annotated[
        float, typer.Option(help="Minimum median ratio (either way) that counts as a change, as asv's factor (1 to 100).", min=1.0, max=100.0)
    ] = DEFAULT_MIN_EFFECT,
    min_cosine: Annotated[
        float | None, typer.Option(help="Quality guardrail: the candidate's output cosine vs dense must be at least this (-1 to 1).", min=-1.0, max=1.0)
    ] = None,
    repeats: Annotated[int | None, typer.Option(help="Timed repetitions when BASE/CAND is a workload (default: its own; 3 to 10,000).", min=3, max=MAX_REPEATS)] = None,
    layers: Annotated[int, typer.Option(help="Rank at most this many layers in the table (0: none).", min=0)] = 10,
    executor: ExecutorOption = "local",
    allow_different: AllowDifferentOption = None,
    latency: LatencyOption = None,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Find the first persistent stage where CAND diverges from BASE.

    Walks graph -> lower -> kernel -> schedule -> outcome. graph and lower are
    categorical: a layer added/removed/reshaped, a declared-sparse layer that fell
    back to dense, a layer not declared sparse that changed path, per-call weight
    conversion. kernel, schedule and outcome are tested on the raw samples: a
    change counts only when a Mann-Whitney U test says so, the median ratio passes
    --min-effect, and it holds in both halves of the samples and without outliers.
    Identical layers (same role in every block) are pooled when one alone has too
    few samples, and per-layer tests are corrected for the number of layers tested
    (Holm's step-down); with too few samples to decide, the answer says so.
    Two workloads are replayed in one interleaved session (the sides share every round and swap
    which goes first) and compared round by round (Wilcoxon signed-rank on the per-round ratios).

    Runs timed apart whose dense references are the same computation are compared
    within how far the machine moved that identical work between them, so this
    machine's drift is not read as a change; the same workload as BASE and CAND is
    replayed as both sides of one session (a check of the machine's noise).

    First the two runs must be comparable (same model by layer shapes, same device
    and backend family, same phase, tokens and dtype): a pair that is not is refused
    with exit 2 and what differs, unless --allow-different names it.

    Prints each stage's status, the first divergent stage's findings, the layers
    ranked by contribution to the outcome change, and the verdict with the effect
    size and its confidence interval. Exit 0 whatever the verdict (use `gate` to
    fail CI); exit 2 on bad input.

    BASE and CAND may be run sets (a directory or quoted glob of per-rank traces): every rank is
    compared with the same rank of the other set (printed first), then the rank the change is
    confined to (else the straggler, else the lowest rank) is analysed as a pair.
    """
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.locate.walk import bisect_runs
    from sparsedebug.render.terminal.bisect import bisect_view
    from sparsedebug.sources.detect import detect_kind, replayed_together

    base, cand, ranks = rank_pair(base, cand, executor, json_out=json_out, wide=wide)
    if base.resolve() == cand.resolve() and not replayed_together(detect_kind(base)):
        # the same workload twice is two replays (a noise check); the same record twice is one measurement
        raise UserError(f"{cand}: BASE and CAND are the same file")
    err = err_console()
    base_run, cand_run = _load(base, cand, repeats, latency, shown=not json_out and err.is_terminal)
    pair = require_comparable(base_run, cand_run, allowed_dimensions(allow_different))
    result = bisect_runs(pair.base, pair.cand, alpha=alpha, min_effect=min_effect, min_cosine=min_cosine).model_copy(
        update={"comparability": pair.check})
    if not json_out:
        say_comparability(pair.check, err)
    if json_out:
        emit_json(result if ranks is None else {"ranks": ranks, "bisect": result})
        return
    console(wide).print(bisect_view(result, layer_limit=layers, clock=_clock(base_run, cand_run)))


def _clock(base: RunRecord, cand: RunRecord) -> str:
    """The clock of the pair's latencies, in the words every renderer uses.

    ``bundle_clock`` reads a run's name, backend and clock alone, so each run's figures carry only those (and the other
    required fields): not ``signoff.report.run_figures``, whose percentiles and shipped stack profiles (read from YAML,
    with the signoff and bundle modules they import) are nothing the label needs."""
    from sparsedebug.records.figures import RunFigures
    from sparsedebug.render.clocks import bundle_clock
    from sparsedebug.signoff.metrics import run_clock
    from sparsedebug.sources.registry import replayed

    return bundle_clock([RunFigures(role=role, run=run.name, backend=run.lower.backend, clock=run_clock(run), replayed=replayed(run))
                         for role, run in (("baseline", base), ("candidate", cand))])


def _load(base: Path, cand: Path, repeats: int | None, latency: tuple[Path, Path] | None, *, shown: bool) -> tuple[RunRecord, RunRecord]:
    """Both runs, with a transient progress bar on stderr when ``shown`` (rich.progress is imported only then: 20 ms
    of every start)."""
    from sparsedebug.sources.detect import load_pair

    with ExitStack() as stack:
        progress = None
        if shown:
            from rich.progress import Progress

            bar = stack.enter_context(Progress(console=err_console(), transient=True))
            task = bar.add_task("loading", total=None)

            def progress(stage: str, done: int, total: int) -> None:
                bar.update(task, description=stage, completed=done, total=total)

        return load_pair(base, cand, repeats=repeats, progress=progress, latency=latency)


def register(app: typer.Typer) -> None:
    """Add `bisect` to the app."""
    app.command("bisect")(bisect)
