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
