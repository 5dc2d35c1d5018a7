"""The console script and `python -m sparsedebug` both reach the same app."""

from __future__ import annotations

import subprocess
import sys

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
