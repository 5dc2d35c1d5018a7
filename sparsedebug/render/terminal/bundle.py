"""Render a finished playbook bundle for the terminal: headline, decision, reality check, files."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.playbook import Playbook
from sparsedebug.render.clocks import measured_clock, target_label
from sparsedebug.render.document import report, review
from sparsedebug.render.markdown.deployment import reality_check
from sparsedebug.render.markdown.verdicts import fix_verdict, not_established_sentence
from sparsedebug.render.terminal.energy import energy_table
from sparsedebug.render.words.figures import headline
from sparsedebug.render.words.gate import decision_reasons, refusal_words, significance_words
from sparsedebug.render.words.mechanisms_records import fix_words
from sparsedebug.render.words.targets import fix_how_words


def bundle_summary(bundle: LoadedBundle, book: Playbook) -> RenderableType:
    """What the walk found, in one screen; the memo and report hold the rest."""
    runs = Table(title="latency (whole forward)")
    runs.add_column("run")
    runs.add_column("name")
    runs.add_column("p50 ms", justify="right")
    runs.add_column("p95 ms", justify="right")
    runs.add_column("p99 ms", justify="right")
    runs.add_column("speedup vs baseline", justify="right")
    runs.add_column("clock")
    doc = report(bundle)
    by_role = {"baseline": bundle.baseline, "candidate": bundle.candidate, "fixed": bundle.fixed}
    for fig in doc.latency:
        run, p = by_role[fig.role], fig.latency
        if run is None or p is None:
            continue
        speed = f"{fig.speedup:.3f}x" if fig.speedup is not None else "-"  # the one speedup the gate and the memo state
        runs.add_row(fig.role, fig.run, f"{p.p50:.3f}", f"{p.p95:.3f}", f"{p.p99:.3f}", speed, measured_clock(fig))
        role = fig.role
        fwd = run.target.forward if run.target is not None else None
        if run.target is not None and fwd is not None and fwd.candidate is not None:
            own = f"{fwd.speedup:.3f}x vs its dense" if fwd.speedup is not None else "-"
            runs.add_row(f"{role} (target)", run.name, f"{fwd.candidate.total_ms:.3f}", "-", "-", own, target_label(run.target))
    lines = Text("".join(f"{headline(f)}\n" for f in review(bundle).headline))
    bis = bundle.bisect
    if bis is not None:
        lines.append("first divergent stage: ", style="bold")
        lines.append(f"{bis.first_stage or 'none'} ({bis.state})\n")
    cls = bundle.classification
    if cls is not None:
        lines.append("mechanism: ", style="bold")
        lines.append(f"{cls.winner.value if cls.winner else (not_established_sentence(cls) or 'none')}\n")
        if cls.fix is not None:
            lines.append("fix: ", style="bold")
            lines.append(fix_words(cls.fix) + "\n")
    if bundle.fix is not None:
        lines.append("applied: " if bundle.fix.applied else "not applied: ", style="bold")
        lines.append(fix_how_words(bundle.fix) + "\n")
        if bundle.fix.moved is not None:
            lines.append("measured: ", style="bold")
            lines.append(f"{fix_verdict(bundle.fix)}; latency: {significance_words(bundle.fix.significance, bundle.fix.pairing) if bundle.fix.significance is not None else None}\n")
    decision = bundle.decision
    assert decision is not None, "a bundle summary needs the bundle's decision"
    lines.append("decision: ", style="bold")
    lines.append(f"{book.decision(decision.decision).label} ({decision.judged_on})\n")
    for reason in decision_reasons(decision, bundle.fix):
        lines.append(f"  because {reason}\n")
    if decision.decision != "ship":
        for refusal in decision.ship_refused:
            lines.append(f"  not ship: {refusal_words(refusal, decision)}\n")
    chart = terminal_reality_check(bundle)
    parts: list[RenderableType] = [runs]
    energy = energy_table(bundle)
    if energy is not None:
        parts.append(energy)
    parts.append(lines)
    if chart:
        role = "fixed" if bundle.fixed is not None else "candidate"
        parts.append(Text(f"SPARSE REALITY CHECK ({role})\n" + "\n".join(chart) + "\n"))
    files = ", ".join(sorted(bundle.manifest.files.values()))
    parts.append(Text(f"wrote {bundle.root}: {files}"))
    return Group(*parts)


def terminal_reality_check(bundle: LoadedBundle, width: int = 40) -> list[str]:
    """The reality-check bars for the terminal: the fixed run's when there is one, else the candidate's."""
    role = "fixed" if bundle.fixed is not None else "candidate"
    judged = report(bundle).run(role)
    return reality_check(judged.reality if judged is not None else None, width, role=role) or []
