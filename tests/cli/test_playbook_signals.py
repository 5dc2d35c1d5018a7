"""`playbook run` under real signals: the previous bundle or the complete new one, and nothing else.

Real processes and real signals (CliRunner cannot deliver one). Each case first writes a
bundle, then starts a second walk over it with --force and signals it at a point chosen by
what its partial directory holds, or after a delay.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sparsedebug.sources.bundle import load_bundle
from tests.conftest import invoke
from tests.support.proc import run_cli, spawn

PLANTED = Path(__file__).resolve().parents[2] / "fixtures" / "workloads" / "planted"
WALK = [
    "playbook", "run", "--baseline", str(PLANTED / "base.yaml"), "--candidate", str(PLANTED / "scheduling_per_call.yaml"),
    "--repeats", "3", "--no-reduce",
]


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _wait_for(check: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 120.0) -> bool:
    """Poll until ``check()`` holds; False when the process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError("timed out waiting for the walk")


def _siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != out.name)


@pytest.fixture(scope="module")
def first_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("first") / "bundle"
    result = invoke([*WALK, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture
def previous(first_bundle: Path, tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A copy of one walk's bundle, alone in its own folder."""
    out = tmp_path / "bundle"
    shutil.copytree(first_bundle, out)
    return out, _snapshot(out)


def _assert_previous_or_new(out: Path, before: dict[str, bytes]) -> str:
    """The directory holds exactly the previous bundle or a complete new one; nothing lies beside it."""
    assert _siblings(out) == [], _siblings(out)
    now = _snapshot(out)
    if now == before:
        return "previous"
    loaded = load_bundle(out)  # complete: every listed record is there and valid
    assert set(loaded.manifest.files.values()) | {"bundle.json"} == set(now)
    assert json.loads(now["bundle.json"])["created_at"] >= json.loads(before["bundle.json"])["created_at"]
    return "new"


@pytest.mark.parametrize(
    ("signum", "marker"),
    [
        (signal.SIGTERM, "fingerprint.json"),
        (signal.SIGHUP, "candidate.run.json"),
        (signal.SIGINT, "fixed.run.json"),
        (signal.SIGTERM, "memo.md"),
    ],
)
def test_signal_mid_walk_keeps_the_previous_bundle(previous: tuple[Path, dict[str, bytes]], signum: int, marker: str) -> None:
    out, before = previous
    proc = spawn([*WALK, "-o", str(out), "--force"])
    partial = out.parent / f".{out.name}.partial-{proc.pid}"
    reached = _wait_for(lambda: (partial / marker).exists(), proc)
    if reached:
        proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr
    if reached and proc.returncode != 0:
        assert proc.returncode == 128 + signum, (proc.returncode, stderr)
        assert f"interrupted by {signal.Signals(signum).name}" in stderr
        assert len([line for line in stderr.splitlines() if line.startswith("error:")]) == 1
    _assert_previous_or_new(out, before)


@pytest.mark.parametrize("delay", [0.4, 1.6])
def test_sigterm_at_any_moment_leaves_previous_or_complete_new(previous: tuple[Path, dict[str, bytes]], delay: float) -> None:
    out, before = previous
    proc = spawn([*WALK, "-o", str(out), "--force"])
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr
    # Killed before the handlers were installed (start-up), stopped cleanly (143), or already done (0).
    assert proc.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM, 0), (proc.returncode, stderr)
    state = _assert_previous_or_new(out, before)
    # a signal after the new bundle was swapped in (while the summary prints) exits 143 with the new one in place
    assert state == "new" if proc.returncode == 0 else state in ("previous", "new")


def test_first_walk_interrupted_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "fresh"
    proc = spawn([*WALK, "-o", str(out)])
    partial = tmp_path / f".fresh.partial-{proc.pid}"
    assert _wait_for(lambda: (partial / "baseline.run.json").exists(), proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_sigkill_leftovers_are_cleaned_by_the_next_run(previous: tuple[Path, dict[str, bytes]]) -> None:
    out, before = previous
    proc = spawn([*WALK, "-o", str(out), "--force"])
    partial = out.parent / f".{out.name}.partial-{proc.pid}"
    assert _wait_for(lambda: (partial / "candidate.run.json").exists(), proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert partial.is_dir()  # SIGKILL cannot be caught: the partial bundle stays
    assert _snapshot(out) == before
    again = run_cli([*WALK, "-o", str(out), "--force"])
    assert again.returncode == 0, again.stderr
    assert f"note: removed {partial.name}: a partial bundle left by pid {proc.pid}" in again.stderr
    assert _assert_previous_or_new(out, before) == "new"


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_a_bundle_moved_aside_by_a_killed_swap_is_put_back(tmp_path: Path, previous: tuple[Path, dict[str, bytes]]) -> None:
    out, before = previous
    aside = tmp_path / f".bundle.old-{_dead_pid()}"
    out.rename(aside)
    result = invoke([*WALK, "-o", str(out)])
    assert result.exit_code == 2 and "holds a bundle already" in result.stderr  # put back, then refused without --force
    assert "restored the previous bundle" in result.stderr
    assert _snapshot(out) == before and _siblings(out) == []


def test_another_live_walk_on_the_same_bundle_is_refused(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "sparsedebug"])
    try:
        busy = tmp_path / f".b.partial-{sleeper.pid}"
        busy.mkdir()
        result = invoke([*WALK, "-o", str(tmp_path / "b")])
        assert result.exit_code == 2
        assert f"another playbook run (pid {sleeper.pid}) is writing this bundle" in result.stderr
        assert busy.is_dir() and not (tmp_path / "b").exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_signal_during_the_swap_is_held_until_the_new_bundle_is_in_place(
    previous: tuple[Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGTERM raised between the two renames of the swap: delivered after them."""
    out, before = previous
    real_rename = Path.rename

    def rename(self: Path, target: str | os.PathLike[str]) -> Path:
        if self == out:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    result = invoke([*WALK, "-o", str(out), "--force"])
    assert result.exit_code == 143, result.stderr
    assert "interrupted by SIGTERM" in result.stderr
    assert _assert_previous_or_new(out, before) == "new"


def test_files_follow_the_umask(tmp_path: Path) -> None:
    trace = PLANTED.parents[1] / "artifacts" / "small_trace.json"
    for umask, mode in ((0o022, 0o644), (0o077, 0o600)):
        out = tmp_path / f"run-{umask:o}.json"
        result = run_cli(["import", "trace", str(trace), "-o", str(out), "--json"], umask=umask)
        assert result.returncode == 0, result.stderr
        assert out.stat().st_mode & 0o777 == mode, (oct(umask), oct(out.stat().st_mode))
