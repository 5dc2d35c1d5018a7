"""Render the playbook (``sparsedebug playbook show``) as rich tables: pure functions."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sparsedebug.playbook.schema import Playbook


def _list(items: list[str]) -> str:
    return ", ".join(items) if items else "-"


def playbook_view(book: Playbook) -> RenderableType:
    """The whole playbook: metric, concept diagram, steps, metrics, branches, pitfalls, owners, decisions."""
    parts: list[RenderableType] = []
    header = Text()
    header.append(f"{book.title}\n", style="bold")
    header.append(f"{book.area} - playbook '{book.id}'\n\n")
    header.append(book.summary + "\n\n")
    header.append("Primary metric: ", style="bold")
    header.append(book.primary_metric.name + "\n")
    header.append("Review question: ", style="bold")
    header.append(book.review_question)
    parts.append(Panel(header, title="debug playbook", expand=True))

    diagram = " -> ".join(f"{s.label} [{s.stage}]" for s in book.concept.stages)
    parts.append(Panel(Text(diagram), title=book.concept.title))

    metric = Table(title="primary metric components")
    metric.add_column("component")
    metric.add_column("record field")
    metric.add_column("unit")
    metric.add_column("better")
    for comp in book.primary_metric.components:
        metric.add_row(comp.label, comp.record_field, comp.unit, comp.better)
    parts.append(metric)

    steps = Table(title="steps")
    steps.add_column("#", justify="right")
    steps.add_column("step", overflow="fold")
    steps.add_column("command")
    steps.add_column("inputs -> outputs", overflow="fold")
    steps.add_column("done when", overflow="fold")
    for step in book.steps:
        steps.add_row(
            str(step.number),
            f"[bold]{step.id}[/bold]: {step.title}",
            step.command,
            f"{_list(step.inputs)} -> {_list(step.outputs)}",
            step.done_when,
        )
    parts.append(steps)

    mechanisms = Table(title="mechanisms (step 3 scores all five)")
    mechanisms.add_column("mechanism")
    mechanisms.add_column("what it looks like", overflow="fold")
    for mech in book.mechanisms:
        mechanisms.add_row(mech.id, mech.summary)
    parts.append(mechanisms)

    metrics = Table(title="metrics and artifacts to collect")
    metrics.add_column("metric")
    metrics.add_column("record field")
    metrics.add_column("source", overflow="fold")
    for m in book.metrics:
        metrics.add_row(m.label, m.record_field, m.source)
    parts.append(metrics)

    branches = Table(title="debug branches")
    branches.add_column("branch")
    branches.add_column("question", overflow="fold")
    branches.add_column("evidence", overflow="fold")
    branches.add_column("owner")
    branches.add_column("mechanisms")
    for b in book.branches:
        branches.add_row(b.title, b.question, b.evidence, book.owner(b.owner).title, _list(b.mechanisms))
    parts.append(branches)

    pitfalls = Table(title="common pitfalls")
    pitfalls.add_column("pitfall", overflow="fold")
    pitfalls.add_column("how sparsedebug guards against it", overflow="fold")
    for p in book.pitfalls:
        pitfalls.add_row(p.text, p.guard)
    parts.append(pitfalls)

    owners = Table(title="required owners")
    owners.add_column("owner")
    owners.add_column("accountable for", overflow="fold")
    owners.add_column("signs memo")
    for o in book.owners:
        owners.add_row(o.title, o.accountable_for, "yes" if o.id in book.memo.required_owners else "no")
    parts.append(owners)

    decisions = Table(title="final decisions")
    decisions.add_column("decision")
    decisions.add_column("when", overflow="fold")
    decisions.add_column("requires in the bundle")
    for d in book.decisions:
        decisions.add_row(d.label, d.when, _list([str(r) for r in d.requires]))
    parts.append(decisions)

    if book.takeaways:
        parts.append(Panel(Text("\n".join(f"- {t}" for t in book.takeaways)), title="key takeaways"))
    return Group(*parts)
