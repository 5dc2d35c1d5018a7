"""Render a gate result as a rich table (pure function)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from sparsedebug.records.gate import GateResult
from sparsedebug.render.terminal.fit import optional, under

_STYLE = {
    "pass": ("pass", "green"),
    "fail": ("FAIL", "red"),
    "skipped": ("skipped", "yellow"),
    "inconclusive": ("inconclusive", "yellow"),
}


def gate_table(result: GateResult) -> Table:
    """One row per threshold: status, measured, threshold, detail."""
    verdict = Text("FAILED", style="red") if not result.passed else (
        Text.assemble(("INCONCLUSIVE", "yellow"), " (no check failed)") if result.inconclusive else Text("passed", style="green")
    )
    table = Table(title=Text.assemble("gate ", verdict, f": {result.candidate} vs {result.baseline}"))
    table.add_column("check")
    table.add_column("result")
    table.add_column("measured", overflow="fold")
    table.add_column("threshold", overflow="fold")
    table.add_column("detail", overflow="fold")
    for check in result.checks:
        style = Text(*_STYLE[check.status])
        if check.status == "inconclusive":
            style = Text(check.status_label, style="red" if check.fails_gate else "yellow")
        table.add_row(check.id, style, check.measured, check.threshold, check.detail)
    optional(table, "threshold")
    under(table, "detail")
    return table
