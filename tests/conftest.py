"""Shared test helpers: a CliRunner with a pinned console width and fixture paths."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from sparsedebug.cli.app import app

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"

CLI_ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}


def invoke(args: Sequence[str]) -> Result:
    """Run the CLI in-process with a pinned console width; stdout and stderr kept apart."""
    runner = CliRunner(env=CLI_ENV)
    return runner.invoke(app, list(args), catch_exceptions=True)


def assert_clean_error(result: Result, code: int, *needles: str) -> None:
    """The command failed with ``code``, said each needle on stderr, and printed no traceback."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


@pytest.fixture
def fixtures_dir() -> Path:
    """The project's fixtures folder."""
    return FIXTURES
