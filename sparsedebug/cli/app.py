"""The typer application: one thin module per command, imported only when that command runs.

The root group knows each command's name and module (``COMMANDS``, in playbook order);
``sparsedebug --version`` and ``sparsedebug COMMAND`` import nothing but what they need,
so start-up stays close to the cost of importing typer, rich and pydantic. A command
module imports its implementation inside the command's function, so ``COMMAND --help``
imports none of it; the root's ``--help`` lists each command from its registration
(name and docstring) without building its parameters.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import os
from typing import Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder

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

GC_YOUNG_THRESHOLD = 100_000
"""Container allocations between two collections of the youngest generation (Python's default: 700); see ``main``."""


class LazyGroup(TyperGroup):
    """A root group that imports a command's module the first time the command is looked up."""

    _listing = False
    """True while the root's help lists the commands: ``get_command`` then answers a stub."""

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command, in playbook order."""
        return list(COMMANDS)

    def get_help_option(self, ctx: Any) -> Any:
        """The root's ``--help``, off by default (see ``_help_flag_off_by_default``)."""
        option = super().get_help_option(ctx)
        if option is not None and option.default is None:
            option.default = False
        return option

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The root's help, its command list read from each command's registration, not built."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """Build the command from its module's ``register`` (None for an unknown name)."""
        if self._listing and cmd_name not in self.commands:
            return _listed(cmd_name)
        if cmd_name not in self.commands:
            module_name = COMMANDS.get(cmd_name)
            if module_name is None:
                return None
            module = importlib.import_module(f"sparsedebug.cli.{module_name}")
            holder = typer.Typer()
            module.register(holder)
            built = typer.main.get_group(holder)
            for name, command in built.commands.items():
                _help_flag_off_by_default(command, ctx)
                self.commands.setdefault(name, command)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; a usage error (an option's value out of range, an unknown option, a missing argument)
        is one line on stderr, ``error: MESSAGE (COMMAND --help: usage)``, and exit 2, as every bad input is, not
        typer's boxed usage; with ``--json`` it is also a JSON error object on stdout (``common.report_error``)."""
        from typer._click.exceptions import UsageError

        args = [*getattr(ctx, "protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            _usage_line(exc, args, ctx.command_path)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        """The root's context; a usage error of the root's own options is one line, as a command's is."""
        from typer._click.exceptions import UsageError

        given = list(args)
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as exc:
            _usage_line(exc, given, info_name or "sparsedebug")


def _usage_line(exc: Any, args: list[str], command_path: str) -> NoReturn:
    """Say a usage error in one line on stderr, ``error: MESSAGE (COMMAND --help: usage)``, naming the value given
    to the option it is about, and exit with its code; with ``--json`` also as a JSON error object on stdout. A
    group called without a command (its help is the answer) is left to typer."""
    message = " ".join(exc.format_message().split())
    if not message:
        raise exc
    given = _given_value(args, getattr(exc, "param", None))
    if given is not None and repr(given) not in message and f" {given} " not in f" {message} ":
        message = f"{message.rstrip('.')}, got {given!r}"
    if "--json" in args:
        from sparsedebug.cli.common import emit_json

        emit_json({"error": {"exit_code": exc.exit_code, "message": message, "lines": [message]}})
    where = exc.ctx.command_path if exc.ctx is not None else command_path
    typer.echo(f"error: {message} ({where} --help: usage)", err=True)
    raise typer.Exit(exc.exit_code) from None


def _given_value(args: list[str], param: Any) -> str | None:
    """The value given on the command line to the option ``param`` (``--opt VALUE`` or ``--opt=VALUE``; the last
    when repeated), None when it is no option or was not given."""
    found = None
    for opt in getattr(param, "opts", None) or []:
        if not opt.startswith("-"):
            continue
        for k, arg in enumerate(args):
            if arg == opt and k + 1 < len(args):
                found = args[k + 1]
            elif arg.startswith(f"{opt}="):
                found = arg.split("=", 1)[1]
    return found


def _listed(cmd_name: str) -> TyperCommand | None:
    """A parameterless stand-in for a command, with its name and help, to list it in the root's help.

    Registering a command is cheap; building it (typer's parameters and their validators) is
    not, so the list reads the registration: a command's help or docstring, a group's help.
    """
    module_name = COMMANDS.get(cmd_name)
    if module_name is None:
        return None
    holder = typer.Typer()
    importlib.import_module(f"sparsedebug.cli.{module_name}").register(holder)
    for command in holder.registered_commands:
        callback = command.callback
        name = command.name or (callback.__name__.replace("_", "-") if callback is not None else None)
        if name == cmd_name:
            text = command.help or (inspect.getdoc(callback) if callback is not None else None)
            return TyperCommand(name=cmd_name, help=text, hidden=command.hidden, deprecated=command.deprecated)
    for group in holder.registered_groups:
        instance = group.typer_instance
        if group.name == cmd_name or (instance is not None and instance.info.name == cmd_name):
            text = _given(group.help) or (_given(instance.info.help) if instance is not None else None)
            return TyperCommand(name=cmd_name, help=text)
    return None


def _help_flag_off_by_default(command: Any, ctx: Any) -> None:
    """Give ``--help`` of a command and its subcommands the default False.

    typer leaves the help flag without a default, and coerces the missing value of a group's
    flag through pydantic on the way to a subcommand: ``import trace --help`` would import
    pydantic's models for a flag that was not given.
    """
    option = command.get_help_option(ctx if ctx is not None else typer.Context(command))
    if option is not None and option.default is None:
        option.default = False
    for sub in getattr(command, "commands", {}).values():
        _help_flag_off_by_default(sub, ctx)


def _given(value: Any) -> str | None:
    """A help text, or None where typer holds its default placeholder."""
    return None if isinstance(value, DefaultPlaceholder) or value is None else str(value)


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
    """Console-script entry point.

    Under ``ulimit -v`` (or a process limit) numpy is started first, so that a BLAS that
    cannot start under the limit is one line and exit 2 before any work
    (``core.budget.start_numpy_within_limits``), not a traceback or a false interruption.
    No command path imports scipy (it is an optional anchor of ``bench kernel``, whose CSR
    product loads no BLAS of scipy's), so nothing of scipy's is started here.

    Pydantic plugins are off unless ``PYDANTIC_DISABLE_PLUGINS`` is set otherwise: looking
    for them reads the entry points of every installed distribution when the first record
    is built (45 ms with 160 installed, more in a larger environment), and the records
    here are the tool's own, not an application's to observe.

    The cyclic garbage collector looks at the youngest objects every 100,000 container allocations,
    not 700: a command's start builds hundreds of thousands of objects that live to its end
    (record classes, typer's parameters), and at the default a ``bisect`` of two traces spent
    about 8% of its time in some 120 collections over them (timed with ``gc.callbacks``); the
    H200 T2048 pair now runs none, and a larger input one per 100,000 objects. Cycles are still
    collected; the older generations keep their thresholds.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    if _address_space_limited():
        from sparsedebug.core.budget import start_numpy_within_limits
        from sparsedebug.core.errors import UserError
        from sparsedebug.core.signals import Interrupted

        try:
            start_numpy_within_limits()
        except UserError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise SystemExit(2) from None
        except Interrupted as exc:
            typer.echo(f"error: interrupted by {exc.name}; nothing was written", err=True)
            raise SystemExit(exc.exit_code) from None
    app()


def _address_space_limited() -> bool:
    """Whether ``ulimit -v`` is set (checked without importing anything heavy: start-up stays light)."""
    try:
        import resource
    except ImportError:
        return False
    return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
