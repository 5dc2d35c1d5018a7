"""Render bisect (step 2) and reduce (step 4) results as rich tables: pure functions of the records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text

from sparsedebug.records.findings import BisectResult, StageFinding
from sparsedebug.records.stats import SampleComparison
from sparsedebug.render.terminal.fit import optional
from sparsedebug.render.words.core import change_words, probe_note_words, reduce_verdict
from sparsedebug.render.words.locate import ratio_ci
from sparsedebug.render.words.locate_text import finding_text, stage_text
from sparsedebug.render.words.locate_text import verdict_text as verdict_words

if TYPE_CHECKING:  # a type only: bisect's view imports no reduce record
    from sparsedebug.records.reduce import ReduceResult

_STATUS_STYLE = {
    "divergent": "bold red",
    "improved": "green",
    "expected": "cyan",
    "same": "",
    "undecided": "yellow",
    "not_comparable": "dim",
}


def comparison_text(c: SampleComparison | None) -> str:
    """``x1.234 [1.200, 1.270] p=0.001 n=20/20`` (or the too-few-samples note)."""
    if c is None:
        return "-"
    p = f" p={c.p_value:.2g}" if c.p_value is not None else " (too few samples)"
    return f"{ratio_ci(c.ratio, c.ci_low, c.ci_high)}{p} n={c.n_base}/{c.n_cand}"


def stage_table(result: BisectResult) -> Table:
    """The five stages in order, with status, headline metric and summary."""
    table = Table(title=f"bisect {result.base} -> {result.cand}", show_lines=False)
    table.add_column("stage")
    table.add_column("status")
    table.add_column("metric", overflow="fold")
    table.add_column("finding", overflow="fold")
    for stage in result.stages:
        marker = " <- first" if stage.stage == result.first_stage else ""
        head = stage.headline
        metric = f"{head.metric} {comparison_text(head.comparison)}" if head is not None else "categorical"
        table.add_row(stage.stage + marker, Text(stage.status, style=_STATUS_STYLE[stage.status]), Text(metric), Text(stage_text(stage)))
    return table


def findings_table(stage: StageFinding, limit: int = 12) -> Table:
    """The per-layer findings of one stage."""
    table = Table(title=f"{stage.stage}: layer findings")
    table.add_column("layer", overflow="fold")
    table.add_column("kind")
    table.add_column("regression")
    table.add_column("detail", overflow="fold")
    for finding in stage.layers[:limit]:
        label = finding.label + (f" ({len(finding.members)} pooled)" if finding.members else "")
        table.add_row(Text(label), finding.kind, "yes" if finding.regression else "no", Text(finding_text(finding)))
    if len(stage.layers) > limit:
        table.add_row(f"… {len(stage.layers) - limit} more", "", "", "")
    return table


def layers_table(result: BisectResult, limit: int = 10) -> Table:
    """Layers ranked by their contribution to the outcome change (per iteration)."""
    delta = f"{result.outcome_delta_ms:+.3f} ms" if result.outcome_delta_ms is not None else "n/a"
    table = Table(title=f"layers by contribution to the outcome change ({delta} per iteration)")
    table.add_column("layer", overflow="fold")
    table.add_column("kernel ms", justify="right")
    table.add_column("idle ms", justify="right")
    table.add_column("total ms", justify="right")
    table.add_column("share", justify="right")
    table.add_column("in first stage")
    for row in result.layers[:limit]:
        table.add_row(
            Text(row.layer),
            f"{row.kernel_ms:+.3f}",
            f"{row.idle_ms:+.3f}",
            f"{row.contribution_ms:+.3f}",
            f"{row.share:.0%}" if row.share is not None else "-",
            "yes" if row.involved else "",
        )
    optional(table, "in first stage", "idle ms", "kernel ms")
    return table


def verdict_text(result: BisectResult) -> Text:
    """The one-paragraph answer, coloured by state."""
    style = {"divergence": "bold red", "no_regression": "green", "undecided": "yellow"}[result.state]
    text = Text(verdict_words(result), style=style)
    if result.effect is not None and result.effect_metric is not None:
        text.append(f"\neffect ({result.effect_label}): {comparison_text(result.effect)}")
    return text


def bisect_view(result: BisectResult, *, layer_limit: int = 10, clock: str | None = None) -> Group:
    """Everything a person reads, the answer first: verdict, stages, the first stage's findings, ranked layers; ``clock``
    names the runs' clock."""
    parts: list[Table | Text] = [verdict_text(result), stage_table(result)]
    if clock is not None:
        parts.append(Text(f"latencies below: {clock}"))
    first = result.stage(result.first_stage) if result.first_stage else None
    if first is not None and first.layers:
        parts.append(findings_table(first))
    if layer_limit and result.layers:
        parts.append(layers_table(result, layer_limit))
    return Group(*parts)


# --------------------------------------------------------------------------- reduce (step 4)


def changes_table(result: ReduceResult) -> Table:
    """Every difference between GOOD and BAD, the kept ones marked."""
    kept = {change.key for change in result.kept}
    others = {change.key: cause.finding for cause in result.other_causes for change in cause.kept}
    table = Table(title=f"changes {result.good} -> {result.bad} ({len(result.changes)})")
    table.add_column("change")
    table.add_column("detail", overflow="fold")
    table.add_column("kept")
    for change in result.changes:
        mark = "yes" if change.key in kept else (f"other cause: {others[change.key]}" if change.key in others else "")
        table.add_row(Text(change.key), Text(change_words(change)), Text(mark, style="bold red" if change.key in kept else ""))
    return table


def probes_table(result: ReduceResult, limit: int = 60) -> Table:
    """The probe log: phase, variant, outcome."""
    table = Table(title=f"probes ({result.probe_count}: {result.static_probes} static, {result.replays} timed replays, {result.flaky_probes} re-measured)")
    table.add_column("#", justify="right")
    table.add_column("phase")
    table.add_column("variant", overflow="fold")
    table.add_column("mode")
    table.add_column("outcome")
    style = {"fail": "red", "pass": "green", "unresolved": "yellow"}
    for i, probe in enumerate(result.probes[:limit], start=1):
        outcome = probe.outcome + (" (re-measured)" if probe.flaky else "") + (f" - {probe_note_words(probe)}" if probe_note_words(probe) else "")
        table.add_row(str(i), probe.phase, Text(probe.description), probe.mode, Text(outcome, style=style[probe.outcome]))
    if len(result.probes) > limit:
        table.add_row("…", "", f"{len(result.probes) - limit} more", "", "")
    optional(table, "mode", "#")
    return table


def reduce_view(result: ReduceResult, *, show_probes: bool = True) -> Group:
    """Changes, probes and the verdict with the reproducing command."""
    parts: list[Table | Text] = []
    if result.changes:
        parts.append(changes_table(result))
    if show_probes and result.probes:
        parts.append(probes_table(result))
    style = "bold red" if result.reproduced else "yellow"
    text = Text(reduce_verdict(result), style=style)
    if result.command:
        text.append(f"\nreproduce with: {result.command}", style="bold")
    parts.append(text)
    return Group(*parts)
