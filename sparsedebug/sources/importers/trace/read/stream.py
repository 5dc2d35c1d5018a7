"""Stream the events of a Chrome/Kineto trace without holding the whole document.

A Kineto trace is one JSON object whose ``traceEvents`` member is a long array.
``iter_trace`` walks the top-level object with ``json.JSONDecoder.raw_decode``
over a sliding text buffer: the small metadata members are decoded whole, and the
``traceEvents`` array is yielded one event at a time, so memory stays bounded by
the largest single event plus what the caller keeps. A bare JSON array of events
(the other form the Chrome trace format allows) is accepted too.

``iter_event_batches`` is the importer's fast path over the same buffer: it cuts
the array at the last element boundary in the buffer (``}`` ``,`` ``{``) and
decodes the whole run of events in one call of msgspec's typed decoder into
:class:`Event` structs, which checks them in bulk (an object, scalar identity
fields, an object or null ``args``) and never builds the members the importer does
not read. ``Input Dims``/``Input type``/``Input Strides``/``Concrete Inputs`` come
back undecoded (``msgspec.Raw``): the importer decodes each distinct value once.
A run that does not pass (malformed JSON, an event that fails the check, a cut
that fell inside a string or a nested object) is read again element by element
by the generic path, which says where the JSON is malformed and hands back the
values that are no well-formed event as they are, so both paths keep and skip
exactly the same events.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import reading
from sparsedebug.records.trace import UNTIMED_WORDS

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
        """Decode one JSON value at the cursor, reading more input while it is incomplete; a value nested deeper
        than Python's decoder can follow is a one-line ``UserError``, as in :func:`core.io.load_json_text`."""
        try:
            return self._value(decoder)
        except RecursionError:
            raise UserError(f"{self.path}: JSON nested too deeply to read at character {self.consumed + self.pos}") from None

    def _value(self, decoder: json.JSONDecoder) -> Any:
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


def open_text(path: Path, digest: Any = None) -> IO[str]:
    """Open a plain or gzip-compressed (by magic bytes, not suffix) UTF-8 text file.

    ``digest`` (a ``hashlib`` object): fed every byte of the file as it is read.
    """
    with reading(path), path.open("rb") as raw:
        magic = raw.read(2)
    if digest is None:
        if magic == b"\x1f\x8b":
            return gzip.open(path, "rt", encoding="utf-8")
        return path.open("r", encoding="utf-8")
    with reading(path):
        hashed = io.BufferedReader(_Hashing(path.open("rb", buffering=0), digest), buffer_size=_CHUNK)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.GzipFile(fileobj=hashed, mode="rb"), encoding="utf-8")
    return io.TextIOWrapper(hashed, encoding="utf-8")


class _Hashing(io.RawIOBase):
    """A raw binary file that feeds what is read from it to a hash (the file's sha256 without a second pass)."""

    def __init__(self, raw: IO[bytes], digest: Any) -> None:
        self.raw = raw
        self.digest = digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self.raw.readinto(buffer)  # type: ignore[attr-defined]
        if count:
            self.digest.update(memoryview(buffer)[:count])
        return int(count or 0)

    def drain(self) -> None:
        """Hash whatever the reader above left unread (bytes after a gzip stream's end)."""
        for chunk in iter(lambda: self.raw.read(_CHUNK), b""):
            self.digest.update(chunk)

    def close(self) -> None:
        self.raw.close()
        super().close()


def iter_trace(path: Path, metadata: dict[str, Any]) -> Iterator[Any]:
    """Yield each element of the trace's ``traceEvents`` array; other top-level members go into ``metadata``.

    ``metadata`` is filled as the top-level object is read, so members after the
    array are only present once the iterator is exhausted.
    """
    yield from _document(path, metadata, _array)


def _document(
    path: Path, metadata: dict[str, Any], array: Callable[[_Buffer, json.JSONDecoder], Iterator[Any]], digest: Any = None,
) -> Iterator[Any]:
    """Walk the top-level object (or bare array), handing the ``traceEvents`` array to ``array``; ``digest`` sees every byte."""
    decoder = json.JSONDecoder()
    with open_text(path, digest) as handle:
        buf = _Buffer(handle, path)
        first = buf.peek()
        if first == "":
            raise UserError(f"{path}: empty file, expected a Chrome trace (JSON object with traceEvents)")
        if first == "[":
            yield from array(buf, decoder)
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
                    yield from array(buf, decoder)
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
        if digest is not None:
            _drain(handle)


# A JSON value that is not a list or an object.
Scalar = str | int | float | bool | None

# An ``Input ...`` member the event does not have (a present ``null`` is ``Raw(b"null")``).
ABSENT = msgspec.Raw(b"")


class EventArgs(msgspec.Struct, gc=False):
    """The ``args`` members the importer reads; the decoder skips the others without building them.

    The four ``Input ...`` members are ``msgspec.Raw`` (undecoded JSON text, ``ABSENT`` when
    missing) from the fast path, and the decoded values from the generic one (``event_of``):
    read them through ``decoded``.
    """

    device: Any = None
    stream: Any = None
    correlation: Any = None
    name: Any = None
    seq: Any = msgspec.field(default=None, name="Sequence number")
    fwd_thread: Any = msgspec.field(default=None, name="Fwd thread id")
    dims: msgspec.Raw = msgspec.field(default=ABSENT, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=ABSENT, name="Input type")
    strides: msgspec.Raw = msgspec.field(default=ABSENT, name="Input Strides")
    concrete: msgspec.Raw = msgspec.field(default=ABSENT, name="Concrete Inputs")


class Event(msgspec.Struct, gc=False):
    """One well-formed trace event: an object whose identity fields are scalars, with the members the importer reads.

    ``id`` is ``msgspec.UNSET`` when the event has none; ``args`` is None when missing or null.
    """

    ph: Scalar = None
    cat: Scalar = None
    name: Scalar = None
    pid: Scalar = None
    tid: Scalar = None
    id: Scalar | msgspec.UnsetType = msgspec.UNSET
    ts: Any = None
    dur: Any = None
    args: EventArgs | None = None


_BATCH = msgspec.json.Decoder(list[Event])
# Where one object element of the array may end and the next begin (checked by decoding the run before it).
_BOUNDARY = re.compile(r"\}[ \t\r\n]*,[ \t\r\n]*(?=\{)")
_TAIL = 1 << 16


_decode_raw = msgspec.json.Decoder().decode


def decoded(value: Any, cache: dict[bytes, Any]) -> Any:
    """The value of an ``Input ...`` member: raw JSON text decoded once per distinct text (``cache``), None when absent.

    Equal texts share one decoded object: treat it as read-only.
    """
    if value.__class__ is not msgspec.Raw:
        return None if value is ABSENT else value
    key = bytes(value)
    if not key:
        return None
    try:
        return cache[key]
    except KeyError:
        pass
    try:
        result = _decode_raw(key)
    except msgspec.DecodeError:  # valid JSON msgspec will not build (a number beyond float range): decode as json does
        result = json.loads(key)
    cache[key] = result
    return result


def event_of(value: Any) -> Any:
    """A decoded event as an :class:`Event` when it is a well-formed object, else the value itself (for the caller to count)."""
    if not well_formed(value):
        return value
    get = value.get
    args = get("args")
    if isinstance(args, dict):
        aget = args.get
        args = EventArgs(
            device=aget("device"), stream=aget("stream"), correlation=aget("correlation"), name=aget("name"),
            seq=aget("Sequence number"), fwd_thread=aget("Fwd thread id"),
            dims=aget("Input Dims", ABSENT), types=aget("Input type", ABSENT), strides=aget("Input Strides", ABSENT),
            concrete=aget("Concrete Inputs", ABSENT),
        )
    else:
        args = None
    return Event(get("ph"), get("cat"), get("name"), get("pid"), get("tid"), get("id", msgspec.UNSET), get("ts"), get("dur"), args)


def iter_event_batches(path: Path, metadata: dict[str, Any], digest: Any = None) -> Iterator[list[Any]]:
    """The ``traceEvents`` of ``path`` in runs: :class:`Event` for each well-formed event, the decoded value for any other.

    Same events, same order, same errors and same ``metadata`` as ``iter_trace``. ``digest`` (a ``hashlib``
    object) has seen every byte of the file once the iterator is exhausted.
    """
    yield from _document(path, metadata, _batches, digest)


def _drain(handle: IO[str]) -> None:
    """Feed the digest what the text and gzip layers did not read (their buffers hold none past the end)."""
    layer: Any = handle.buffer  # type: ignore[attr-defined]
    while not isinstance(layer, _Hashing):
        layer = layer.fileobj if isinstance(layer, gzip.GzipFile) else layer.raw
    layer.drain()


def _last_boundary(text: str, start: int) -> tuple[int, int] | None:
    """(end of the element before, start of the next) of the last candidate boundary in ``text[start:]``."""
    for begin in (max(start, len(text) - _TAIL), start):
        last = None
        for last in _BOUNDARY.finditer(text, begin):
            pass
        if last is not None:
            return last.start() + 1, last.end()
        if begin == start:
            break
    return None


def _batches(buf: _Buffer, decoder: json.JSONDecoder) -> Iterator[list[Any]]:
    buf.expect("[", "'['")
    if buf.peek() == "]":
        buf.pos += 1
        return
    while True:
        while not buf.eof and len(buf.text) - buf.pos < _CHUNK:
            buf.fill()
        cut = _last_boundary(buf.text, buf.pos)
        if cut is None and not buf.eof:
            buf.fill()  # one element longer than the buffer: read on
            continue
        if cut is not None:
            end, nxt = cut
            try:
                batch = _BATCH.decode("[" + buf.text[buf.pos : end] + "]")
            except msgspec.DecodeError:  # malformed, an event that fails the check, or a cut inside a value
                pass
            else:
                buf.pos = nxt
                yield batch
                continue
            stop = buf.consumed + end
        else:
            stop = None  # the last elements: up to the closing bracket
        items: list[Any] = []
        for value, closed in _elements(buf, decoder, stop):
            items.append(event_of(value))
            if closed:
                yield items
                return
        yield items


def _elements(buf: _Buffer, decoder: json.JSONDecoder, stop: int | None) -> Iterator[tuple[Any, bool]]:
    """Elements one at a time, with whether the array closed after each, until the cursor passes ``stop`` (absolute)."""
    while True:
        value = buf.value(decoder)
        if buf.peek() == ",":
            buf.pos += 1
            yield value, False
            if stop is not None and buf.consumed + buf.pos >= stop:
                return
            continue
        buf.expect("]", "',' or ']' in traceEvents")
        yield value, True
        return


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
    """Why an event's timing is unusable, as a reason code of :data:`UNTIMED_WORDS`."""
    if ts is None:
        return "no_ts_dur" if dur is None else "no_ts"
    return "no_dur" if dur is None else "negative_dur"


def untimed_summary(skipped: dict[str, int], categories: Collection[str]) -> str:
    """For a refusal: '; 8 GPU event(s) had no usable timing: 5 kernel without numeric ts and dur, 3 ...' (or '')."""
    parts = [(count, cat, reason) for key, count in skipped.items() for cat, _, reason in [key.partition(":")]
             if cat in categories and reason in UNTIMED_WORDS]
    if not parts:
        return ""
    total = sum(count for count, _, _ in parts)
    return f"; {total} GPU event(s) had no usable timing: " + ", ".join(f"{n} {cat} {UNTIMED_WORDS[r]}" for n, cat, r in parts)


# Event fields used as keys (categories, threads, flow ids): a list or an object there makes the event malformed.
IDENTITY_FIELDS = ("ph", "cat", "name", "pid", "tid", "id")


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
