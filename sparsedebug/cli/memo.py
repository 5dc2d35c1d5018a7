"""`sparsedebug memo`: re-render the review memo (and optionally the deployment report and report.html) from a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import JsonOption, emit_json, handle_errors

BundleArgument = Annotated[Path, typer.Argument(help="Bundle directory written by `sparsedebug playbook run`.")]
MemoOutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the memo here (atomic) instead of printing it.")
]
ReportOption = Annotated[Path | None, typer.Option("--report", help="Also write the sparsity deployment report here.")]
PlaybookOption = Annotated[
    Path | None, typer.Option("--playbook", help="Playbook YAML whose memo template to use (default: embedded).")
]
HtmlOption = Annotated[
    bool,
    typer.Option(
        "--html",
        help="Re-render the bundle's report.html (memo, deployment report and figures in one self-contained page).",
    ),
]
FormatOption = Annotated[
    str,
    typer.Option(
        "--format", "-f",
        help="Output format: markdown (memo.md), terminal (the one-screen summary), json (the memo model: claims, figures, "
        "provenance; schema: `sparsedebug schema memo`), github (a CI step summary), or any registered format.",
    ),
]
VerifyOption = Annotated[
    bool,
    typer.Option(
        "--verify",
        help="Check the bundle's written memo.md against its review document (memo.json) instead of rendering: every "
        "number carried by a figure, the wording by its facts, every line as the document renders it. Exit 0 when "
        "it agrees, 1 naming each claim that does not, 2 when the bundle cannot be read.",
    ),
]


@handle_errors
def memo(
    bundle: BundleArgument,
    output: MemoOutputOption = None,
    report: ReportOption = None,
    playbook: PlaybookOption = None,
    html: HtmlOption = False,
    format_name: FormatOption = "markdown",
    verify: VerifyOption = False,
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

    Every text format is checked before it is printed or written: a number no
    figure of the review document carries, or wording its facts do not carry,
    is a bug (exit 3, nothing written). --verify checks a bundle as written
    instead: exit 0 when memo.md agrees with memo.json, 1 naming each claim that
    does not, 2 when the bundle cannot be read.
    """
    from sparsedebug.core.errors import UserError
    from sparsedebug.core.io import atomic_write_text
    from sparsedebug.render.markdown.memo import render_full_report
    from sparsedebug.render.memo.formats import formats, render_verified
    from sparsedebug.signoff.decide import with_decision
    from sparsedebug.signoff.memo import require_current, with_review
    from sparsedebug.sources.bundle import FILES
    from sparsedebug.sources.detect import load_bundle
    from sparsedebug.sources.playbook import load_playbook

    if verify:
        if output is not None or report is not None or html:
            raise UserError("--verify checks the bundle as written: leave out -o, --report and --html")
        _verify(bundle, json_out)
        return
    if format_name not in formats():
        raise UserError(f"--format: {format_name!r} is not a format; choose one of {', '.join(sorted(formats()))}")
    book = load_playbook(playbook)
    loaded = with_decision(load_bundle(bundle), book)
    require_current(loaded)
    loaded = with_review(loaded, book)  # the review document, built again from the records under this playbook
    assert loaded.memo is not None
    text = render_verified(loaded.memo, format_name, str(output) if output is not None else "the memo")
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


def _verify(bundle: Path, json_out: bool) -> None:
    """`memo --verify`: the answer first (verified or the first disagreement), each problem under it, exit 1 on any."""
    from sparsedebug.cli.common import EXIT_CHECK_FAILED
    from sparsedebug.playbook.verify import verify_bundle

    checked = verify_bundle(bundle)
    if json_out:
        emit_json({"bundle": checked.bundle, "document": checked.document, "verified": checked.verified,
                   "files": [{"file": f.file, "format": f.format, "problems": f.problems} for f in checked.files]})
    else:
        names = ", ".join(f.file for f in checked.files)
        if checked.verified:
            typer.echo(f"verified: {names} agrees with {checked.document} (every number, claim and line)")
        for f in checked.files:
            if f.problems:
                typer.echo(f"not verified: {f.file} disagrees with {checked.document}: {f.problems[0]}")
                for problem in f.problems[1:]:
                    typer.echo(f"  {problem}")
    if not checked.verified:
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add `memo` to the app."""
    app.command("memo")(memo)
