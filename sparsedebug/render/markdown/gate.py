"""The gate's verdict as Markdown, for a CI job summary (GitHub's ``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from sparsedebug.records.gate import GateResult
from sparsedebug.render.markdown.cells import md_cell


def summary_markdown(result: GateResult) -> str:
    """A Markdown summary fit for a CI job summary (GitHub's $GITHUB_STEP_SUMMARY)."""
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
        lines.append(f"| {c.name} | {c.status_label} | {md_cell(c.measured)} | {md_cell(c.threshold)} |")
    lines.append("")
    for c in result.checks:
        lines.append(f"- **{c.id}** ({c.status_label}): {md_cell(c.detail)}")
    check = result.comparability
    if check is not None:
        for line in filter(None, [check.allowed_sentence(), *check.notes]):
            lines.append(f"- comparability: {md_cell(line)}")
    lines.append("")
    return "\n".join(lines)
