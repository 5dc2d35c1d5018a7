"""The typer application: one thin module per command, registered here."""

from __future__ import annotations

import typer

from sparsedebug import __version__
from sparsedebug.cli import (
    bench,
    bisect,
    classify,
    freeze,
    gate,
    importers,
    memo,
    playbook,
    reduce,
    replay,
    schema,
)

app = typer.Typer(
    name="sparsedebug",
    help=(
        "Debug structured (N:M) sparsity deployments: freeze the environment, replay or "
        "import runs, bisect to the first divergent stage, classify the mechanism, "
        "reduce to a reproducer, and render the review memo."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sparsedebug {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """sparsedebug: from a sparse regression to a signed review memo."""


# In the order of the playbook: walk it, then each step on its own, then tools.
playbook.register(app)
freeze.register(app)
replay.register(app)  # replay, lower
importers.register(app)  # import trace|ncu|smi|trtlog, fallbacks
bisect.register(app)
classify.register(app)
reduce.register(app)
gate.register(app)
memo.register(app)
schema.register(app)
bench.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
