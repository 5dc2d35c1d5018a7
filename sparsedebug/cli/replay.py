"""`sparsedebug replay`: run a workload on the built-in kernels and record all five stages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sparsedebug.cli.common import JsonOption, OutputOption, WideOption, console, emit_json, err_console, handle_errors
from sparsedebug.records.defaults import MAX_REPEATS

if TYPE_CHECKING:
    from sparsedebug.records.run import RunRecord
    from sparsedebug.sources.workload.schema import Workload


@handle_errors
def replay(
    workload: Annotated[
        str, typer.Argument(help="Workload YAML file, or the name of an embedded one (minilm_dense, minilm_2of4_regressed, minilm_2of4_blocked, llama_dense, llama_2of4, llama_2of4_regressed).")
    ],
    output: OutputOption = None,
    repeats: Annotated[int | None, typer.Option(help="Timed repetitions of every measurement (overrides the workload's; 3 to 10,000).", min=3, max=MAX_REPEATS)] = None,
    layers: Annotated[bool, typer.Option("--layers", help="Also print per-layer kernel times and numeric errors.")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Replay a workload on the built-in numpy kernels and record the five stages.

    Builds seeded (or loaded) weights, prunes them to each layer's intended
    pattern, lowers every layer with the workload's backend profile (sparse, or
    dense with the reason), converts, and times the forward pass: per layer the
    chosen path against the dense path (interleaved) with the error versus an
    fp64 reference; per run the p50/p95/p99 latency, span minus busy time, the
    dense share, the speedup over a dense baseline timed in the same process,
    the quality versus the dense model, and whether sparsity beats a dense
    model narrowed to the same latency. Numbers and decisions are reproducible
    for a fixed seed; only timings vary. Progress goes to stderr.
    """
    from sparsedebug.core.io import check_output, save_record
    from sparsedebug.render.terminal.replay import fallback_table, kernel_table, lower_table, origin_note, summary_table
    from sparsedebug.sources.detect import load_workload, resolve_workload

    if output is not None:
        check_output(output, "-o")
    path = resolve_workload(workload)
    spec = load_workload(path)
    record = _run_with_progress(spec, path, repeats, quiet=json_out)
    if output is not None:
        save_record(record, output)
    if json_out:
        emit_json(record)
        return
    from sparsedebug.signoff.metrics import layer_rows
    from sparsedebug.signoff.report import run_figures

    figures = run_figures("run", record)
    out = console(wide)
    out.print(summary_table(record, figures))
    out.print(lower_table(record.graph, record.lower))
    fallbacks = fallback_table(record.lower)
    if fallbacks is not None:
        out.print(fallbacks)
    if layers:
        out.print(kernel_table(record, figures, layer_rows(record)))
    if spec.origin is not None:
        out.print(origin_note(spec.origin, path.name))
    if output is not None:
        out.print(f"wrote {output}")


def _run_with_progress(spec: Workload, path: Path, repeats: int | None, *, quiet: bool) -> RunRecord:
    """Replay with one progress bar per stage on stderr (none for --json or a non-terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from sparsedebug.records.run import STAGES
    from sparsedebug.sources.replay.replay import replay as run_replay

    stderr = err_console()
    with Progress(
        TextColumn("{task.description:<9}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=False,
        disable=quiet or not stderr.is_terminal,
    ) as bars:
        tasks: dict[str, TaskID] = {stage: bars.add_task(stage, total=None) for stage in STAGES}

        def progress(stage: str, done: int, total: int) -> None:
            task = tasks.get(stage)
            if task is not None:
                bars.update(task, completed=done, total=total)

        return run_replay(spec, repeats=repeats, progress=progress, source_path=path)


@handle_errors
def lower(
    workload: Annotated[str, typer.Argument(help="Workload YAML file, or the name of an embedded one.")],
    all_layers: Annotated[bool, typer.Option("--all", help="Also list non-linear layers (always dense).")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Show how a workload lowers on its backend profile, without timing anything.

    For every linear layer: the intended pattern, the sparse path or the dense
    fallback with its reason (pattern not compliant, shape not aligned, dtype
    unsupported, op unsupported), and the bytes of values and index metadata.
    Weights are built and pruned exactly as `replay` does, so a loaded weights
    file that does not comply with its declared pattern shows up here.
    """
    from sparsedebug.render.terminal.replay import fallback_table, lower_table
    from sparsedebug.sources.detect import load_workload, resolve_workload
    from sparsedebug.sources.replay.replay import plan

    path = resolve_workload(workload)
    spec = load_workload(path)
    graph, stage = plan(spec, path)
    if json_out:
        emit_json(stage)
        return
    out = console(wide)
    out.print(lower_table(graph, stage, linear_only=not all_layers))
    fallbacks = fallback_table(stage)
    if fallbacks is not None:
        out.print(fallbacks)


def register(app: typer.Typer) -> None:
    """Add `replay` and `lower` to the app."""
    app.command("replay")(replay)
    app.command("lower")(lower)
