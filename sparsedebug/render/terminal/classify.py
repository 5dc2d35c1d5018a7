"""Render a classification (ranking, evidence, missing evidence, verdict) and the rule table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from sparsedebug.records.classification import Classification, Evidence, Fix
from sparsedebug.render.markdown.verdicts import not_established_sentence
from sparsedebug.render.terminal.fit import optional
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.mechanisms_records import fix_words, margin_words, proof_words
from sparsedebug.render.words.notes import say


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.3g}" if abs(value) < 10 else f"{value:,.1f}"
    return f"{value:.3g}"


def ranking_table(result: Classification) -> Table:
    """The five mechanisms, ranked by score, with how much of each was evaluated."""
    table = Table(title=f"mechanisms for {result.run}" + (f" vs {result.baseline}" if result.baseline else ""))
    table.add_column("rank", justify="right")
    table.add_column("mechanism")
    table.add_column("score", justify="right")
    table.add_column("status")
    table.add_column("rules fired / evaluated / missing", justify="right")
    for score in result.scores:
        style = "bold" if score.mechanism == result.winner else ""
        table.add_row(
            str(score.rank),
            Text(score.mechanism.value, style=style),
            f"{score.score:.2f}",
            score.status,
            f"{score.rules_fired} / {score.rules_evaluated} / {score.rules_missing}",
        )
    optional(table, "rules fired / evaluated / missing")
    return table


def _evidence_row(line: Evidence) -> tuple[str, str, str, str, str, str]:
    value = "n/a" if line.value is None else f"{_num(line.value)} {line.op} {_num(line.threshold)}"
    mark = "FIRED" if line.fired else ("n/a" if line.value is None else "no")
    return (
        line.rule,
        value,
        mark,
        f"{line.contribution:.2f}" if line.fired else "",
        line.source,
        evidence_words(line),
    )


def evidence_table(result: Classification) -> Table:
    """Every evaluated rule, grouped by mechanism in ranking order: the number, the threshold, where it came from."""
    table = Table(title="evidence", show_lines=False)
    table.add_column("rule", no_wrap=True)
    table.add_column("value vs threshold", no_wrap=True)
    table.add_column("fired", no_wrap=True)
    table.add_column("adds", justify="right", no_wrap=True)
    table.add_column("source", overflow="fold", ratio=1)
    table.add_column("detail", overflow="fold", ratio=2)
    for score in result.scores:
        for line in result.evidence_for(score.mechanism):
            table.add_row(*_evidence_row(line))
    optional(table, "adds", "source")
    return table


def missing_table(result: Classification) -> Table | None:
    """What could not be evaluated and the artifact that would settle it; None when nothing is missing."""
    if not result.missing_evidence:
        return None
    table = Table(title="missing evidence (not scored: capture it to settle)")
    table.add_column("mechanism")
    table.add_column("rules", overflow="fold")
    table.add_column("why missing", overflow="fold")
    table.add_column("to settle it", overflow="fold")
    order = {score.mechanism: score.rank for score in result.scores}
    for miss in sorted(result.missing_evidence, key=lambda m: order.get(m.mechanism, 9)):
        table.add_row(miss.mechanism.value, ", ".join(miss.rules), say(miss.reason), say(miss.capture))
    return table


def fix_summary(fix: Fix) -> str:
    """The fix as one line: what to change (machine-readable part first) and what should move."""
    if fix.kind == "knob":
        change = f"knob {fix.knob}={fix.value}"
    elif fix.kind == "layer":
        change = f"layer {fix.layer}: {fix.action}"
    elif fix.kind == "block":
        change = f"block size {fix.value} for {fix.layer or 'all sparse layers'}"
    else:
        change = "advice"
    arrow = "down" if fix.direction == "down" else "up"
    return f"{change} -> expect {fix.metric} to go {arrow} ({fix_words(fix)})"


def verdict_text(result: Classification) -> Text:
    """Winner, margin, proving artifact and the fix, for people."""
    text = Text()
    unsettled = not_established_sentence(result)
    if result.winner is None and unsettled is not None:
        text.append("mechanism " + unsettled, style="bold")
        return text
    if result.winner is None:
        text.append("no mechanism is supported by the evidence given", style="bold")
        if result.missing_evidence:
            text.append("; capture the missing evidence above to settle it")
        return text
    text.append(f"dominant mechanism: {result.winner.value}", style="bold")
    text.append(f" ({margin_words(result)})\n")
    text.append(f"proved by: {proof_words(result)}\n")
    if result.fix is not None:
        text.append(f"smallest reversible test: {fix_summary(result.fix)}")
    return text


def roofline_table(result: Classification, limit: int = 8) -> Table | None:
    """The machine roofline and the most time-consuming layers on it; None without a roofline."""
    roof = result.roofline
    if roof is None:
        return None
    table = Table(
        title=(
            f"roofline: {roof.device} ({roof.source}, {roof.dtype}): {roof.peak_gflops:,.0f} GFLOP/s, "
            f"{roof.bandwidth_gbps:,.0f} GB/s, ridge {roof.ridge:.1f} FLOP/B"
        )
    )
    table.add_column("layer", overflow="fold")
    table.add_column("path")
    table.add_column("FLOP/B", justify="right")
    table.add_column("bound")
    table.add_column("attainable ms", justify="right")
    table.add_column("measured p50 ms", justify="right")
    table.add_column("of roofline", justify="right")
    layers = sorted(result.layers, key=lambda li: -(li.measured_ms or li.attainable_ms))[:limit]
    for li in layers:
        table.add_row(
            li.name,
            li.path,
            f"{li.intensity:.1f}",
            li.bound,
            f"{li.attainable_ms:.4f}",
            "-" if li.measured_ms is None else f"{li.measured_ms:.4f}",
            "-" if li.roofline_fraction is None else f"{li.roofline_fraction:.0%}",
        )
    optional(table, "attainable ms", "of roofline", "FLOP/B")
    return table


def classification_view(result: Classification) -> Group:
    """Everything a person reads, the answer first: verdict, ranking, evidence, missing evidence, roofline."""
    parts: list[Table | Text] = [verdict_text(result), ranking_table(result), evidence_table(result)]
    missing = missing_table(result)
    if missing is not None:
        parts.append(missing)
    roof = roofline_table(result)
    if roof is not None:
        parts.append(roof)
    return Group(*parts)
