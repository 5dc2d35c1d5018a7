"""Stream the events of a Chrome/Kineto trace without holding the whole document.

A Kineto trace is one JSON object whose ``traceEvents`` member is a long array.
``iter_trace`` walks the top-level object with ``json.JSONDecoder.raw_decode``
over a sliding text buffer: the small metadata members are decoded whole, and the
``traceEvents`` array is yielded one event at a time, so memory stays bounded by
the largest single event plus what the caller keeps. A bare JSON array of events
(the other form the Chrome trace format allows) is accepted too.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, Any

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import reading

_CHUNK = 1 << 20
_WHITESPACE = re.compile(r"[ \t\r\n]*")


class _Buffer:
    """A text buffer over a stream, refilled on demand."""

    def __init__(self, handle: IO[str], path: Path) -> None:
        self.handle = handle
        self.path = path
        self.text = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front, for error positions

    def fill(self) -> bool:
        """Read one more chunk; False at end of input."""
        if self.eof:
            return False
        chunk = _read(self.handle, self.path)
        if not chunk:
            self.eof = True
            return False
        if self.pos > _CHUNK:
            self.consumed += self.pos
            self.text = self.text[self.pos :]
            self.pos = 0
        self.text += chunk
        return True

    def peek(self) -> str:
        """The next non-whitespace character ('' at end of input), without consuming it."""
        while True:
            self.pos = _WHITESPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]  # always matches
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return ""

    def expect(self, char: str, what: str) -> None:
        got = self.peek()
        if got != char:
            found = "end of file" if got == "" else repr(got)
            raise UserError(f"{self.path}: malformed trace JSON at character {self.consumed + self.pos}: expected {what}, found {found}")
        self.pos += 1

    def value(self, decoder: json.JSONDecoder) -> Any:
        """Decode one JSON value at the cursor, reading more input while it is incomplete."""
        self.peek()
        try:  # the common case: a whole value inside the buffer, by json's C scanner directly
            obj, end = decoder.scan_once(self.text, self.pos)  # type: ignore[attr-defined]
        except (StopIteration, json.JSONDecodeError):
            pass  # incomplete here, or malformed: the path below reads on or says where and why
        else:
            if end < len(self.text) or self.eof:
                self.pos = end
                return obj
        while True:
            try:
                obj, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.fill():
                    continue
                truncated = exc.pos >= len(self.text.rstrip()) - 1 or exc.msg.startswith("Unterminated")
                raise UserError(
                    f"{self.path}: malformed trace JSON at character {self.consumed + exc.pos}: {exc.msg}"
                    + (" (the file ends inside this value: truncated?)" if truncated else "")
                ) from None
            # a number at the very end of the buffer may continue in the next chunk
            if end == len(self.text) and not self.eof and self.fill():
                continue
            self.pos = end
            return obj


def _read(handle: IO[str], path: Path) -> str:
    try:
        return handle.read(_CHUNK)
    except EOFError:
        raise UserError(f"{path}: truncated gzip stream (file ends before the end-of-stream marker)") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise UserError(f"{path}: corrupt gzip data: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a trace: binary data, not JSON text ({exc.reason} in the stream)") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None


def open_text(path: Path) -> IO[str]:
    """Open a plain or gzip-compressed (by magic bytes, not suffix) UTF-8 text file."""
    with reading(path), path.open("rb") as raw:
        magic = raw.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def iter_trace(path: Path, metadata: dict[str, Any]) -> Iterator[Any]:
    """Yield each element of the trace's ``traceEvents`` array; other top-level members go into ``metadata``.

    ``metadata`` is filled as the top-level object is read, so members after the
    array are only present once the iterator is exhausted.
    """
    decoder = json.JSONDecoder()
    with open_text(path) as handle:
        buf = _Buffer(handle, path)
        first = buf.peek()
        if first == "":
            raise UserError(f"{path}: empty file, expected a Chrome trace (JSON object with traceEvents)")
        if first == "[":
            yield from _array(buf, decoder)
            _expect_end(buf)
            return
        if first != "{":
            raise UserError(f"{path}: not a Chrome trace: expected a JSON object or array, found {first!r}")
        buf.expect("{", "'{'")
        found_events = False
        if buf.peek() == "}":
            buf.pos += 1
        else:
            while True:
                key = buf.value(decoder)
                if not isinstance(key, str):
                    raise UserError(f"{path}: malformed trace JSON: object key is not a string")
                buf.expect(":", "':'")
                if key == "traceEvents":
                    if buf.peek() != "[":
                        raise UserError(f"{path}: traceEvents: expected an array")
                    found_events = True
                    yield from _array(buf, decoder)
                else:
                    metadata[key] = buf.value(decoder)
                if buf.peek() == ",":
                    buf.pos += 1
                    continue
                buf.expect("}", "',' or '}'")
                break
        _expect_end(buf)
        if not found_events:
            raise UserError(f"{path}: no traceEvents array: not a PyTorch profiler (Kineto) trace")


def _array(buf: _Buffer, decoder: json.JSONDecoder) -> Iterator[Any]:
    buf.expect("[", "'['")
    if buf.peek() == "]":
        buf.pos += 1
        return
    while True:
        yield buf.value(decoder)
        nxt = buf.peek()
        if nxt == ",":
            buf.pos += 1
            continue
        buf.expect("]", "',' or ']' in traceEvents")
        return


def _expect_end(buf: _Buffer) -> None:
    tail = buf.peek()
    if tail != "":
        raise UserError(f"{buf.path}: malformed trace JSON: unexpected {tail!r} after the end of the document")


def untimed(ts: float | None, dur: float | None) -> str:
    """Why an event's timing is unusable, naming the fields: 'without numeric ts and dur', '... dur', 'with negative dur'."""
    missing = [name for name, value in (("ts", ts), ("dur", dur)) if value is None]
    if missing:
        return "without numeric " + " and ".join(missing)
    return "with negative dur"


def untimed_summary(skipped: dict[str, int], categories: Collection[str]) -> str:
    """'; 8 kernel event(s) had no usable timing: 5 without numeric ts and dur, 3 without numeric dur' (or '')."""
    parts = [
        (count, key) for key, count in skipped.items()
        if key.split(" ", 1)[0] in categories and (" without numeric " in key or key.endswith("with negative dur"))
    ]
    if not parts:
        return ""
    total = sum(count for count, _ in parts)
    return f"; {total} GPU event(s) had no usable timing: " + ", ".join(f"{count} {key}" for count, key in parts)


IDENTITY_FIELDS = ("ph", "cat", "name", "pid", "tid", "id")
"""Event fields used as keys (categories, threads, flow ids): a list or an object there makes the event malformed."""


_CONTAINERS = (list, dict)


def well_formed(event: Any) -> bool:
    """Whether an event is an object whose identity fields are scalars (strings, numbers, booleans or null).

    A decoded JSON value is a scalar unless it is a list or a dict; the six fields are checked
    unrolled (this runs once per event of traces with millions).
    """
    if not isinstance(event, dict):
        return False
    get = event.get
    return not (
        isinstance(get("ph"), _CONTAINERS) or isinstance(get("cat"), _CONTAINERS) or isinstance(get("name"), _CONTAINERS)
        or isinstance(get("pid"), _CONTAINERS) or isinstance(get("tid"), _CONTAINERS) or isinstance(get("id"), _CONTAINERS)
    )
