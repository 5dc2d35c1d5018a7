"""What `import trace`, `import nsys` and `import rocprof` print for one imported timeline, and their file argument."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from sparsedebug.cli.common import console

if TYPE_CHECKING:
    from sparsedebug.sources.importers.trace.importer import TraceImport

FileArg = Annotated[Path, typer.Argument(help="The artifact file to read.", show_default=False)]
LayersOption = Annotated[int, typer.Option(help="Show at most this many layers in the table (0: none).", min=0)]
IterationsOption = Annotated[int, typer.Option(help="Show at most this many iterations in their table (0: none; --json has all).", min=0)]


def print_trace(result: TraceImport, *, wide: bool, layers: int, iterations: int, written: list[Path]) -> None:
    """The import's tables and notes, for people."""
    from sparsedebug.render.terminal.importers import (
        class_table,
        iterations_table,
        layer_table,
        path_counts,
        streams_table,
        temporal_table,
        trace_summary_table,
    )
    from sparsedebug.render.words.sources_trace import skipped_words

    out = console(wide)
    out.print(trace_summary_table(result.summary))
    if iterations:
        out.print(iterations_table(result.summary, limit=iterations))
    out.print(temporal_table(result.summary))
    if len(result.summary.streams) > 1:
        out.print(streams_table(result.summary))
    out.print(class_table(result.summary.by_class_ms))
    if len(result.summary.phases_ms) > 1:
        out.print("GPU busy by phase: " + ", ".join(f"{phase} {ms:.3f} ms" for phase, ms in result.summary.phases_ms.items()))
    if layers:
        from sparsedebug.signoff.metrics import layer_rows

        out.print(layer_table(result.record, layer_rows(result.record), limit=layers))
    counts = path_counts(result.record)
    out.print("layers by class: " + ", ".join(f"{cls} {n}" for cls, n in sorted(counts.items())))
    for reason, count in result.summary.skipped_events.items():
        out.print(Text(f"skipped {count} event(s): {skipped_words(reason)}", style="yellow"))
    for path in written:
        out.print(f"wrote {path}")
