"""`sparsedebug import trace|nsys|rocprof|trt-engine|ncu|smi|power|trtlog` (and any registered importer) and `sparsedebug fallbacks`: real
accelerator artifacts in."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text
from typer.core import TyperGroup

from sparsedebug.cli.common import (
    EXIT_CHECK_FAILED,
    AllowDifferentOption,
    ExecutorOption,
    JsonOption,
    OutputOption,
    WideOption,
    allowed_dimensions,
    console,
    emit_json,
    err_console,
    handle_errors,
    load_run_set_with_progress,
    rank_pair,
    say_comparability,
)
from sparsedebug.cli.trace_output import FileArg, IterationsOption, LayersOption, print_trace

if TYPE_CHECKING:
    pass


class ImportGroup(TyperGroup):
    """``sparsedebug import``: its own commands, plus one generic command per registered importer that has none.

    The generic command is built when looked up from the registry (``sources.registry``), so a
    format registered there is importable with no edit here.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        """The group's commands and every registered importer's."""
        from sparsedebug.sources.registry import importers

        own = super().list_commands(ctx)
        return own + [k.command for k in importers() if k.command is not None and k.command not in own]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """A command of the group, else the generic command of the importer registered under ``cmd_name``."""
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        from sparsedebug.sources.registry import importer

        kind = importer(cmd_name)
        return None if kind is None else _generic_command(kind.name, kind.command or cmd_name, kind.what)


import_app = typer.Typer(
    cls=ImportGroup,
    help=(
        "Import artifacts written on real accelerators: PyTorch profiler traces, Nsight Systems exports, rocprofv3 kernel traces and "
        "TensorRT engine exports (as run records), "
        "Nsight Compute CSV, nvidia-smi CSV logs, power and energy logs and TensorRT build logs."
    ),
    no_args_is_help=True,
)


def _generic_command(kind_name: str, command: str, what: str) -> Any:
    """``sparsedebug import COMMAND FILE``: a registered importer without options of its own: its record, its layers."""
    holder = typer.Typer()

    @holder.command(command, help=f"Import {what} as a five-stage run record (-o writes it, --json prints it).")
    @handle_errors
    def run(
        file: FileArg,
        wide: WideOption = False,
        output: OutputOption = None,
        layers: Annotated[int, typer.Option(help="Show at most this many layers in the table (0: none).", min=0)] = 30,
        json_out: JsonOption = False,
    ) -> None:
        from sparsedebug.core.io import check_output, save_record
        from sparsedebug.render.terminal.importers import layer_table
        from sparsedebug.sources.detect import load_run

        if output is not None:
            check_output(output, "-o")
        record = load_run(file, accept=(kind_name,))
        if output is not None:
            save_record(record, output)
        if json_out:
            emit_json(record)
            return
        out = console(wide)
        if layers:
            from sparsedebug.signoff.metrics import layer_rows

            out.print(layer_table(record, layer_rows(record), limit=layers))
        if output is not None:
            out.print(f"wrote {output}")

    return typer.main.get_command(holder)


LastStepOption = Annotated[
    bool, typer.Option("--include-last-step", help="HTA convention row: keep the last ProfilerStep (HTA's include_last_profiler_step=True).")
]


@import_app.command("trace")
@handle_errors
def trace(
    file: FileArg,
    wide: WideOption = False,
    output: OutputOption = None,
    layers: LayersOption = 30,
    iterations: IterationsOption = 30,
    include_last_step: LastStepOption = False,
    allow_dropped: Annotated[
        bool, typer.Option("--allow-dropped", help="Import a trace whose kernel events all lack usable timing (negative or no dur); "
                           "without it such a trace is refused (exit 2): a run without its kernels measures none of them.")
    ] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML page here: GPU timeline of one iteration, latency, per-layer time.")] = None,
    executor: Annotated[
        str, typer.Option("--executor", help="Run sets: local (processes), inprocess, dask://HOST:PORT or a Dask scheduler file.")
    ] = "local",
    json_out: JsonOption = False,
) -> None:
    """Import a PyTorch profiler Chrome trace (.json or .json.gz) as a five-stage run record.

    FILE may be a run set (a directory or quoted glob of per-rank traces): each rank
    is summarised in its own worker (--executor), with the straggler; -o writes the set.

    A layer is what the model called: a record_function annotation, else a module
    call (with_stack traces), else the top-level aten op (named like
    'linear#3 [11008x4096]', stable across profiles of the same model); kernel
    names only where no CPU op is under the kernels (CUDA-graph replays). Op kind
    and shapes come from the CPU ops, the path from the kernel classes (sparse
    GEMM, dense tensor-core GEMM, fp32 GEMM, attention, communication, elementwise,
    copy, reduction, other); attention and linear layers record their backend
    (flash/efficient/cudnn/math, cuSPARSELt...), input dtypes and strides.
    Training traces: layers of the backward and optimizer phases are prefixed
    'backward:' and 'optimizer:'. Iterations come from ProfilerStep ranges, else
    the period of the repeating call sequence, else CUDA-graph launches.

    Prints GPU busy time (union across streams) against the span and splits the
    idle time into host wait (the GPU waited for the CPU to launch) and kernel
    wait, and Holistic Trace Analysis's compute / non-compute / idle breakdown
    under our convention (all iterations) and HTA's (last ProfilerStep dropped).
    With -o, writes the run record for bisect, classify and fallbacks; with
    --html, a page with the figures (the median iteration's GPU timeline, kernels
    coloured by class and idle gaps split into host and kernel wait). With
    --json, prints {"summary": ..., "record": ...}.
    """
    from sparsedebug.core.io import atomic_write_text, check_output, save_record
    from sparsedebug.sources.detect import load_trace
    from sparsedebug.sources.runset.discover import is_run_set

    for path, opt in ((output, "-o"), (html, "--html")):
        if path is not None:
            check_output(path, opt)
    if is_run_set(str(file)):
        return _trace_set(str(file), executor, output, json_out, wide)
    with err_console().status(Text(f"reading {file}")):
        result = load_trace(file, include_last_step=include_last_step, allow_dropped=allow_dropped)
    page = None
    if html is not None:
        from sparsedebug.render.html.trace import render_trace_html
        from sparsedebug.signoff.metrics import layer_rows
        from sparsedebug.signoff.report import run_figures

        page = render_trace_html(result, run_figures("run", result.record), layer_rows(result.record))
    if output is not None:
        save_record(result.record, output)
    if html is not None and page is not None:
        atomic_write_text(html, page)
    if json_out:
        emit_json(result)
        return
    print_trace(result, wide=wide, layers=layers, iterations=iterations, written=[path for path in (output, html) if path is not None])


def _trace_set(argument: str, executor: str, output: Path | None, json_out: bool, wide: bool) -> None:
    """`import trace DIR|GLOB`: every rank summarised, with a progress bar per rank."""
    from sparsedebug.core.io import save_record
    from sparsedebug.locate.ranks import straggler
    from sparsedebug.render.terminal.ranks import rank_set_table, straggler_line

    rank_set = load_run_set_with_progress(argument, executor)
    if output is not None:
        save_record(rank_set, output)
    if json_out:
        emit_json(rank_set)
        return
    out = console(wide)
    out.print(rank_set_table(rank_set))
    out.print(straggler_line(straggler(rank_set)))
    if output is not None:
        out.print(f"wrote {output}")


@import_app.command("ncu")
@handle_errors
def ncu(file: FileArg, wide: WideOption = False, json_out: JsonOption = False) -> None:
    """Read Nsight Compute --csv output (details page; banner lines are skipped).

    Per kernel: duration, SM and memory throughput (% of peak), the bound by
    NVIDIA's Speed-of-Light rule (both below 60%: latency; else the higher one
    when 10+ points apart; else balanced) and local-memory spill requests.
    """
    from sparsedebug.render.terminal.importers import ncu_table
    from sparsedebug.sources.importers.ncu import load_ncu

    report = load_ncu(file)
    if json_out:
        emit_json(report)
        return
    console(wide).print(ncu_table(report))


@import_app.command("smi")
@handle_errors
def smi(
    file: FileArg,
    max_clock: Annotated[
        float | None, typer.Option("--max-clock", help="Reference max SM clock in MHz (default: a clocks.max.sm column, else the max observed).")
    ] = None,
    samples: Annotated[bool, typer.Option("--samples", help="With --json, include every sample row.")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Read an nvidia-smi --query-gpu=... --format=csv log.

    Decodes clocks_event_reasons.active (older drivers: clocks_throttle_reasons.active)
    into named reasons and summarises, per GPU, the SM clock drop under load versus
    the max clock, power, temperature, and the time spent under each reason: the
    evidence for the thermal/power mechanism.
    """
    from sparsedebug.render.terminal.importers import smi_table
    from sparsedebug.sources.importers.nvidia_smi import load_smi
    report = load_smi(file, max_clock_mhz=max_clock)
    if json_out:
        emit_json(report if samples else report.model_copy(update={"samples": []}))
        return
    console(wide).print(smi_table(report))


def _utc_time(text: str, option: str) -> float:
    """A --from/--to value: UTC seconds since the epoch, or an ISO 8601 time (UTC when it names no zone)."""
    import math
    from datetime import UTC, datetime

    from sparsedebug.core.errors import UserError

    try:
        seconds = float(text)
    except ValueError:
        try:
            stamp = datetime.fromisoformat(text.strip())
        except ValueError as exc:
            from sparsedebug.sources.importers.alignment import calendar_problem

            reason = calendar_problem(exc)
            if reason is not None:
                raise UserError(f"{option} {text!r}: no such date or time: {reason}") from None
            raise UserError(f"{option} {text!r}: expected UTC seconds since the epoch or an ISO 8601 time like 2026-11-29T23:42:36.5Z") from None
        return (stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)).timestamp()
    from sparsedebug.sources.importers.power.channels import MAX_EPOCH_S

    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_EPOCH_S:
        raise UserError(f"{option} {text!r}: expected UTC seconds since the epoch (before year 10000) or an ISO 8601 time")
    return seconds


@import_app.command("power")
@handle_errors
def power(
    file: FileArg,
    utc_offset: Annotated[
        float | None, typer.Option("--utc-offset", help="Hours the log's clock is ahead of UTC, for logs whose timestamps carry no zone "
                                   "(nvidia-smi; CodeCarbon without a zone); 0 on a UTC machine.")
    ] = None,
    start: Annotated[str | None, typer.Option("--from", help="Start of a window to measure: UTC seconds or an ISO 8601 time.")] = None,
    end: Annotated[str | None, typer.Option("--to", help="End of the window (with --from).")] = None,
    device: Annotated[str | None, typer.Option("--device", help="Measure one GPU (as the file names it); default: all, summed.")] = None,
    readings: Annotated[bool, typer.Option("--readings", help="With --json, include every reading.")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Read a power or energy log: nvidia-smi CSV, dcgm-exporter metrics, Zeus CSV or CodeCarbon emissions.csv.

    The format is told by the content. Each reading is kept as its own channel (power.draw,
    power.draw.instant and power.draw.average are different readings) with what it measures, its scope
    (board power, not wall power) and its update period. With --from and --to, the energy of that
    window: from a counter's difference, else power integrated over the sampling interval, or why it
    cannot be measured (too short for the update period, not covered, not placed in time).
    """
    from sparsedebug.core.errors import UserError
    from sparsedebug.records.run import TimeWindow
    from sparsedebug.render.terminal.power import power_log_table, window_energy_table
    from sparsedebug.sources.importers.power import energy_in_window, load_power_log

    if (start is None) != (end is None):
        raise UserError("--from and --to go together: give both, or neither")
    window = None
    if start is not None and end is not None:
        window = TimeWindow(start_utc_s=_utc_time(start, "--from"), end_utc_s=_utc_time(end, "--to"), source="--from/--to")
        if window.end_utc_s <= window.start_utc_s:
            raise UserError(f"--to {end!r} is not after --from {start!r}")
    log = load_power_log(file, utc_offset)
    energy = energy_in_window(log, window, device) if window is not None else None
    if json_out:
        emit_json({"log": log if readings else log.model_copy(update={"readings": {}}), "energy": energy})
        return
    out = console(wide)
    out.print(power_log_table(log))
    if energy is not None:
        out.print(window_energy_table(energy))


@import_app.command("trtlog")
@handle_errors
def trtlog(
    file: FileArg,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when any eligible layer did not get a sparse implementation.")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Read a TensorRT build log's (Sparsity) lines: eligible, picked, and the dense fallbacks.

    Accepts both the [TRT] and the older [TensorRT] INFO: prefixes, fused layer
    names (Conv_619 + Relu_620) and empty lists. Fallback = eligible - picked.
    A build whose options say Sparsity: Disabled, or a log with no (Sparsity) lines,
    is reported as a finding with the flag that enables sparsity (exit 0).
    """
    from sparsedebug.render.terminal.importers import trt_build_sparsity_lines, trt_table
    from sparsedebug.sources.importers.tensorrt_log import load_trt_log

    report = load_trt_log(file)
    if json_out:
        emit_json(report)
    else:
        out = console(wide)
        findings = trt_build_sparsity_lines(report)
        if report.sparsity_lines:
            out.print(trt_table(report))
        for line in findings:
            out.print(line, markup=False, soft_wrap=True)
    if check and report.fallback:
        raise typer.Exit(EXIT_CHECK_FAILED)


@import_app.command("trt-engine")
@handle_errors
def trt_engine(
    graph: Annotated[Path, typer.Argument(
        help="The engine's layer info (trtexec --exportLayerInfo, with --profilingVerbosity=detailed), or a folder of its trtexec exports.",
        show_default=False)],
    profile: Annotated[Path | None, typer.Option("--profile", help="Per-layer times: trtexec --exportProfile JSON.")] = None,
    times: Annotated[Path | None, typer.Option("--times", help="Per-inference times: trtexec --exportTimes JSON (the latency samples).")] = None,
    log: Annotated[Path | None, typer.Option("--log", help="The trtexec build log: device, build options, (Sparsity) lines.")] = None,
    wide: WideOption = False,
    output: OutputOption = None,
    layers: Annotated[int, typer.Option(help="Show at most this many layers in the table (0: none; --json has all).", min=0)] = 80,
    json_out: JsonOption = False,
) -> None:
    """Import a TensorRT engine from trtexec's exports as a five-stage run record: were the sparse kernels used?

    Per layer: type, precision and formats, tactic, weights and HasSparseWeights, the
    profiled median time and share. The lower stage says whether the build had
    sparsity enabled, whether the weights carry 2:4 (HasSparseWeights), whether a
    sparse tactic was picked, and why not (not eligible, not picked, sparsity disabled
    at build). GRAPH may be a folder holding one engine's exports (layer info,
    profile, times, .log; TREx's metadata files are read for the device). With -o,
    writes the run record (for bisect, gate, playbook run); --json prints it.
    """
    from sparsedebug.core.io import check_output, save_record
    from sparsedebug.locate.lower import sparse_use
    from sparsedebug.render.markdown.engine import use_text
    from sparsedebug.render.terminal.importers import engine_table
    from sparsedebug.sources.importers.tensorrt_engine import import_engine

    if output is not None:
        check_output(output, "-o")
    record = import_engine(graph, profile=profile, times=times, log=log)
    if output is not None:
        save_record(record, output)
    if json_out:
        emit_json(record)
        return
    out = console(wide)
    engine = record.source.engine
    device = record.device.label() if record.device is not None else "device not given (--log)"
    if engine is not None:
        out.print(f"{record.name}: {engine.layers} layers on {device}; build precision {engine.precision or 'not given'}, "
                  f"profiled over {engine.profiled_runs or '-'} inferences" + (f", {engine.times} timed inferences" if engine.times else ""),
                  markup=False, soft_wrap=True)
    if layers:
        out.print(engine_table(record, limit=layers))
    use = sparse_use(record)
    if use is not None:
        out.print("sparse kernels used: " + use_text(use).replace("`", ""), markup=False, soft_wrap=True)
    if output is not None:
        out.print(f"wrote {output}")


def fallbacks(
    base: Annotated[Path, typer.Argument(help="Baseline: a run record (.json/.yaml), a trace (.json/.json.gz) or another imported artifact "
                                         "(a TensorRT engine's exports).", show_default=False)],
    cand: Annotated[Path, typer.Argument(help="Candidate: a run record, a trace or another imported artifact.", show_default=False)],
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 on an unintended path change or a declared-sparse layer that ran dense.")
    ] = False,
    executor: ExecutorOption = "local",
    allow_different: AllowDifferentOption = None,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Count dense fallbacks: every layer whose kernel class changed from BASE to CAND.

    A change is unintended when the candidate did not declare the layer sparse
    (a neighbouring op that fell onto another, often fp32 or slower, path). Also
    lists candidate layers declared sparse that ran dense. The two runs must be
    comparable first (same model by layer shapes, device, phase, tokens, dtype; see
    --allow-different): a pair that is not is refused with exit 2.

    BASE and CAND may be run sets (a directory or quoted glob of per-rank traces): every rank is
    compared with the same rank of the other set (printed first), then the rank the change is
    confined to (else the straggler, else the lowest rank) is analysed as a pair.
    """
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.locate.paths import compare_paths
    from sparsedebug.render.terminal.importers import class_delta_table, fallback_table
    from sparsedebug.sources.detect import load_run
    from sparsedebug.sources.registry import input_kinds

    base, cand, ranks = rank_pair(base, cand, executor, json_out=json_out, wide=wide)
    imported = [k.name for k in input_kinds() if k.capabilities is None or not k.capabilities.replayed]  # records and imports
    pair = require_comparable(
        load_run(base, accept=imported), load_run(cand, accept=imported), allowed_dimensions(allow_different)
    )
    if not json_out:
        say_comparability(pair.check, err_console())
    report = compare_paths(pair.base, pair.cand)
    if json_out:
        emit_json(report if ranks is None else {"ranks": ranks, "fallbacks": report})
    else:
        out = console(wide)
        if report.changed:
            out.print(fallback_table(report))
        else:
            out.print(f"no matched layer changed kernel class ({report.matched_layers} layers matched)")
        if report.matched_layers == 0 or report.only_in_base or report.only_in_cand:
            out.print(class_delta_table(report))
    if check and (report.unintended or report.dense_fallbacks):
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add `import` (trace, nsys, rocprof, trt-engine, ncu, smi, power, trtlog, and every registered importer) and `fallbacks` to the app."""
    from sparsedebug.cli.profiles import register as register_profiles

    register_profiles(import_app)
    app.add_typer(import_app, name="import")
    app.command("fallbacks")(handle_errors(fallbacks))
