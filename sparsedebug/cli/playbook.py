"""`sparsedebug playbook`: show the debug playbook, or walk it end to end (`run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import JsonOption, console, emit_json, handle_errors
from sparsedebug.playbook import load_playbook
from sparsedebug.render.playbook import playbook_view

PlaybookOption = Annotated[
    Path | None,
    typer.Option("--playbook", help="Playbook YAML to use instead of the embedded structured-sparsity playbook."),
]

playbook_app = typer.Typer(
    name="playbook",
    help="The structured-sparsity debug playbook: show it, or walk it end to end.",
    no_args_is_help=True,
)


@playbook_app.command("show")
@handle_errors
def show(playbook: PlaybookOption = None, json_out: JsonOption = False) -> None:
    """Show the playbook: primary metric, the five steps with inputs and outputs, metrics to
    collect, debug branches, common pitfalls, required owners and the final decisions.

    The playbook is data (playbooks/structured-sparsity.yaml); --playbook renders
    another file after validating it.
    """
    book = load_playbook(playbook)
    if json_out:
        emit_json(book)
        return
    console().print(playbook_view(book))


def register(app: typer.Typer) -> None:
    """Add the `playbook` command group to the app."""
    app.add_typer(playbook_app, name="playbook")
