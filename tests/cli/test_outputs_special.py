"""Output paths that are not plain files, and outputs that cannot be written (issue 55).

An existing path that is neither a file nor a folder is never replaced: a character device or a pipe
(``/dev/stdout``, ``/dev/null``, a named pipe) is written through, anything else is refused. As root these
tests must not touch ``/dev``: devices are reached through symbolic links in ``tmp_path``, and only
``/dev/null`` (written through) and ``/dev/full`` (whose writes all fail) are used.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import atomic_write_text, check_output, save_record
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.support.proc import REPO_ROOT, _env
from tests.support.synth import dense_run, sparse_run

TRACE = FIXTURES / "artifacts" / "small_trace.json"


def _char_device_link(tmp_path: Path, device: str) -> Path:
    link = tmp_path / f"{Path(device).name}.json"
    link.symlink_to(device)
    return link


def _still_the_device(link: Path, device: str) -> None:
    assert link.is_symlink() and os.readlink(link) == device
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_a_character_device_is_written_through_not_replaced(tmp_path: Path) -> None:
    null = _char_device_link(tmp_path, "/dev/null")
    atomic_write_text(null, "{}\n")
    _still_the_device(null, "/dev/null")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null.json"]  # no temporary file left beside it


def test_a_full_device_is_one_line_and_left_a_device(tmp_path: Path) -> None:
    full = _char_device_link(tmp_path, "/dev/full")
    with pytest.raises(UserError, match="full.json: cannot write: No space left on device"):
        atomic_write_text(full, "x" * 100_000)
    _still_the_device(full, "/dev/full")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.json"]


def test_a_named_pipe_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert got == ["through the pipe\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_socket_is_refused_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(UserError, match=r"s.json \(-o\): is a socket, not a file"):
            check_output(path, "-o")
        with pytest.raises(UserError, match="is a socket"):
            atomic_write_text(path, "x")
        assert stat.S_ISSOCK(path.lstat().st_mode)
    finally:
        server.close()


@pytest.mark.parametrize("length", [256, 300, 4000])
def test_a_name_too_long_is_one_line(tmp_path: Path, length: int) -> None:
    out = tmp_path / ("n" * length + ".json")
    result = invoke(["import", "trace", str(TRACE), "-o", str(out)])
    assert_clean_error(result, 2, "(-o): name too long for the file system")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["import", "gate"])
def test_commands_write_through_a_device_and_refuse_a_full_one(command: str, tmp_path: Path) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0), base)
    save_record(sparse_run(), cand)
    for device, code in (("/dev/null", None), ("/dev/full", 2)):
        link = _char_device_link(tmp_path, device)
        args = ["import", "trace", str(TRACE), "-o", str(link)] if command == "import" else ["gate", str(base), str(cand), "--junit", str(link)]
        result = invoke(args)
        if code is None:
            assert result.exit_code in (0, 1), result.stderr  # the gate's own verdict; the write went through
        else:
            assert_clean_error(result, code, f"{link}: cannot write: No space left on device")
        _still_the_device(link, device)


def test_a_bundle_under_a_file_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("a file\n")
    result = invoke(["playbook", "run", "--baseline", str(TRACE), "--candidate", str(TRACE), "-o", str(blocker / "bundle")])
    assert_clean_error(result, 2, f"{blocker} is a file, not a directory")
    assert "does not exist" not in result.stderr


def test_a_bundle_onto_a_device_is_refused(tmp_path: Path) -> None:
    link = _char_device_link(tmp_path, "/dev/null")
    result = invoke(["playbook", "run", "--baseline", str(TRACE), "--candidate", str(TRACE), "-o", str(link)])
    assert_clean_error(result, 2, "is a character device, not a directory")
    _still_the_device(link, "/dev/null")


def _deep(levels: int) -> str:
    return '{"traceEvents": ' + "[" * levels + "]" * levels + "}"


@pytest.mark.parametrize("levels", [5_000, 200_000])
def test_deeply_nested_json_is_one_line(tmp_path: Path, levels: int) -> None:
    trace = tmp_path / "deep.json"
    trace.write_text(_deep(levels))
    assert_clean_error(invoke(["import", "trace", str(trace)]), 2, "deep.json: JSON nested too deeply to read")


def test_deeply_nested_yaml_is_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("significance: " + "[" * 50_000 + "]" * 50_000 + "\n")
    base = tmp_path / "base.json"
    save_record(dense_run(5.0), base)
    assert_clean_error(invoke(["gate", str(base), str(base), "--policy", str(policy)]), 2, "policy.yaml: YAML nested too deeply")


def test_an_input_name_too_long_is_one_line(tmp_path: Path) -> None:
    name = tmp_path / ("n" * 300 + ".json")
    assert_clean_error(invoke(["bisect", str(name), str(TRACE)]), 2, f"{name}: name too long for the file system")


@pytest.mark.parametrize("command", ["import --json", "import", "bisect"])
def test_stdout_on_a_full_device_is_one_line(command: str, tmp_path: Path) -> None:
    copy = tmp_path / "again.json"
    copy.write_bytes(TRACE.read_bytes())
    args = ["bisect", str(TRACE), str(copy)] if command == "bisect" else ["import", "trace", str(TRACE), *command.split()[1:]]
    with open("/dev/full", "w") as full:  # noqa: PTH123 (a device handed to the child as its stdout)
        done = subprocess.run(
            [sys.executable, "-m", "sparsedebug", *args], cwd=REPO_ROOT, env=_env(None), stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=300, check=False,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "error: cannot write to standard output: No space left on device"


def test_a_link_to_a_file_is_kept_and_the_file_replaced(tmp_path: Path) -> None:
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old\n")
    link.symlink_to(target)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target) and target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "target.json"]


def test_an_output_naming_this_process_stdout_is_written_through_it(tmp_path: Path) -> None:
    """``-o /dev/stdout > FILE``, reached through a link in tmp_path (as root, /dev itself is left alone): the record
    goes through the open descriptor, in order with the rest, and no rename touches the link or what it names."""
    link, out = tmp_path / "stdout.json", tmp_path / "out.txt"
    link.symlink_to("/proc/self/fd/1")
    with out.open("w") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "sparsedebug", "import", "trace", str(TRACE), "-o", str(link)], cwd=REPO_ROOT,
            env=_env(None), stdout=handle, stderr=subprocess.PIPE, text=True, timeout=300, check=False,
        )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("{") and '"kind": "run"' in text and "GPU timeline" in text  # the record, then the tables
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "stdout.json"]
