"""The CLI as a real process: exit statuses, signals and file modes that CliRunner cannot show."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb", "PYTHONPATH": str(REPO_ROOT)}


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ENV)
    env.update(extra or {})
    return env


def _defaults(umask: int | None) -> None:
    """In the child: the handled signals at their defaults (a test runner may ignore SIGHUP), and the umask."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    if umask is not None:
        os.umask(umask)


def run_cli(
    args: Sequence[str], *, cwd: Path | None = None, umask: int | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m sparsedebug ARGS`` to completion; stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "sparsedebug", *args], cwd=cwd, env=_env(env), capture_output=True, text=True,
        timeout=timeout, check=False, preexec_fn=lambda: _defaults(umask),
    )


def spawn(args: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``python -m sparsedebug ARGS`` without waiting (to signal it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "sparsedebug", *args], cwd=cwd, env=_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: _defaults(None),
    )
