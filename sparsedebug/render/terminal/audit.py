"""Render a checkpoint audit as a rich table (pure function)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparsedebug.records.audit import CheckpointAudit, StackFinding, TensorAudit
from sparsedebug.render.words.notes import say

_STATUS = {
    "compliant": ("compliant", "green"),
    "violations": ("VIOLATIONS", "red"),
    "dense": ("dense", ""),
    "shape": ("shape", "yellow"),
    "not_a_matrix": ("not a matrix", "dim"),
}
_STACK = {
    "sparse": ("sparse", "green"), "eligible": ("eligible", "green"), "dense": ("dense", "red"), "unknown": ("unknown", "yellow"),
}


def _backend(t: TensorAudit) -> str | Text:
    if t.backend_path is None:
        return "-"
    when = " once pruned" if t.backend_judged == "once_pruned" else ""
    if t.backend_path == "sparse":
        return Text(f"sparse{when}", style="green")
    return f"dense{when}: {t.backend_reason or '?'}"


def _stack(t: TensorAudit) -> str | Text:
    if t.stack is None:
        return "-"
    rules = sorted({f.rule for f in t.stack.findings})
    ok = t.stack.verdict in ("sparse", "eligible")
    text = Text.assemble(_STACK[t.stack.verdict], f" ({t.stack.path})" if t.stack.path and ok else "")
    return text.append(f": {', '.join(rules).replace('_', ' ')}" if rules and not ok else "")


def _finding(f: StackFinding) -> str:
    rows = f" (rows {', '.join(map(str, f.rows))})" if f.rows else ""
    cite = f" [{'; '.join(c.source for c in f.cite)}]" if f.cite else ""
    return f"{f.rule.replace('_', ' ')}: {say(f.facts)}{rows}{cite}"


def audit_view(audit: CheckpointAudit, *, wide: bool = False) -> RenderableType:
    """One row per tensor (vectors folded into a count unless ``wide``), then what --check would fail on and the stack's reasons."""
    title = f"{audit.file.path}: {audit.pattern} against {audit.backend}" + (f" and {audit.stack}" if audit.stack else "")
    table = Table(title=title)
    table.add_column("tensor", overflow="fold")
    table.add_column("shape")
    table.add_column("dtype")
    table.add_column("N:M", overflow="fold")
    table.add_column("violating", justify="right")
    table.add_column("-0.0", justify="right")
    table.add_column("backend", overflow="fold")
    if audit.stack:
        table.add_column(audit.stack, overflow="fold")
    hidden = 0
    for t in audit.tensors:
        if t.status == "not_a_matrix" and not wide:
            hidden += 1
            continue
        # a tensor not meant to be sparse has no violations to count: its share of non-compliant groups is no finding
        violating = "-" if t.violating_fraction is None or t.status == "dense" else f"{t.violating_fraction:.2%}"
        row: list[str | Text] = [t.name, "x".join(map(str, t.shape)), t.dtype, Text(*_STATUS[t.status]), violating, str(t.negative_zeros) if t.negative_zeros else "-", _backend(t)]
        if audit.stack:
            row.append(_stack(t))
        table.add_row(*row)
    lines = Text()
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(audit.counts.items()))
    lines.append(f"{len(audit.tensors)} tensors: {counts}" + (f" ({hidden} vectors not listed; --wide lists them)" if hidden else "") + "\n")
    matrices = [t for t in audit.tensors if t.status != "not_a_matrix"]
    if matrices and all(t.status in ("dense", "shape") for t in matrices):
        lines.append(
            f"a dense checkpoint: no matrix is meant to be {audit.pattern} (fewer than {audit.meant_sparse_threshold:.0%} of its "
            "groups comply), so none has violations; the backend column says how each would run once pruned\n"
        )
    for t in audit.tensors:
        if t.status == "violations":
            rows = ", ".join(map(str, t.first_violating_rows))
            lines.append(f"meant to be {audit.pattern} but {t.violating_groups} of {t.groups} groups violate: {t.name} (rows {rows})\n", style="red")
    for t in audit.tensors:
        if t.negative_zeros:
            rows = ", ".join(map(str, t.negative_zero_rows))
            broken = (
                f"; {t.bitwise_violating_groups} group(s) compliant by value break {audit.pattern} for a compressor that tests bits (rows {', '.join(map(str, t.bitwise_violating_rows))})"
                if t.bitwise_violating_groups
                else ""
            )
            lines.append(f"{t.negative_zeros} element(s) stored as -0.0 in {t.name} (rows {rows}){broken}\n", style="yellow")
    for t in audit.tensors:
        if t.backend_reason == "shape_not_aligned" and t.backend_detail:
            lines.append(f"shape not aligned on {audit.backend}: {t.name} {'x'.join(map(str, t.shape))}: {say(t.backend_detail)}\n", style="yellow")
    if audit.stack:
        stack_counts = ", ".join(f"{n} {v}" for v, n in sorted(audit.stack_counts.items()))
        lines.append(f"{audit.stack} ({audit.stack_title}): {stack_counts or 'no matrices'}\n", style="bold")
        grouped: dict[str, list[str]] = {}
        for t in audit.tensors:
            if t.stack is None or (t.stack.verdict in ("sparse", "eligible") and not wide):
                continue
            for f in t.stack.findings:
                rows = f" (rows {', '.join(map(str, f.rows))})" if f.rows else ""
                grouped.setdefault(_finding(f.model_copy(update={"rows": []})), []).append(t.name + rows)
        for text, names in grouped.items():
            listed = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            lines.append(f"{text}: {listed}\n", style="red")
        shown: set[str] = set()
        for t in audit.tensors:
            for f in t.stack.caveats if t.stack is not None else []:
                key = f"{f.rule}:{say(f.facts)}"
                if key not in shown:
                    shown.add(key)
                    lines.append(f"caveat: {_finding(f)}\n", style="dim")
    return Group(table, lines)
