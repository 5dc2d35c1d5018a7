"""Which files form a run set, and which rank each one is.

A set is a directory (every ``*.json``/``*.json.gz`` trace in it), a glob (``traces/rank*.json``) or
an explicit list of files. A rank's number comes from its trace's ``distributedInfo.rank`` when the
file has one (read from the head of the file, not the whole trace), else from the last number in its
file name (``rank3.json``, ``worker_12.pt.trace.json``), else from its place in the sorted list; the
summary records which.
"""

from __future__ import annotations

import glob as globbing
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparsedebug.core.errors import UserError
from sparsedebug.sources.importers.trace.read.stream import open_text

if TYPE_CHECKING:  # a type only: asking whether an argument is a run set imports no rank record
    from sparsedebug.records.ranks import RankSource

TRACE_SUFFIXES = (".json", ".json.gz")
_HEAD_CHARS = 1 << 16
_DISTRIBUTED = re.compile(r'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)(?:[^{}]*?"world_size"\s*:\s*(\d+))?')
_WORLD_FIRST = re.compile(r'"distributedInfo"\s*:\s*\{[^{}]*?"world_size"\s*:\s*(\d+)[^{}]*?"rank"\s*:\s*(\d+)')
_NUMBER = re.compile(r"(\d+)")


@dataclass(frozen=True)
class RankFile:
    """One member of a run set."""

    path: Path
    rank: int
    source: RankSource
    world_size: int | None = None


def is_run_set(argument: str) -> bool:
    """Whether ``argument`` names a run set: an existing directory (not one an importer reads whole, such as a TensorRT
    engine's exports), or a glob pattern (an existing file whose name holds ``[``, ``*`` or ``?`` is that file)."""
    from sparsedebug.sources.registry import sniffed

    path = Path(argument)
    if path.is_dir():
        return sniffed(path, None) is None
    return not path.is_file() and any(ch in argument for ch in "*?[")


def _files(argument: str) -> list[Path]:
    path = Path(argument)
    if path.is_dir():
        found = [p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES)]
        if not found:
            raise UserError(f"{path}: no traces (*.json, *.json.gz) in the directory")
        return sorted(found)
    found = [Path(p) for p in globbing.glob(argument) if Path(p).is_file()]
    if not found:
        raise UserError(f"{argument}: the pattern matches no file")
    return sorted(found)


def _distributed(path: Path) -> tuple[int, int | None] | None:
    """``distributedInfo``'s rank and world size from the head of a trace (Kineto writes it before the events)."""
    try:
        with open_text(path) as handle:
            head = handle.read(_HEAD_CHARS)
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a profiler trace (byte {exc.start} is not UTF-8 text); a run set holds only traces") from None
    except (OSError, EOFError) as exc:  # a .gz that is not gzip or is cut short
        raise UserError(f"{path}: cannot read it as a trace ({exc}); a run set holds only traces") from None
    match = _DISTRIBUTED.search(head)
    if match is not None:
        return int(match.group(1)), int(match.group(2)) if match.group(2) else None
    match = _WORLD_FIRST.search(head)
    if match is not None:
        return int(match.group(2)), int(match.group(1))
    return None


def _name_number(path: Path) -> int | None:
    numbers = _NUMBER.findall(path.name.split(".")[0]) or _NUMBER.findall(path.name)
    return int(numbers[-1]) if numbers else None


def discover(arguments: list[str]) -> list[RankFile]:
    """The members of a run set, in rank order; ``UserError`` for an empty set or a rank given twice.

    ``arguments`` is one directory or glob, or several trace files.
    """
    files = _files(arguments[0]) if len(arguments) == 1 and is_run_set(arguments[0]) else [Path(a) for a in arguments]
    for path in files:
        if not path.is_file():
            raise UserError(f"{path}: file not found (a member of the run set)")
    members: list[RankFile] = []
    by_name = [_name_number(path) for path in files]
    names_unique = None not in by_name and len(set(by_name)) == len(by_name)
    for order, path in enumerate(files):
        info = _distributed(path)
        if info is not None:
            members.append(RankFile(path, info[0], "distributedInfo", info[1]))
        elif names_unique:
            number = by_name[order]
            assert number is not None
            members.append(RankFile(path, number, "file name"))
        else:
            members.append(RankFile(path, order, "order"))
    seen: dict[int, Path] = {}
    for member in members:
        if member.rank in seen:
            raise UserError(f"{member.path}: rank {member.rank} ({member.source}) is also {seen[member.rank]}")
        seen[member.rank] = member.path
    return sorted(members, key=lambda m: m.rank)
