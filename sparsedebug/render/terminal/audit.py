"""Render a checkpoint audit as a rich table (pure function)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparsedebug.records.audit import CheckpointAudit, TensorAudit

_STATUS = {
    "compliant": "[green]compliant[/green]",
    "violations": "[red]VIOLATIONS[/red]",
    "dense": "dense",
    "shape": "[yellow]shape[/yellow]",
    "not_a_matrix": "[dim]not a matrix[/dim]",
}


def _backend(t: TensorAudit) -> str:
    if t.backend_path is None:
        return "-"
    when = " once pruned" if t.backend_judged == "once_pruned" else ""
    if t.backend_path == "sparse":
        return f"[green]sparse{when}[/green]"
    return f"dense{when}: {t.backend_reason or '?'}"


def audit_view(audit: CheckpointAudit, *, wide: bool = False) -> RenderableType:
    """One row per tensor (vectors folded into a count unless ``wide``), then what --check would fail on."""
    table = Table(title=f"{audit.file.path}: {audit.pattern} against {audit.backend}")
    table.add_column("tensor", overflow="fold")
    table.add_column("shape")
    table.add_column("dtype")
    table.add_column("N:M", overflow="fold")
    table.add_column("violating", justify="right")
    table.add_column("backend", overflow="fold")
    hidden = 0
    for t in audit.tensors:
        if t.status == "not_a_matrix" and not wide:
            hidden += 1
            continue
        violating = "-" if t.violating_fraction is None else f"{t.violating_fraction:.2%}"
        table.add_row(t.name, "x".join(map(str, t.shape)), t.dtype, _STATUS[t.status], violating, _backend(t))
    lines = Text()
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(audit.counts.items()))
    lines.append(f"{len(audit.tensors)} tensors: {counts}" + (f" ({hidden} vectors not listed; --wide lists them)" if hidden else "") + "\n")
    for t in audit.tensors:
        if t.status == "violations":
            rows = ", ".join(map(str, t.first_violating_rows))
            lines.append(f"meant to be {audit.pattern} but {t.violating_groups} of {t.groups} groups violate: {t.name} (rows {rows})\n", style="red")
    return Group(table, lines)
