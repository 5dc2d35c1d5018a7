"""The gate's verdict as Markdown, for a CI job summary (GitHub's ``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from sparsedebug.records.gate import GateResult
from sparsedebug.render.markdown.cells import md_cell


def summary_markdown(result: GateResult) -> str:
    """A Markdown summary fit for a CI job summary (GitHub's $GITHUB_STEP_SUMMARY)."""
    icon = {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP", "inconclusive": "INCONCLUSIVE"}
    verdict = "FAILED" if not result.passed else ("INCONCLUSIVE (no check failed)" if result.inconclusive else "passed")
    lines = [
        f"## sparsedebug gate: {verdict}",
        "",
        f"Baseline `{result.baseline}`, candidate `{result.candidate}`.",
        "",
        "| check | result | measured | threshold |",
        "| --- | --- | --- | --- |",
    ]
    for c in result.checks:
        lines.append(f"| {c.name} | {icon[c.status]} | {md_cell(c.measured)} | {md_cell(c.threshold)} |")
    lines.append("")
    for c in result.checks:
        lines.append(f"- **{c.id}** ({icon[c.status]}): {md_cell(c.detail)}")
    lines.append("")
    return "\n".join(lines)
