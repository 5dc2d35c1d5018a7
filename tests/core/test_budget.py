"""Starting under ``ulimit -v``: numpy is started first (tests/cli/test_bad_records.py covers its failures); nothing of
scipy's is started, at the CLI's start or on any command path (scipy is an optional anchor of ``bench kernel`` only)."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.support.proc import ENV


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, resource.RLIM_INFINITY))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
@pytest.mark.parametrize("argv", [["--help"], ["bisect", "--help"], ["bench", "kernel", "--shape", "64x64", "--tokens", "4", "--rounds", "2"]])
def test_the_start_under_an_address_space_limit_imports_no_scipy(argv: list[str]) -> None:
    code = "import sys\nsys.argv = ['sparsedebug', *sys.argv[1:]]\nfrom sparsedebug.cli.app import main\nmain()\n"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *argv], env={**ENV, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=300, check=False, preexec_fn=_limit, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "numpy" in imported or argv[-1] == "--help"
    assert not [m for m in imported if m.startswith("scipy.linalg")], [m for m in imported if m.startswith("scipy")][:5]
    if argv[0] != "bench":
        assert not [m for m in imported if m.startswith("scipy")]
