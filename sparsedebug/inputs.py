"""Turn whatever the user points at into a ``RunRecord``: a run record, a workload, or a trace.

Commands that compare two runs (``gate``, ``playbook run``, and any other that
wants to) accept three kinds of file and tell them apart by suffix and content:

- a **run record** (``.json``/``.yaml`` whose top-level ``kind`` is ``run``): loaded;
- a **workload** YAML (any other mapping in ``.yaml``/``.yml``): replayed on the
  built-in kernel (``sparsedebug.replay``);
- a **PyTorch profiler trace** (``.json.gz``, or ``.json`` with ``traceEvents``):
  imported (``sparsedebug.importers.torch_trace``).

``detect_input`` only classifies; ``load_run`` does the work. Anything else is a
one-line ``UserError`` naming the file.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from sparsedebug.errors import UserError
from sparsedebug.io import load_data, validate
from sparsedebug.records import RunRecord

InputKind = Literal["run", "workload", "trace"]

ReplayProgress = Callable[..., Any]
"""Progress callback passed through to ``sparsedebug.replay.replay`` unchanged."""

_TRACE_SUFFIXES = (".json.gz", ".pt.trace.json", ".trace.json")


def _peek_json_kind(path: Path) -> InputKind:
    """Classify an uncompressed .json by its first bytes (traces are large: do not parse them twice)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    if b'"traceEvents"' in head:
        return "trace"
    return "run"


def detect_input(path: Path) -> InputKind:
    """Say what ``path`` holds: a run record, a workload YAML, or a profiler trace.

    Decided by suffix first (``.json.gz`` and ``*.trace.json`` are traces), then by
    content (a JSON with ``traceEvents`` is a trace; a YAML whose ``kind`` is
    ``run`` is a run record, any other YAML mapping a workload).
    """
    name = path.name.lower()
    if not path.exists():
        raise UserError(f"{path}: file not found")
    if name.endswith(_TRACE_SUFFIXES) or name.endswith(".gz"):
        return "trace"
    if name.endswith(".json"):
        return _peek_json_kind(path)
    if name.endswith((".yaml", ".yml")):
        data = load_data(path)
        if isinstance(data, dict) and data.get("kind") == "run":
            return "run"
        return "workload"
    raise UserError(
        f"{path}: cannot tell what this is from its name; expected a run record (.json/.yaml), "
        "a workload (.yaml) or a PyTorch profiler trace (.json or .json.gz)"
    )


def _load_run_record(path: Path) -> RunRecord:
    data = load_data(path)
    if isinstance(data, dict) and data.get("kind") not in (None, "run"):
        raise UserError(f"{path}: kind: expected a run record, got {data.get('kind')!r}")
    return validate(RunRecord, data, str(path))


def _check_gzip(path: Path) -> None:
    if path.name.lower().endswith(".gz"):
        try:
            with gzip.open(path, "rb") as handle:
                handle.read(1)
        except (OSError, EOFError) as exc:
            raise UserError(f"{path}: not a gzip file ({exc})") from None


def load_run(
    path: Path,
    *,
    repeats: int | None = None,
    progress: ReplayProgress | None = None,
) -> RunRecord:
    """Load, replay or import ``path`` into a ``RunRecord``.

    ``repeats`` overrides a workload's repeat count (ignored for records and
    traces); ``progress`` is handed to the replay for its progress display.
    """
    kind = detect_input(path)
    if kind == "run":
        return _load_run_record(path)
    if kind == "workload":
        from sparsedebug.replay import replay
        from sparsedebug.workload import load_workload

        replayed: RunRecord = replay(load_workload(path), repeats=repeats, progress=progress)
        return replayed
    _check_gzip(path)
    from sparsedebug.importers.torch_trace import import_trace

    record: RunRecord = import_trace(path)
    return record


def describe_input(path: Path) -> str:
    """A short phrase for progress lines: 'replay llama.yaml', 'import trace.json.gz', 'load run.json'."""
    verb = {"run": "load", "workload": "replay", "trace": "import"}[detect_input(path)]
    return f"{verb} {path.name}"

