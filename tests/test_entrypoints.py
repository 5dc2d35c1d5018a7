"""The console script and `python -m sparsedebug` both reach the same app."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from tests.conftest import invoke


def test_python_dash_m_prints_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "sparsedebug", "--version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert proc.stdout.startswith("sparsedebug ")


def test_no_arguments_shows_help() -> None:
    result = invoke([])
    assert result.exit_code in (0, 2)
    assert "freeze" in result.stdout + result.stderr


def test_version_imports_no_command_module() -> None:
    """`--version` stays cheap: no command module, numpy or pydantic is imported for it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from sparsedebug.cli.app import main\n"
        "sys.argv = ['sparsedebug', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('numpy', 'pydantic', 'scipy', 'sparsedebug.cli.')) and m != 'sparsedebug.cli.app')\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "sparsedebug 0.1.0" in out
    assert "HEAVY []" in out


def test_every_listed_command_resolves() -> None:
    import typer

    from sparsedebug.cli.app import COMMANDS, LazyGroup, app

    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    for name in COMMANDS:
        assert group.get_command(None, name) is not None, name
    assert group.get_command(None, "no-such-command") is None


def _help_paths() -> list[list[str]]:
    """The top level, every command and every subcommand of a group."""
    import typer

    from sparsedebug.cli.app import app

    root = typer.main.get_command(app)
    ctx = typer.Context(root)
    paths: list[list[str]] = [[]]
    for name in root.list_commands(ctx):  # type: ignore[attr-defined]
        paths.append([name])
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        paths.extend([name, sub] for sub in getattr(command, "commands", {}))
    return paths


HELP_MODULES = {"sparsedebug", "sparsedebug.cli", "sparsedebug.core", "sparsedebug.core.errors", "sparsedebug.core.signals",
                "sparsedebug.records", "sparsedebug.records.defaults", "sparsedebug.sources", "sparsedebug.sources.registry"}
"""What `--help` may import of the package besides the command modules (sparsedebug.cli.*): `import --help` lists the
registered importers from ``sources.registry``, a table that imports no loader, pydantic model or numpy."""

@pytest.mark.parametrize("path", _help_paths(), ids=lambda path: " ".join(path) or "top")
def test_help_imports_no_implementation(path: list[str]) -> None:
    """`--help` is built from the command modules alone: no kernel, source, render or step module,
    no numpy, and no pydantic model machinery (quality and models quote the registry's names and sizes
    from records.defaults)."""
    code = (
        "import sys\n"
        "from sparsedebug.cli.app import main\n"
        f"sys.argv = ['sparsedebug', *{path!r}, '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODULES', sorted(m for m in sys.modules if m.split('.')[0] in ('sparsedebug', 'numpy', 'scipy', 'pydantic')))\n"
    )
    env = {**os.environ, "COLUMNS": "100"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert "Usage:" in out
    loaded = set(ast.literal_eval(out.rsplit("MODULES ", 1)[1]))
    ours = {m for m in loaded if m.split(".")[0] == "sparsedebug" and not m.startswith("sparsedebug.cli.")}
    assert ours <= HELP_MODULES, sorted(ours - HELP_MODULES)
    assert not any(m.split(".")[0] in ("numpy", "scipy") for m in loaded)
    assert "pydantic.main" not in loaded


def test_root_help_lists_each_command_as_built() -> None:
    """The root's list reads registrations; it must say what the built commands say."""
    import typer

    from sparsedebug.cli.app import COMMANDS, _listed, app

    root = typer.main.get_command(app)
    for name in COMMANDS:
        stub = _listed(name)
        built = root.get_command(None, name)  # type: ignore[attr-defined]
        assert stub is not None and built is not None, name
        assert (stub.name, stub.help, stub.hidden) == (built.name, built.help, built.hidden), name
    assert _listed("no-such-command") is None


def test_help_constants_match_the_model_registry() -> None:
    """The model names and study sizes `--help` quotes are the registry's own."""
    from sparsedebug.records.defaults import MODEL_NAMES, STUDY_SIZES
    from sparsedebug.sources.models.registry import DEFAULTS, MODELS

    assert MODEL_NAMES == tuple(sorted(MODELS))
    assert {arch: sizes.model_dump() for arch, sizes in DEFAULTS.items()} == STUDY_SIZES
