"""Render a gate result as a rich table (pure function)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from sparsedebug.records.gate import GateResult
from sparsedebug.records.memo import Memo
from sparsedebug.render.terminal.fit import optional, under
from sparsedebug.render.words.figures import headline
from sparsedebug.render.words.gate import detail_words, measured_words, status_label, threshold_words

_STYLE = {
    "pass": ("pass", "green"),
    "fail": ("FAIL", "red"),
    "skipped": ("skipped", "yellow"),
    "inconclusive": ("inconclusive", "yellow"),
}


def gate_table(doc: Memo) -> Table:
    """The gate verdict of a review document, one row per threshold: status, measured, threshold, detail."""
    result = doc.verdict()
    verdict = Text("FAILED", style="red") if not result.passed else (
        Text.assemble(("INCONCLUSIVE", "yellow"), " (no check failed)") if result.inconclusive else Text("passed", style="green")
    )
    table = Table(title=Text.assemble("gate ", verdict, f": {result.candidate} vs {result.baseline}"),
                  caption="; ".join(headline(f) for f in doc.headline) or None)
    table.add_column("check")
    table.add_column("result")
    table.add_column("measured", overflow="fold")
    table.add_column("threshold", overflow="fold")
    table.add_column("detail", overflow="fold")
    for check in result.checks:
        style = Text(*_STYLE[check.status])
        if check.status == "inconclusive":
            style = Text(status_label(check), style="red" if check.fails_gate else "yellow")
        table.add_row(check.id, style, measured_words(check), threshold_words(check, result.policy), detail_words(check))
    optional(table, "threshold")
    under(table, "detail")
    return table


TIMING_CHECKS = ("effective_speedup", "p99_latency")
"""The gate's checks that judge timings (speed and tail)."""


def separate_sessions_line(result: GateResult) -> str | None:
    """One line when a timing check is inconclusive on two separately recorded runs: why it cannot be judged
    there, and the interleaved gate to run instead (the workloads themselves, named when the records name them)."""
    stuck = [c.id for c in result.checks if c.id in TIMING_CHECKS and c.status == "inconclusive"]
    if not (result.separately_recorded and stuck):
        return None
    instead = f"sparsedebug gate {result.workloads[0]} {result.workloads[1]}" if len(result.workloads) == 2 else "sparsedebug gate BASE.yaml CAND.yaml"
    return (
        f"{' and '.join(stuck)} cannot be judged on two separately recorded runs (each timed in its own session, so the "
        f"machine's drift between them cannot be told from the candidate's); run `{instead}` to replay both in one interleaved session"
    )
