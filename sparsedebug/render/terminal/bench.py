"""Render kernel benchmark rows as a rich table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sparsedebug.records.bench import KernelBenchRow
from sparsedebug.records.timing import TimingQuality
from sparsedebug.render.terminal.fit import optional, under


def _ratio(value: float | None) -> Text:
    if value is None:
        return Text("-")
    return Text(f"{value:.2f}x", style="green" if value >= 1.0 else "red")


def timing_cell(quality: TimingQuality | None) -> str | Text:
    """``stable`` / ``unstable``, the flags seen (counts) and how many rounds were re-measured."""
    if quality is None:
        return "-"
    flags = ", ".join(f"{name} x{count}" for name, count in sorted(quality.flags.items()))
    text = quality.status + (f" ({flags}; {quality.remeasured_rounds} re-measured)" if flags else "")
    return Text(text, style="yellow") if not quality.stable else text


def kernel_bench_table(rows: Sequence[KernelBenchRow]) -> Table:
    """Median ms per variant and the ratios (baseline / kernel; above 1 is faster)."""
    first = rows[0]
    title = f"kernel bench {first.shape[0]}x{first.shape[1]} fp32, {first.pattern}, block {first.block}"
    table = Table(title=title)
    table.add_column("tokens", justify="right")
    for name in ("dense", "limit", "csr", "nm", "vnm"):
        table.add_column(f"{name} ms", justify="right")
    table.add_column("vnm vs dense", justify="right")
    table.add_column("vnm vs limit", justify="right")
    table.add_column("nm vs csr", justify="right")
    table.add_column("timing", overflow="fold")
    for row in rows:
        unstable = row.timing is not None and not row.timing.stable
        ratios = [Text("unstable", style="yellow") for _ in range(3)] if unstable else [_ratio(row.vnm_vs_dense), _ratio(row.vnm_vs_limit), _ratio(row.nm_vs_csr)]
        table.add_row(
            str(row.tokens),
            *("-" if value is None else f"{value:.2f}" for value in (row.dense_ms, row.limit_ms, row.csr_ms, row.nm_ms, row.vnm_ms)),
            *ratios,
            timing_cell(row.timing),
        )
    optional(table, "nm vs csr", "csr ms")
    under(table, "timing")
    table.caption = (
        f"this machine, measured: medians of {first.rounds} interleaved rounds; BLAS {first.blas}, "
        f"{first.blas_threads} thread(s); ratio = baseline ms / kernel ms; timing: rounds disturbed by other processes"
        + ("" if first.csr_ms is not None else escape("; csr: not timed, scipy is not installed (pip install 'sparsedebug[anchors]')"))
    )
    return table


def tails_table(rows: Sequence[KernelBenchRow]) -> Table:
    """p50/p95/p99 per variant and token count."""
    table = Table(title="tails (ms)")
    table.add_column("tokens", justify="right")
    table.add_column("variant")
    for label in ("p50", "p95", "p99"):
        table.add_column(label, justify="right")
    for row in rows:
        for name, pct in row.percentiles_ms.items():
            table.add_row(str(row.tokens), name, f"{pct.p50:.2f}", f"{pct.p95:.2f}", f"{pct.p99:.2f}")
    return table
