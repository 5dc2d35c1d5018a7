"""The page of one imported trace (``sparsedebug import trace FILE --html PAGE``).

The figures that fit a single run: the GPU timeline of its median iteration, the
latency of its iterations, kernel time per layer by path and the forward's busy
share; the whole-trace figures (span, busy, idle split) lead the page as a table.
"""

from __future__ import annotations

from sparsedebug.records.report import LayerRow, RunFigures
from sparsedebug.records.trace import TraceImport, TraceSummary
from sparsedebug.render.html.page import Table, figure_page, table_html
from sparsedebug.render.html.sections import (
    PageRun,
    Runs,
    clock,
    forward_section,
    latency_section,
    layer_section,
    timeline_section,
)


def summary_table(summary: TraceSummary) -> Table:
    """The whole trace's GPU timeline figures, with shares of the span."""

    def share(ms: float) -> str:
        return f"{ms / summary.span_ms:.1%}" if summary.span_ms > 0 else "-"

    rows = [
        ["span (first GPU op start to last end)", f"{summary.span_ms:.3f}", share(summary.span_ms)],
        ["GPU busy (union of kernels, memsets, memcpys)", f"{summary.busy_ms:.3f}", share(summary.busy_ms)],
        ["GPU idle", f"{summary.idle_ms:.3f}", share(summary.idle_ms)],
        ["idle: host wait (launch began after the GPU went idle)", f"{summary.host_wait_ms:.3f}", share(summary.host_wait_ms)],
        ["idle: kernel wait (launch was queued)", f"{summary.kernel_wait_ms:.3f}", share(summary.kernel_wait_ms)],
        ["idle: other (no linked launch)", f"{summary.other_wait_ms:.3f}", share(summary.other_wait_ms)],
    ]
    note = (
        f"{summary.device or 'device not named'}; {summary.gpu_ops} GPU ops ({summary.kernels} kernels); "
        f"{len(summary.iterations)} iteration(s) from {summary.iteration_source}; {summary.layers} layers"
        + ("" if summary.annotated else " (no annotations: one layer per kernel name)") + "."
    )
    return Table("The whole trace", ["figure", "ms", "of span"], rows, numeric=[False, True, True], note=note)


def render_trace_html(result: TraceImport, figures: RunFigures, layers: list[LayerRow]) -> str:
    """The single-run page of an imported trace (``figures`` and ``layers``: the run's, ``signoff.report.run_figures``
    and ``signoff.metrics.layer_rows``): summary table, then its figures and their tables."""
    run = result.record
    page = PageRun("run", run, figures, layers)
    runs: Runs = [page]
    sections = [timeline_section(runs), latency_section(runs), layer_section(None, page), forward_section(runs)]
    subtitle = f"PyTorch profiler trace {result.summary.file}, imported as a five-stage run record; latencies {clock(page)}."
    return figure_page(f"Trace {run.name}", subtitle, sections, lead=table_html(summary_table(result.summary), "summary"))
