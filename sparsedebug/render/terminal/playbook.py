"""Render the playbook (``sparsedebug playbook show``) as rich tables: pure functions."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sparsedebug.records.playbook import Playbook


def _list(items: list[str]) -> str:
    return ", ".join(items) if items else "-"


def _table(title: str, columns: list[str], rows: list[tuple[str | Text, ...]], fold: tuple[str, ...] = ()) -> Table:
    """A titled table; the columns named in ``fold`` wrap instead of truncating."""
    table = Table(title=title)
    for name in columns:
        table.add_column(name, overflow="fold" if name in fold else "ellipsis", justify="right" if name == "#" else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _header(book: Playbook) -> Panel:
    header = Text()
    header.append(f"{book.title}\n", style="bold")
    header.append(f"{book.area} - playbook '{book.id}'\n\n")
    header.append(book.summary + "\n\n")
    header.append("Primary metric: ", style="bold")
    header.append(book.primary_metric.name + "\n")
    header.append("Review question: ", style="bold")
    header.append(book.review_question)
    return Panel(header, title="debug playbook", expand=True)


def playbook_view(book: Playbook) -> RenderableType:
    """The whole playbook: metric, concept diagram, steps, metrics, branches, pitfalls, owners, decisions."""
    diagram = " -> ".join(f"{s.label} [{s.stage}]" for s in book.concept.stages)
    parts: list[RenderableType] = [
        _header(book),
        Panel(Text(diagram), title=Text(book.concept.title)),
        _table("primary metric components", ["component", "record field", "unit", "better"],
               [(c.label, c.record_field, c.unit, c.better) for c in book.primary_metric.components]),
        _table("steps", ["#", "step", "command", "inputs -> outputs", "done when"],
               [(str(s.number), Text.assemble((s.id, "bold"), f": {s.title}"), s.command, f"{_list(s.inputs)} -> {_list(s.outputs)}", s.done_when)
                for s in book.steps], fold=("step", "inputs -> outputs", "done when")),
        _table("mechanisms (step 3 scores all five)", ["mechanism", "what it looks like"],
               [(m.id, m.summary) for m in book.mechanisms], fold=("what it looks like",)),
        _table("metrics and artifacts to collect", ["metric", "record field", "source"],
               [(m.label, m.record_field, m.source) for m in book.metrics], fold=("source",)),
        _table("debug branches", ["branch", "question", "evidence", "owner", "mechanisms"],
               [(b.title, b.question, b.evidence, book.owner(b.owner).title, _list(b.mechanisms)) for b in book.branches],
               fold=("question", "evidence")),
        _table("common pitfalls", ["pitfall", "how sparsedebug guards against it"],
               [(p.text, p.guard) for p in book.pitfalls], fold=("pitfall", "how sparsedebug guards against it")),
        _table("required owners", ["owner", "accountable for", "signs memo"],
               [(o.title, o.accountable_for, "yes" if o.id in book.memo.required_owners else "no") for o in book.owners],
               fold=("accountable for",)),
        _table("final decisions", ["decision", "when", "requires in the bundle"],
               [(d.label, d.when, _list([str(r) for r in d.requires])) for d in book.decisions], fold=("when",)),
    ]
    if book.takeaways:
        parts.append(Panel(Text("\n".join(f"- {t}" for t in book.takeaways)), title="key takeaways"))
    return Group(*parts)
