"""What every command shares: options, consoles, JSON output and the error contract.

Exit codes: 0 ok, 1 a check failed (drift, gate; an inconclusive gate check fails
it under its policy's ``on_inconclusive: fail``, the default), 2 bad input or usage
(two runs that are not comparable among them). A
``UserError`` becomes its message on stderr and exit 2, with no traceback. SIGINT,
SIGTERM and SIGHUP end a command through its cleanup (nothing half-written stays)
with one line on stderr and exit 128 + the signal number (130, 143, 129).
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console

from sparsedebug.core.errors import UnverifiedClaim, UserError
from sparsedebug.core.signals import Interrupted, signals_as_exceptions

if TYPE_CHECKING:
    from rich.progress import Progress

    from sparsedebug.records.comparability import Comparability, Dimension
    from sparsedebug.records.ranks import RankComparison, RankSet
    from sparsedebug.sources.runset.parse import OnRank

P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
"""Bad input or usage, two runs that are not comparable included."""
EXIT_UNVERIFIED = 3
"""An internal error: a text about to be published states what its review document does not carry."""

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON on stdout and nothing else there.")
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the record here (.yaml/.yml for YAML, else JSON); atomic.")
]


class Different(StrEnum):
    """What ``--allow-different`` may let differ between two compared runs (``records.comparability.DIMENSIONS``)."""

    MODEL = "model"
    DEVICE = "device"
    PHASE = "phase"
    TOKENS = "tokens"
    DTYPE = "dtype"
    LAUNCH = "launch"


AllowDifferentOption = Annotated[
    list[Different] | None,
    typer.Option(
        "--allow-different",
        help="Compare although the two runs differ in this (repeatable): model (layers matched by op and shape), "
        "device (and backend family), phase (inference, training step), tokens per call, dtype of the compute, "
        "launch (eager, CUDA graph, compiled). "
        "Without it such a pair is refused (exit 2) with what differs; the output and the memo state what was allowed.",
        case_sensitive=False,
    ),
]


def allowed_dimensions(values: list[Different] | None) -> list[Dimension]:
    """The ``--allow-different`` values as comparability dimensions."""
    return [value.value for value in values or []]


def say_comparability(check: Comparability, err: Console) -> None:
    """The comparability notes and what was allowed to differ, on stderr (stdout stays for tables and JSON)."""
    from sparsedebug.render.words.locate_text import comparability_lines

    for line in comparability_lines(check):
        err.print(f"note: {line}", markup=False, highlight=False)


LatencyOption = Annotated[
    tuple[Path, Path] | None,
    typer.Option("--latency", metavar="BASE CAND", help="Untraced per-forward latencies of the baseline and the candidate "
                 "(CSV or JSON, one value per forward: CUDA-event timings, torch.utils.benchmark times), the same runs "
                 "timed with the profiler off: the outcome is judged on them instead of the traces' own iteration times, "
                 "which carry the profiler's cost per op."),
]

SmiUtcOffsetOption = Annotated[
    float | None,
    typer.Option("--smi-utc-offset", help="Hours the nvidia-smi log's clock is ahead of UTC (0 on a UTC machine): its timestamps "
                 "carry no zone. Without this the offset the run's fingerprint records is used (freeze writes it); with "
                 "neither the log is not aligned to the traces and is context only."),
]

WideOption = Annotated[
    bool,
    typer.Option("--wide", help="Print every table column at full width; by default tables fold long names and leave out "
                 "optional columns to fit the terminal."),
]


class _FittingConsole(Console):
    """A console whose tables fit its width (``render.terminal.fit``), or print at full width when ``wide``."""

    def __init__(self, *, wide: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wide = wide

    def print(self, *objects: Any, **kwargs: Any) -> None:
        from sparsedebug.render.terminal.fit import fit, natural_width

        fitted = [fit(self, obj, self.width, wide=self.wide) for obj in objects]
        if not (self.wide and fitted):
            super().print(*fitted, **kwargs)
            return
        width = self.width
        self.width = max(width, max(natural_width(self, obj) for obj in fitted))  # rich never prints wider than the console
        try:
            super().print(*fitted, **kwargs)
        finally:
            self.width = width


def console(wide: bool = False) -> Console:
    """Console for people (stdout). Width follows $COLUMNS, which tests pin; tables fit it unless ``wide``.

    Markup is off: every string printed, table title and cell included, is shown as written (a path or layer name
    holding ``[/x]`` is text, never a style tag); renderers style with :class:`rich.text.Text`."""
    return _FittingConsole(highlight=False, markup=False, wide=wide)


def err_console() -> Console:
    """Console for diagnostics (stderr); markup off as in :func:`console`."""
    return Console(stderr=True, highlight=False, markup=False)


def note_block_pattern(text: str) -> None:
    """Say on stderr how a ``V:N:M`` pattern was read (``2:4:8`` is V=2 rows per block, 4 of every 8 kept),
    so that a three-part pattern is never taken silently; a malformed one is left to the command's own check."""
    from sparsedebug.kernels.masks import describe_pattern, parse_pattern

    try:
        parsed = parse_pattern(text)
    except UserError:
        return
    if parsed.block is not None:
        err_console().print(f"pattern {describe_pattern(parsed)}", markup=False, highlight=False)


def emit_json(data: Any) -> None:
    """Print strict JSON to stdout (a NaN or infinity is null): a pydantic record, a list of them, or plain data."""
    from sparsedebug.core.io import dumps_json

    typer.echo(dumps_json(to_jsonable(data)))


def to_jsonable(data: Any) -> Any:
    """Turn records (and lists/dicts of records) into plain JSON data."""
    from pydantic import BaseModel  # here: `--help` needs no pydantic

    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list | tuple):
        return [to_jsonable(item) for item in data]
    if isinstance(data, dict):
        return {str(key): to_jsonable(value) for key, value in data.items()}
    return data


def report_error(lines: list[str], exit_code: int, *, as_json: bool) -> None:
    """Say why a command stopped: ``error: LINE`` on stderr per line, and with ``--json`` also the JSON error
    object ``{"error": {"exit_code", "message", "lines"}}`` on stdout, so that a JSON reader never gets nothing."""
    lines = lines or ["error"]
    for line in lines:
        typer.echo(f"error: {line}", err=True)
    if as_json:
        emit_json({"error": {"exit_code": exit_code, "message": lines[0], "lines": lines}})


def _error_lines(exc: UserError) -> list[str]:
    """A bad-input error's lines; a pair refused as not comparable is worded in full from its check."""
    from sparsedebug.locate.comparable import NotComparableError
    from sparsedebug.render.words.locate_text import refusal_text

    if isinstance(exc, NotComparableError):
        return [refusal_text(exc.check)]
    return str(exc).splitlines()


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command so a ``UserError`` prints one clean message and exits 2, a text that failed its claims check
    before publication (``UnverifiedClaim``) names its problems and exits 3, and a signal (SIGINT, SIGTERM, SIGHUP)
    unwinds through the cleanup and exits 128 + its number.

    An allocation that fails (``MemoryError``) is bad input for this machine: one line naming
    the memory limits (``core.budget.out_of_memory``), exit 2; so is a shared library the loader
    could not map under those limits (``core.budget.library_not_mapped``). With ``--json`` (the
    ``json_out`` parameter) the error is also a JSON object on stdout (:func:`report_error`).
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        as_json = bool(kwargs.get("json_out"))
        try:
            with signals_as_exceptions():
                return func(*args, **kwargs)
        except UserError as exc:
            report_error(_error_lines(exc), EXIT_BAD_INPUT, as_json=as_json)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        except UnverifiedClaim as exc:
            lines = [f"internal error (a bug to report): {exc.where} states what its review document does not carry; "
                     "nothing was published", *exc.problems]
            report_error(lines, EXIT_UNVERIFIED, as_json=as_json)
            raise typer.Exit(EXIT_UNVERIFIED) from None
        except MemoryError as exc:
            from sparsedebug.core.budget import out_of_memory

            report_error(str(out_of_memory(exc)).splitlines(), EXIT_BAD_INPUT, as_json=as_json)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        except Interrupted as exc:
            report_error([f"interrupted by {exc.name}; nothing half-written was left"], exc.exit_code, as_json=as_json)
            raise typer.Exit(exc.exit_code) from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG and exc.filename is not None:  # a path looked up before it was read
                report_error([f"{exc.filename}: name too long for the file system"], EXIT_BAD_INPUT, as_json=as_json)
                raise typer.Exit(EXIT_BAD_INPUT) from None
            if exc.errno not in _OUTPUT_STREAM_FULL or exc.filename is not None:
                raise
            _stream_failed(exc)
        except ImportError as exc:
            from sparsedebug.core.budget import library_not_mapped

            refused = library_not_mapped(exc)
            if refused is None:
                raise
            report_error(str(refused).splitlines(), EXIT_BAD_INPUT, as_json=as_json)
            raise typer.Exit(EXIT_BAD_INPUT) from None

    return wrapper


_OUTPUT_STREAM_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE}
"""A write to an open stream (stdout: ``> /dev/full``, a full disk, a closed pipe) that failed: bad ground for the
output, not a bug. Writes to a named file (``-o``) say so themselves (``core.io.atomic_write_text``)."""


def _stream_failed(exc: OSError) -> NoReturn:
    """Stop a command whose standard output cannot be written: one line on stderr and exit 2; a reader that closed
    the pipe (``| head``) ends it quietly with exit 1, as rich's console does for the tables. Standard output is
    pointed at ``/dev/null`` first, so that Python's flush at exit does not fail a second time with a traceback."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file behind stdout (a test's capture): nothing to redirect
        pass
    if exc.errno == errno.EPIPE:
        raise typer.Exit(EXIT_CHECK_FAILED)
    typer.echo(f"error: cannot write to standard output: {exc.strerror}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _rank_progress(label: str) -> tuple[Progress, OnRank]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), console=err_console(), transient=True)
    task = bar.add_task(label, total=None)
    return bar, lambda _summary, done, total: bar.update(task, completed=done, total=total)


def load_run_set_with_progress(argument: str, executor: str) -> RankSet:
    """A run set parsed through ``executor``, with a progress bar of ranks on stderr."""
    from sparsedebug.sources.detect import load_run_set

    bar, on_rank = _rank_progress(f"ranks of {argument}")
    with bar:
        return load_run_set(argument, executor=executor, on_rank=on_rank)


def rank_pair(base: Path, cand: Path, executor: str, *, json_out: bool, wide: bool) -> tuple[Path, Path, RankComparison | None]:
    """BASE and CAND as given, or, when they are run sets, the rank pair to analyse and the rank comparison
    (printed here as a table unless ``json_out``)."""
    from sparsedebug.sources.runset.discover import is_run_set

    if not (is_run_set(str(base)) or is_run_set(str(cand))):
        return base, cand, None
    from sparsedebug.locate.ranks import walk_pair  # run sets only: two files need none of it

    bar, on_rank = _rank_progress("ranks")
    with bar:
        comparison, base_file, cand_file = walk_pair(str(base), str(cand), executor=executor, on_rank=on_rank)
    if not json_out:
        from sparsedebug.render.terminal.ranks import rank_comparison_view

        console(wide).print(rank_comparison_view(comparison))
    return base_file, cand_file, comparison


def check_executor_option(value: str) -> str:
    """Refuse an ``--executor`` value that names no executor before any work (``sources.runset.executors``)."""
    if value != "local":
        from sparsedebug.sources.runset.executors import executor_kind

        try:
            executor_kind(value)
        except UserError as exc:
            raise typer.BadParameter(str(exc).split(": ", 1)[1]) from None
    return value


ExecutorOption = Annotated[
    str, typer.Option("--executor", callback=check_executor_option, help="Run sets (directories or globs of per-rank traces): local (processes), inprocess, dask://HOST:PORT or a Dask scheduler file.")
]
