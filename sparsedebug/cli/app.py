"""The typer application: one thin module per command, registered here."""

from __future__ import annotations

import typer

from sparsedebug import __version__
from sparsedebug.cli import freeze
from sparsedebug.cli import classify
from sparsedebug.cli import importers
from sparsedebug.cli import gate
from sparsedebug.cli import memo
from sparsedebug.cli import playbook
from sparsedebug.cli import bench
from sparsedebug.cli import bisect
from sparsedebug.cli import reduce
from sparsedebug.cli import replay
from sparsedebug.cli import schema

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


freeze.register(app)
classify.register(app)
importers.register(app)
playbook.register(app)
gate.register(app)
memo.register(app)
bench.register(app)
bisect.register(app)
reduce.register(app)
replay.register(app)
schema.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
