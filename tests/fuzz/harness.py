"""One fuzz example: run a command through the CLI on a mutated file and hold it to the error contract."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Sequence

from typer.testing import CliRunner, Result

from sparsedebug.cli.app import app
from tests.fuzz.conftest import MAX_BYTES, MAX_SECONDS

LIMITS = {"SPARSEDEBUG_MAX_MEMORY_GB": "0.25", "SPARSEDEBUG_MAX_SECONDS": "20", "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}


def check_cli(args: Sequence[str], *, ok: Sequence[int] = (0, 1, 2)) -> Result:
    """Run ``sparsedebug ARGS``: exit 0/1/2, never a traceback; exit 2 says why on stderr; bounded time and memory."""
    runner = CliRunner(env=LIMITS)
    tracemalloc.start()
    cpu_start = time.process_time()
    try:
        result = runner.invoke(app, list(args), catch_exceptions=True)
        cpu = time.process_time() - cpu_start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in ok, (result.exit_code, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    if result.exit_code == 2:
        errors = [line for line in result.stderr.splitlines() if line.startswith(("error:", "Usage:", "│"))]
        assert errors, result.stderr
    assert cpu < MAX_SECONDS, (cpu, list(args))
    assert peak < MAX_BYTES, (peak, list(args))
    return result
