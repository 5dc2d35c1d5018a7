"""Render a gate result as a rich table (pure function)."""

from __future__ import annotations

from rich.table import Table

from sparsedebug.records.gate import GateResult
from sparsedebug.render.terminal.fit import optional, under

_STYLE = {
    "pass": "[green]pass[/green]",
    "fail": "[red]FAIL[/red]",
    "skipped": "[yellow]skipped[/yellow]",
    "inconclusive": "[yellow]inconclusive[/yellow]",
}


def gate_table(result: GateResult) -> Table:
    """One row per threshold: status, measured, threshold, detail."""
    verdict = "[red]FAILED[/red]" if not result.passed else ("[yellow]INCONCLUSIVE[/yellow] (no check failed)" if result.inconclusive else "[green]passed[/green]")
    table = Table(title=f"gate {verdict}: {result.candidate} vs {result.baseline}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("measured", overflow="fold")
    table.add_column("threshold", overflow="fold")
    table.add_column("detail", overflow="fold")
    for check in result.checks:
        style = _STYLE[check.status]
        if check.status == "inconclusive":
            style = f"[{'red' if check.fails_gate else 'yellow'}]{check.status_label}[/]"
        table.add_row(check.id, style, check.measured, check.threshold, check.detail)
    optional(table, "threshold")
    under(table, "detail")
    return table
