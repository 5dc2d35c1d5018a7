"""The typer application: one thin module per command, imported only when that command runs.

The root group knows each command's name and module (``COMMANDS``, in playbook order);
``sparsedebug --version`` and ``sparsedebug COMMAND`` import nothing but what they need,
so start-up stays close to the cost of importing typer, rich and pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

from sparsedebug import __version__

COMMANDS: dict[str, str] = {
    # In the order of the playbook: walk it, then each step on its own, then tools.
    "playbook": "playbook",
    "freeze": "freeze",
    "replay": "replay",
    "lower": "replay",
    "audit": "audit",
    "predict": "predict",
    "import": "importers",
    "fallbacks": "importers",
    "bisect": "bisect",
    "classify": "classify",
    "reduce": "reduce",
    "gate": "gate",
    "memo": "memo",
    "quality": "quality",
    "models": "models",
    "schema": "schema",
    "bench": "bench",
}
"""Command name -> module under ``sparsedebug.cli`` whose ``register(app)`` adds it."""


class LazyGroup(TyperGroup):
    """A root group that imports a command's module the first time the command is looked up."""

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command, in playbook order."""
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """Build the command from its module's ``register`` (None for an unknown name)."""
        if cmd_name not in self.commands:
            module_name = COMMANDS.get(cmd_name)
            if module_name is None:
                return None
            module = importlib.import_module(f"sparsedebug.cli.{module_name}")
            holder = typer.Typer()
            module.register(holder)
            built = typer.main.get_group(holder)
            for name, command in built.commands.items():
                self.commands.setdefault(name, command)
        return self.commands.get(cmd_name)


app = typer.Typer(
    name="sparsedebug",
    cls=LazyGroup,
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


def main() -> None:
    """Console-script entry point."""
    app()
