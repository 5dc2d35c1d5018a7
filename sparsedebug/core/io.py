"""Load and save records as YAML or JSON: safe loading, atomic writes, one-line errors.

Every problem with an input file becomes a ``UserError`` whose message has one
line per problem in the form ``FILE: field.path: message``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sparsedebug.core.errors import UserError
from sparsedebug.records.base import SCHEMA_VERSION
from sparsedebug.records.fingerprint import FileDigest

M = TypeVar("M", bound=BaseModel)

_YAML_SUFFIXES = {".yaml", ".yml"}


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn the OS and decoding errors of reading ``path`` into one-line ``UserError``s."""
    try:
        yield
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: binary data, not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_text(path: Path) -> str:
    """Read a UTF-8 text file, turning OS errors into a one-line ``UserError``."""
    with reading(path):
        return path.read_text(encoding="utf-8")


def load_data(path: Path) -> Any:
    """Parse a YAML (safe loader) or JSON file by its suffix; anything else is tried as YAML."""
    text = read_text(path)
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}: malformed YAML{where}: {problem}") from None


def format_validation_error(source: str, exc: ValidationError) -> str:
    """One line per problem: ``SOURCE: field.path: message``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "missing field"
        lines.append(f"{source}: {loc}: {msg}")
    return "\n".join(lines)


def validate(model: type[M], data: Any, source: str) -> M:
    """Validate parsed data into ``model``; refuse newer schema versions with an upgrade hint."""
    if not isinstance(data, dict):
        kind = "empty file" if data is None else f"a {type(data).__name__}"
        raise UserError(f"{source}: (top level): expected a mapping, got {kind}")
    version = data.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise UserError(
            f"{source}: schema_version: {version} is newer than this sparsedebug understands "
            f"({SCHEMA_VERSION}); upgrade sparsedebug to read it"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise UserError(format_validation_error(source, exc)) from None


def load_record(path: Path, model: type[M]) -> M:
    """Load and validate one record file (YAML or JSON)."""
    return validate(model, load_data(path), str(path))


def dump_text(record: BaseModel, path: Path) -> str:
    """Serialise a record as YAML or JSON according to the target suffix."""
    data = record.model_dump(mode="json")
    if path.suffix.lower() in _YAML_SUFFIXES:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return json.dumps(data, indent=2) + "\n"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: temp file in the same folder, fsync, rename.

    An interrupted write leaves either the old file or none, never a truncated one.
    The file gets the mode a plain ``open`` would give it (0666 minus the umask),
    not the 0600 of the temporary file.
    """
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UserError(f"{path}: output directory {directory} does not exist")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UserError(f"{path}: cannot write to {directory}: {exc.strerror}") from None
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except OSError as exc:
        _remove_quietly(tmp_name)
        raise UserError(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        _remove_quietly(tmp_name)
        raise


def current_umask() -> int:
    """The process umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_quietly(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def save_record(record: BaseModel, path: Path) -> None:
    """Save a record atomically as YAML (``.yaml``/``.yml``) or JSON (anything else)."""
    atomic_write_text(path, dump_text(record, path))


def file_digest(path: Path) -> FileDigest:
    """sha256 and size of a file, streamed; a missing file is a ``UserError``."""
    digest = hashlib.sha256()
    with reading(path), path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
        size = path.stat().st_size
    return FileDigest(path=str(path), sha256=digest.hexdigest(), size_bytes=size)
