"""Starting scipy's BLAS under ``ulimit -v``: a child with a deadline first, so a stuck start never holds the command."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from sparsedebug.core import budget
from sparsedebug.core.errors import UserError
from sparsedebug.core.signals import Interrupted

STUCK = "import time\ntime.sleep(600)\n"
"""A child that never finishes starting, as OpenBLAS does when it retries an allocation that cannot succeed."""


def _children() -> set[int]:
    """Process ids whose parent is this process."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")
def test_a_stuck_start_is_ended_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "_BLAS_PROBE", "import signal, sys\nsignal.alarm(int(sys.argv[2]))\n" + STUCK)
    monkeypatch.setattr(budget, "BLAS_START_SECONDS", 1.0)
    start = time.monotonic()
    failure = budget._blas_starts(None)
    assert time.monotonic() - start < 30
    assert failure == "it was still starting after 1 s (OpenBLAS retries an allocation that cannot succeed)"


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")
def test_a_signal_while_waiting_ends_the_wait_and_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "_BLAS_PROBE", STUCK)
    before = _children()
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with pytest.raises(Interrupted) as caught:
            budget._blas_starts(None)
    finally:
        timer.cancel()
    assert caught.value.exit_code == 143
    assert _children() == before  # the child was killed, not left spinning


def test_a_start_that_fails_is_one_line_naming_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(__import__("sys").modules, "scipy.linalg", raising=False)
    monkeypatch.setattr(budget, "address_space_limit", lambda: 342 << 20)
    tried: list[dict[str, str] | None] = []

    def starts(env: dict[str, str] | None) -> str | None:
        tried.append(env)
        return None if env else "it was still starting after 20 s (OpenBLAS retries an allocation that cannot succeed)"

    monkeypatch.setattr(budget, "_blas_starts", starts)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(UserError, match=r"scipy's BLAS cannot start under the address-space limit \(ulimit -v\) of 342 MiB: it was "
                       r"still starting after 20 s .*; raise the limit, or set OPENBLAS_NUM_THREADS=1 \(one BLAS thread starts under it\)"):
        budget.start_scipy_within_limits()
    assert tried == [None, {"OPENBLAS_NUM_THREADS": "1"}]


def test_a_library_that_cannot_map_gets_no_thread_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(__import__("sys").modules, "scipy.linalg", raising=False)
    monkeypatch.setattr(budget, "address_space_limit", lambda: 293 << 20)
    tried: list[dict[str, str] | None] = []

    def starts(env: dict[str, str] | None) -> str | None:
        tried.append(env)
        return "ImportError: libscipy_openblas.so: failed to map segment from shared object"

    monkeypatch.setattr(budget, "_blas_starts", starts)
    with pytest.raises(UserError, match=r"failed to map segment from shared object; raise the limit$"):
        budget.start_scipy_within_limits()
    assert tried == [None]


def test_nothing_is_started_without_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "address_space_limit", lambda: None)
    monkeypatch.setattr(budget, "_blas_starts", lambda env: pytest.fail("probed without a limit"))
    budget.start_scipy_within_limits()
