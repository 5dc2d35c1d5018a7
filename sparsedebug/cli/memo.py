"""`sparsedebug memo`: re-render the review memo (and optionally the deployment report and report.html) from a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import JsonOption, emit_json, handle_errors


@handle_errors
def memo(
    bundle: Annotated[Path, typer.Argument(help="Bundle directory written by `sparsedebug playbook run`.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the memo here (atomic) instead of printing it.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also write the sparsity deployment report here.")
    ] = None,
    playbook: Annotated[
        Path | None, typer.Option("--playbook", help="Playbook YAML whose memo template to use (default: embedded).")
    ] = None,
    html: Annotated[
        bool,
        typer.Option(
            "--html",
            help="Re-render the bundle's report.html (memo, deployment report and figures in one self-contained page).",
        ),
    ] = False,
    format_name: Annotated[
        str,
        typer.Option(
            "--format", "-f",
            help="Output format: markdown (memo.md), terminal (the one-screen summary), json (the memo model: claims, figures, "
            "provenance; schema: `sparsedebug schema memo`), github (a CI step summary), or any registered format.",
        ),
    ] = "markdown",
    json_out: JsonOption = False,
) -> None:
    """Re-render the ACCELERATOR REVIEW MEMO from a bundle's records, in any format.

    The memo model is built once from the bundle's records (run records, bisect,
    classification, fix re-run, fingerprint, decision) and every format renders
    it: each printed figure is one of the model's, with its provenance
    (`--format json`). The memo refuses "ship" without fallback and quality
    evidence. Prints the chosen format, or writes it with -o; --report writes
    report.md (the deployment report and the memo's full detail);
    --html also rewrites DIR/report.html, the page with the figures (latency
    distributions, per-layer time by path, the sparse reality check, forward
    time, GPU timeline of traced runs, speed against quality) above the memo
    and the report; --json prints the decision and the memo text as JSON.
    """
    from sparsedebug.core.errors import UserError
    from sparsedebug.core.io import atomic_write_text
    from sparsedebug.render.markdown.memo import render_full_report
    from sparsedebug.render.memo.formats import formats, render
    from sparsedebug.signoff.decide import with_decision
    from sparsedebug.signoff.memo import require_current, with_review
    from sparsedebug.sources.bundle import FILES
    from sparsedebug.sources.detect import load_bundle
    from sparsedebug.sources.playbook import load_playbook

    if format_name not in formats():
        raise UserError(f"--format: {format_name!r} is not a format; choose one of {', '.join(sorted(formats()))}")
    book = load_playbook(playbook)
    loaded = with_decision(load_bundle(bundle), book)
    require_current(loaded)
    loaded = with_review(loaded, book)  # the review document, built again from the records under this playbook
    assert loaded.memo is not None
    text = render(loaded.memo, format_name)
    page = bundle / FILES["html"]
    if report is not None:
        atomic_write_text(report, render_full_report(loaded, book))
    if output is not None:
        atomic_write_text(output, text)
    if html:
        from sparsedebug.render.html.bundle import render_bundle_html

        atomic_write_text(page, render_bundle_html(loaded, book))
    if json_out:
        emit_json({"bundle": str(bundle), "decision": loaded.decision, "memo": text} | ({"html": str(page)} if html else {}))
        return
    if output is None:
        typer.echo(text)
    else:
        typer.echo(f"wrote {output}")
    if html:
        typer.echo(f"wrote {page}", err=output is None)


def register(app: typer.Typer) -> None:
    """Add `memo` to the app."""
    app.command("memo")(memo)
