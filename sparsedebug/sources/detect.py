"""Turn whatever the user points at into a ``RunRecord``: a run record, a workload, or a trace.

Commands that compare runs (``gate``, ``classify``, ``playbook run``) accept three
kinds of file: a run record (loaded), a workload YAML (replayed on the built-in
kernel) or a PyTorch profiler trace (imported). One implementation decides and
loads: ``sparsedebug.locate.walk.detect_kind`` and ``sparsedebug.locate.walk.load_run``
(which also enriches short traces with per-layer idle samples). This module is
the stable import point for commands other than bisect.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from sparsedebug.records.run import RunRecord

InputKind = Literal["run", "workload", "trace"]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``, as the replay calls it."""


def detect_input(path: Path) -> InputKind:
    """Say what ``path`` holds: ``run``, ``workload`` or ``trace`` (a ``UserError`` when none)."""
    from sparsedebug.locate.walk import detect_kind

    kind: InputKind = detect_kind(path)
    return kind


def load_run(path: Path, *, repeats: int | None = None, progress: Progress | None = None) -> RunRecord:
    """Load a run record, replay a workload, or import a trace into a ``RunRecord``."""
    from sparsedebug.locate.walk import load_run as _load_run

    return _load_run(path, repeats=repeats, progress=progress)


def describe_input(path: Path) -> str:
    """A short phrase for progress lines: 'replay llama.yaml', 'import trace.json.gz', 'load run.json'."""
    verb = {"run": "load", "workload": "replay", "trace": "import"}[detect_input(path)]
    return f"{verb} {path.name}"
