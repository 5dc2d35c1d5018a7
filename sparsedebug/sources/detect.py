"""The one door from a path to what it holds: a run, a workload, a trace or a bundle.

Every command that takes such a path goes through here, so that they agree on what a
file is and say the same thing when it is not what they need:

- :func:`detect_kind` says whether a file is a run record, a workload (replayed) or a
  PyTorch profiler trace (imported);
- :func:`load_run` turns any of the three into a ``RunRecord`` (``bisect``, ``gate``,
  ``classify``, ``fallbacks``, ``playbook run``); ``accept`` narrows the kinds a command takes;
- :func:`resolve_workload` and :func:`load_workload` read a workload (``replay``, ``lower``,
  ``reduce``), :func:`load_trace` a trace with its whole-trace summary (``import trace``),
  :func:`load_bundle` a bundle directory (``memo``).

The replay engine, the trace importer and the bundle reader are imported when used, so
that importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, reading, validate
from sparsedebug.records.run import RunRecord

if TYPE_CHECKING:
    from sparsedebug.sources.bundle import LoadedBundle
    from sparsedebug.sources.importers.trace.importer import TraceImport
    from sparsedebug.sources.workload.schema import Workload

RunKind = Literal["run", "workload", "trace"]
"""What a BASE/CAND file holds."""

RUN_KINDS: tuple[RunKind, ...] = ("run", "workload", "trace")

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``, as the replay calls it."""

_WHAT: dict[RunKind, str] = {
    "run": "a run record (kind: run)",
    "workload": "a workload (kind: workload)",
    "trace": "a PyTorch trace (.json/.json.gz with traceEvents)",
}
_RECORD_KINDS: tuple[RunKind, ...] = ("run", "workload")
"""The kinds that are records with a ``kind`` field (a trace is recognised by its events)."""
_WORKLOAD: tuple[RunKind, ...] = ("workload",)
_VERB: dict[RunKind, str] = {"run": "load", "workload": "replay", "trace": "import"}


_GZIP_MAGIC = b"\x1f\x8b"
_HEAD = 65536


def _head(path: Path) -> bytes:
    with reading(path), path.open("rb") as handle:
        return handle.read(_HEAD)


def _binary(head: bytes) -> bool:
    """Whether a file's first bytes are not text: a NUL byte, or bytes that are not UTF-8 (a cut last character aside)."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3 or len(head) < _HEAD
    return False


def _sniff(path: Path) -> tuple[RunKind | None, Any]:
    """The kind of ``path`` (None when its ``kind`` is none of ours) and its parsed data (None for a trace).

    ``.json.gz`` is a trace; ``.json`` is a trace when its head mentions
    ``traceEvents`` (or it is a bare event array); anything else is parsed and read
    by its ``kind`` field.
    """
    name = path.name.lower()
    if name.endswith(".gz"):
        return "trace", None
    if not path.is_file():
        raise UserError(f"{path}: file not found" if not path.exists() else f"{path}: is a directory, expected a file")
    head = _head(path)
    if head.startswith(_GZIP_MAGIC):
        return "trace", None  # a compressed trace under another name: the importer reads it by its magic bytes
    if _binary(head):
        raise UserError(f"{path}: binary data, not {_choices(RUN_KINDS)}")
    if name.endswith(".json"):
        text = head.decode("utf-8", errors="replace")
        if '"traceEvents"' in text or text.lstrip().startswith("["):
            return "trace", None
    data = load_data(path)
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "run":
        return "run", data
    if kind == "workload":
        return "workload", data
    return None, data


def _sniff_as(path: Path, accept: Collection[RunKind]) -> tuple[RunKind, Any]:
    """Like ``_sniff``, refusing kinds outside ``accept``.

    A file without a ``kind`` field is read as the one record kind (run or
    workload) that ``accept`` names, when it names exactly one: both records
    default their ``kind``, and validating it names what is wrong.
    """
    kind, data = _sniff(path)
    if kind is None:
        records = [k for k in _RECORD_KINDS if k in accept]
        if len(records) == 1 and not (isinstance(data, dict) and "kind" in data):
            return records[0], data  # validation says what is wrong with it
        found = data.get("kind") if isinstance(data, dict) else None
        raise UserError(f"{path}: kind: expected {_choices(accept)}, got {found!r}")
    if kind not in accept:
        raise UserError(f"{path}: is {_WHAT[kind]}; expected {_choices(accept)}")
    return kind, data


def detect_kind(path: Path) -> RunKind:
    """What a BASE/CAND file is: a run record, a workload (replayed) or a PyTorch trace (imported).

    ``.json.gz`` is a trace; ``.json`` is a trace when its head mentions
    ``traceEvents`` (or it is a bare event array), otherwise a record; YAML is a
    run record or a workload according to its ``kind`` field. Anything else is a
    one-line ``UserError`` naming the file.
    """
    kind, _ = _sniff_as(path, RUN_KINDS)
    return kind


def describe_input(path: Path) -> str:
    """A short phrase for progress lines: 'replay llama.yaml', 'import trace.json.gz', 'load run.json'."""
    return f"{_VERB[detect_kind(path)]} {path.name}"


def load_run(
    path: Path,
    *,
    repeats: int | None = None,
    progress: Progress | None = None,
    accept: Collection[RunKind] = RUN_KINDS,
) -> RunRecord:
    """Load a run record as is, replay a workload, or import a trace into a ``RunRecord``.

    ``repeats`` overrides a replayed workload's repetitions. ``progress(stage, done,
    total)`` is the replay's progress callback (also called once around a trace
    import). ``accept`` lists the kinds the caller takes; another kind is a
    ``UserError`` saying what the file is and what was expected.
    """
    kind, data = _sniff_as(path, accept)
    if kind == "run":
        return validate(RunRecord, data, str(path))
    if kind == "workload":
        from sparsedebug.sources.replay.replay import replay
        from sparsedebug.sources.workload.load import parse_workload

        return replay(parse_workload(data, str(path)), repeats=repeats, progress=progress, source_path=path)
    if progress is not None:
        progress("import", 0, 1)
    record = load_trace(path).record
    if progress is not None:
        progress("import", 1, 1)
    return record


def resolve_workload(argument: str) -> Path:
    """A workload file path, or the name of an embedded workload (``llama_2of4``) when no such file exists."""
    path = Path(argument)
    if path.exists() or path.suffix in (".yaml", ".yml", ".json") or "/" in argument:
        return path
    from sparsedebug.core.resources import embedded_workload

    return embedded_workload(argument)


def load_workload(path: Path) -> Workload:
    """Load, validate and graph-check a workload file; a run record or a trace is refused by name."""
    from sparsedebug.sources.workload.load import parse_workload

    _, data = _sniff_as(path, _WORKLOAD)
    return parse_workload(data, str(path))


def load_trace(path: Path, *, include_last_step: bool = False) -> TraceImport:
    """Import a PyTorch profiler Chrome trace (``.json`` or ``.json.gz``): the run record and the whole-trace summary
    (``include_last_step``: HTA's breakdown keeps the last ProfilerStep, as HTA's include_last_profiler_step)."""
    from sparsedebug.sources.importers.trace.importer import analyze_trace

    return analyze_trace(path, include_last_step=include_last_step)


def load_bundle(root: Path) -> LoadedBundle:
    """Read a bundle directory written by ``playbook run`` back into its records."""
    from sparsedebug.sources.bundle import load_bundle as read_bundle

    return read_bundle(root)


def _choices(kinds: Collection[RunKind]) -> str:
    """'a run record (kind: run), a workload (kind: workload) or a PyTorch trace (...)'."""
    names = [_WHAT[kind] for kind in RUN_KINDS if kind in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
