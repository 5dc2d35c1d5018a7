"""Load and save records as YAML or JSON: safe loading, atomic writes, one-line errors.

Every problem with an input file becomes a ``UserError`` whose message has one
line per problem in the form ``FILE: field.path: message``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import stat
import sys
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


class _NotStrictJson(ValueError):
    """A ``NaN``/``Infinity`` constant: Python's json accepts it, strict JSON (and every other parser) does not."""


def _refuse_constant(name: str) -> Any:
    raise _NotStrictJson(name)


def load_json_text(text: str, source: str) -> Any:
    """Parse strict JSON: malformed text and the non-standard ``NaN``/``Infinity`` are one-line ``UserError``s."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except _NotStrictJson as exc:
        raise UserError(f"{source}: {exc} is not JSON (strict JSON has no NaN or Infinity); write a finite number or null") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise UserError(f"{source}: JSON nested too deeply to read") from None


def finite_or_null(data: Any) -> Any:
    """``data`` with every NaN or infinite float replaced by None, so that it dumps as strict JSON."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_or_null(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [finite_or_null(value) for value in data]
    return data


def dumps_json(data: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text of plain data: a NaN or infinity becomes null, never a bare ``NaN`` strict parsers reject."""
    return json.dumps(finite_or_null(data), indent=indent, allow_nan=False)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading numbers as YAML 1.2 (and JSON) do: ``1e20`` is a float, not the string
    ``'1e20'`` of YAML 1.1, so that a field's own bound names what is wrong with it (``repeats: 1e20`` is over
    the limit, not "unable to parse string as an integer"); and ``2:4`` stays the text ``'2:4'``, not YAML 1.1's
    base-60 integer 124 (an unquoted N:M pattern would otherwise be read as a number)."""


def _mapping_without_repeats(loader: yaml.SafeLoader, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
    """A YAML mapping whose keys are each given once: a key given twice (the last silently winning in PyYAML) is
    a ``malformed YAML`` error at the second one, naming the line of the first."""
    seen: dict[Any, yaml.Node] = {}
    if not isinstance(node, yaml.MappingNode):  # an explicit !!map on a list or a scalar
        raise yaml.constructor.ConstructorError(None, None, "expected a mapping", node.start_mark)
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *anchor``: its keys may be given again, to override them
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: PyYAML's own error below names it
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first at line {first.start_mark.line + 1}); give it once",
                key_node.start_mark,
            )
        seen[key] = key_node
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:map", _mapping_without_repeats)


def _numbers_as_yaml_1_2() -> None:
    numeric = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
    _Loader.yaml_implicit_resolvers = {
        first: [
            (tag, re.compile(r"^(?![^:]*:)" + regexp.pattern[1:], regexp.flags) if tag in numeric else regexp)
            for tag, regexp in resolvers
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
    )


_numbers_as_yaml_1_2()


def load_data(path: Path) -> Any:
    """Parse a YAML (safe loader) or JSON file by its suffix; anything else is tried as YAML."""
    return parse_data(read_text(path), path)


def parse_data(text: str, path: Path) -> Any:
    """Parse the text of ``path`` (already read) as :func:`load_data` parses the file."""
    if path.suffix.lower() == ".json":
        return load_json_text(text, str(path))
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader)
    except RecursionError:
        raise UserError(f"{path}: YAML nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}: malformed YAML{where}: {problem}") from None


def _upper_bound(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> Any:
    """The ``le``/``lt`` bound of the field at ``loc`` (through nested records), None when there is none."""
    field = None
    for part in loc:
        if not isinstance(part, str):
            continue
        if model is None or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        nested = field.annotation
        model = nested if isinstance(nested, type) and issubclass(nested, BaseModel) else None
    for item in field.metadata if field is not None else ():
        bound = getattr(item, "le", None) if getattr(item, "le", None) is not None else getattr(item, "lt", None)
        if bound is not None:
            return bound
    return None


# pydantic's errors of a number out of its field's range: the message names the value read.
_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}


def format_validation_error(source: str, exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line per problem: ``SOURCE: field.path: message`` (a number too large to hold says the field's limit)."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "missing field"
        elif err["type"] in _RANGE_ERRORS:
            msg = f"{msg}, got {err['input']!r}"
        elif err["type"] == "int_parsing_size":
            bound = _upper_bound(model, tuple(err["loc"]))
            limit = f"; at most {bound:,}" if isinstance(bound, int) else ""
            msg = f"{err['input']!r} is far too large for this count{limit}"
        lines.append(f"{source}: {loc}: {msg}")
    return "\n".join(lines)


def check_schema_version(model: type[BaseModel], data: dict[str, Any], source: str, *, required: bool = False) -> None:
    """Refuse a ``schema_version`` that is not a version this sparsedebug reads (1 up to the model's own).

    A version below 1 or not a whole number is refused as such, a newer one with an upgrade
    hint; a missing one is refused when ``required`` (files a user writes: workloads).
    """
    field = model.model_fields.get("schema_version")
    if field is None:
        return
    current = field.default if isinstance(field.default, int) else SCHEMA_VERSION
    if "schema_version" not in data:
        if required:
            raise UserError(f"{source}: schema_version: missing field; add 'schema_version: {current}' (the layout this file follows)")
        return
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise UserError(f"{source}: schema_version: {version!r} is not a schema version; this sparsedebug reads 1 to {current}")
    oldest = getattr(model, "oldest_readable", 1)
    if version < oldest:
        raise UserError(
            f"{source}: schema_version: {version} was written by an older sparsedebug; this release reads "
            f"{oldest} to {current}: write the file again with this release"
        )
    if version > current:
        raise UserError(
            f"{source}: schema_version: {version} is newer than this sparsedebug understands "
            f"({current}); upgrade sparsedebug to read it"
        )


def validate(model: type[M], data: Any, source: str, *, require_version: bool = False) -> M:
    """Validate parsed data into ``model``; refuse a schema version it cannot read (newer: with an upgrade hint)."""
    if not isinstance(data, dict):
        kind = "empty file" if data is None else f"a {type(data).__name__}"
        raise UserError(f"{source}: (top level): expected a mapping, got {kind}")
    check_schema_version(model, data, source, required=require_version)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise UserError(format_validation_error(source, exc, model)) from None


def load_record(path: Path, model: type[M]) -> M:
    """Load and validate one record file (YAML or JSON)."""
    return validate(model, load_data(path), str(path))


def dump_text(record: BaseModel, path: Path) -> str:
    """Serialise a record as YAML or JSON according to the target suffix."""
    data = record.model_dump(mode="json")
    if path.suffix.lower() in _YAML_SUFFIXES:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return dumps_json(data) + "\n"


def existing_kind(path: Path, said: str) -> str | None:
    """What stands at ``path`` (symbolic links followed): None when nothing, else ``file``, ``directory``,
    ``character device``, ``pipe``, ``block device``, ``socket``; a name the file system cannot hold is refused."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            longest = max((len(part) for part in path.parts), default=0)
            raise UserError(f"{said}: name too long for the file system ({longest} characters in one part of the path)") from None
        if exc.errno == errno.ENOTDIR:
            return None  # a file where a folder of the path should be: named by the folder check
        raise UserError(f"{said}: cannot look up: {exc.strerror or exc}") from None
    for test, kind in (
        (stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISCHR, "character device"),
        (stat.S_ISFIFO, "pipe"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind
    return "special file"


def check_input_file(path: Path, option: str | None = None) -> None:
    """Refuse an input that is not a regular file, saying what it is: missing (``file not found``), a folder, or a
    device, pipe or socket (``/dev/zero`` never ends; a pipe can be read once): one line naming the path (and
    ``option``, the flag that gave it)."""
    said = f"{path} ({option})" if option else str(path)
    kind = existing_kind(path, said)
    if kind is None:
        raise UserError(f"{path}: file not found" + (f" ({option})" if option else ""))
    if kind == "directory":
        raise UserError(f"{said}: is a directory, expected a file")
    if kind != "file":
        raise UserError(f"{said}: is a {kind}, not a regular file; save its content to a file and give that")


# What an output path may already be besides a file: written through (``/dev/stdout``, ``/dev/null``, a named
# pipe), never replaced by renaming a temporary file over it.
WRITTEN_THROUGH = ("character device", "pipe")


def open_stream_fd(path: Path) -> int | None:
    """The descriptor of this process's open stream that ``path`` names (``/dev/stdout`` 1, ``/dev/stderr`` 2,
    ``/dev/fd/N`` and ``/proc/self/fd/N`` N), itself or through symbolic links; None for any other path. What
    the stream leads to (a terminal, a pipe, the file the shell redirected to) is written through that
    descriptor, in order with the rest of the output, and nothing on the way is renamed."""
    hop, seen = path, 0
    while True:
        text = os.path.normpath(str(hop if hop.is_absolute() else Path.cwd() / hop))
        named = {"/dev/stdout": 1, "/dev/stderr": 2}.get(text)
        found = re.match(rf"^/(?:dev/fd|proc/(?:self|{os.getpid()})/fd)/(\d+)$", text)
        if named is not None or found is not None:
            return named if named is not None else int(found.group(1)) if found is not None else None
        if seen == 40 or not hop.is_symlink():
            return None
        hop, seen = hop.parent / os.readlink(hop), seen + 1


def check_output_directory(directory: Path, said: str) -> None:
    """Refuse an output's folder that is missing (naming a file that stands where a folder of it should be) or
    that this process cannot write to; ``said`` names the output (and the option that gave it)."""
    if not directory.is_dir():
        blocker = next((p for p in [directory, *directory.parents] if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise UserError(f"{said}: {blocker} is a file, not a directory; choose another output path")
        raise UserError(f"{said}: output directory {directory} does not exist; create it first (mkdir -p {directory})")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UserError(f"{said}: cannot write to {directory}: permission denied")


def check_output(path: Path, option: str | None = None) -> Path:
    """Refuse an output path that cannot be written, before any work is done; return its folder.

    One line naming the path (and ``option``, the flag that gave it): a folder given
    where a file is meant, a block device or socket (never replaced), a name too long,
    a file standing where a folder of the path should be, a folder that does not exist
    (create it first), or one this process cannot write to. A character device or pipe
    (``/dev/stdout``, ``/dev/null``) is accepted: :func:`atomic_write_text` writes through it.
    """
    said = f"{path} ({option})" if option else str(path)
    kind = existing_kind(path, said)
    stream = open_stream_fd(path)
    if path.is_symlink() and kind is not None and stream is None:
        path = Path(os.path.realpath(path))  # a link to a file: the file is replaced, the link kept
    directory = path.parent if str(path.parent) else Path(".")
    if stream is not None:
        return directory
    if kind == "directory":
        raise UserError(f"{said}: is a directory; give a file name inside it (e.g. {path / ('out' + (path.suffix or '.json'))})")
    if kind in WRITTEN_THROUGH:
        return directory
    if kind not in (None, "file"):
        raise UserError(f"{said}: is a {kind}, not a file; sparsedebug never replaces one: choose a file path")
    check_output_directory(directory, said)
    return directory


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: temp file in the same folder, fsync, rename.

    An interrupted write leaves either the old file or none, never a truncated one.
    The file gets the mode a plain ``open`` would give it (0666 minus the umask),
    not the 0600 of the temporary file. A character device or pipe at ``path``
    (``/dev/null``, a named pipe) or one of this process's streams (``/dev/stdout``,
    whatever it resolves to) is written through, never replaced; a symbolic link to a
    file is kept, and the file it names replaced.
    """
    directory = check_output(path)
    stream = open_stream_fd(path)
    if stream is not None or existing_kind(path, str(path)) in WRITTEN_THROUGH:
        try:
            if stream is not None:
                for open_stream in (sys.stdout, sys.stderr):
                    open_stream.flush()  # what was printed before comes first
            with (os.fdopen(os.dup(stream), "w", encoding="utf-8") if stream is not None else path.open("w", encoding="utf-8")) as handle:
                handle.write(text)
        except OSError as exc:
            raise UserError(f"{path}: cannot write: {exc.strerror}") from None
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # as check_output: the link's file is replaced, the link kept
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UserError(f"{path}: cannot write to {directory}: {exc.strerror}") from None
    try:
        os.fchmod(fd, plain_mode())
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


def plain_mode(*, directory: bool = False) -> int:
    """The mode a plain ``open`` (0666) or ``mkdir`` (0777) gives under the umask: what a file or folder made
    through a private temporary name (``mkstemp``'s 0600, ``mkdtemp``'s 0700) is set to before it is renamed."""
    return (0o777 if directory else 0o666) & ~current_umask()


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
    """sha256 and size of a file, streamed; a missing file is a ``UserError``. A folder (an input read whole, such as a
    TensorRT engine's exports) is pinned by its files: sha256 over each file's name and digest, in name order, and their total size."""
    if path.is_dir():
        files = [file_digest(item) for item in sorted(path.iterdir()) if item.is_file()]
        folder = hashlib.sha256("".join(f"{Path(f.path).name}\0{f.sha256}\n" for f in files).encode())
        return FileDigest(path=str(path), sha256=folder.hexdigest(), size_bytes=sum(f.size_bytes for f in files))
    digest = hashlib.sha256()
    with reading(path), path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
        size = path.stat().st_size
    return FileDigest(path=str(path), sha256=digest.hexdigest(), size_bytes=size)
