"""The streamed reader's per-event check and its fast decode path against whole-document json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.importers.trace.read.stream import IDENTITY_FIELDS, iter_trace, well_formed


@pytest.mark.parametrize("key", IDENTITY_FIELDS)
@pytest.mark.parametrize("bad", [[1], {"a": 1}, []])
def test_a_container_in_any_identity_field_is_malformed(key: str, bad: object) -> None:
    event = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "id": 3}
    assert well_formed(event)
    assert not well_formed({**event, key: bad})


@pytest.mark.parametrize("value", ["s", 1, 2.5, True, None])
def test_scalars_and_missing_fields_are_well_formed(value: object) -> None:
    assert well_formed(dict.fromkeys(IDENTITY_FIELDS, value))
    assert well_formed({})
    assert not well_formed([1, 2])


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_events_decode_as_json_does_across_chunk_edges(tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Numbers, strings and objects cut by the buffer's edge decode whole, whatever the chunk size."""
    from sparsedebug.sources.importers.trace.read import stream

    monkeypatch.setattr(stream, "_CHUNK", chunk)
    events = [{"ph": "X", "ts": 1234567.125 + i, "dur": 10**i, "name": "k\u00e9\\\"" * i, "args": {"n": [i, -i]}} for i in range(12)]
    doc = {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0}], "tail": 12345678901234567890}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    metadata: dict[str, object] = {}
    assert list(iter_trace(path, metadata)) == events
    assert metadata == {k: v for k, v in doc.items() if k != "traceEvents"}


def test_a_malformed_event_names_its_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [{"ph": "X"}, {"ph": X}]}', encoding="utf-8")
    with pytest.raises(UserError, match=r"malformed trace JSON at character 37: Expecting value"):
        list(iter_trace(path, {}))


def _fields(item: object) -> object:
    """An event from either path, comparable: its members with the Input values decoded."""
    from sparsedebug.sources.importers.trace.read.stream import Event, decoded

    if not isinstance(item, Event):
        return ("raw", item)
    args = item.args
    flat = None if args is None else (
        args.device, args.stream, args.correlation, args.name, args.seq, args.fwd_thread,
        *(decoded(v, {}) for v in (args.dims, args.types, args.strides, args.concrete)),
    )
    return (item.ph, item.cat, item.name, item.pid, item.tid, item.id, item.ts, item.dur, flat)


def _tricky_events() -> list[object]:
    events: list[object] = []
    for i in range(40):
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::mm{i % 3}", "pid": 1, "tid": 2, "ts": 10.5 + i, "dur": 1.25,
                       "args": {"Input Dims": [[4, 8], [8, 4]], "Input type": ["c10::Half", "c10::Half"], "Sequence number": i,
                                "External id": i, "Concrete Inputs": ["", ""]}})
        events.append({"ph": "X", "cat": "kernel", "name": "void k<{lambda()#1}, {x}>(int)}, {" * (i % 2 + 1), "pid": 0, "tid": 7,
                       "ts": 20.0 + i, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": i, "nested": [{"a": 1}, {"b": [2]}]}})
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": i, "pid": 1, "tid": 2, "ts": 10.0 + i})
    events.insert(17, [1, 2])  # not an object
    events.insert(33, {"ph": "X", "cat": ["kernel"], "name": "k"})  # a list as cat: malformed
    events.insert(50, 12345678901234567890123)  # a bare number
    events.insert(61, {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": [1]})  # args not an object
    events.insert(75, {"ph": "X", "cat": "cpu_op", "name": "n", "ts": 1e308, "dur": 0.5, "args": {"Input Dims": [1, 2]}})
    events.append({"ph": "f", "cat": "ac2g", "id": None, "pid": 0, "tid": 7, "ts": 1})
    return events


@pytest.mark.parametrize("chunk", [7, 300, 4096, 1 << 20])
@pytest.mark.parametrize("indent", [None, 1])
def test_batches_keep_and_skip_what_the_event_path_does(tmp_path: Path, chunk: int, indent: int | None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Same events in the same order from the bulk decoder as from json one event at a time: cuts inside strings
    and nested objects, values that are no well-formed event, and runs that fail the check fall back, nothing lost."""
    from sparsedebug.sources.importers.trace.read import stream

    monkeypatch.setattr(stream, "_CHUNK", chunk)
    events = _tricky_events()
    doc = {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0}], "tail": 12345678901234567890}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    meta_events: dict[str, object] = {}
    meta_batches: dict[str, object] = {}
    expected = [_fields(stream.event_of(e)) for e in iter_trace(path, meta_events)]
    batches = list(stream.iter_event_batches(path, meta_batches))
    assert [_fields(e) for batch in batches for e in batch] == expected
    assert meta_batches == meta_events == {k: v for k, v in doc.items() if k != "traceEvents"}
    assert sum(not isinstance(e, stream.Event) for batch in batches for e in batch) == 3  # a list, a list as cat, a number


def test_a_clean_trace_is_decoded_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Well-formed events never take the element-by-element path, save the last few before the closing bracket."""
    from sparsedebug.sources.importers.trace.read import stream

    monkeypatch.setattr(stream, "_CHUNK", 4096)
    one_by_one: list[object] = []
    elements = stream._elements

    def counted(*args: object) -> object:
        for item in elements(*args):  # type: ignore[arg-type]
            one_by_one.append(item)
            yield item

    monkeypatch.setattr(stream, "_elements", counted)
    events = [e for e in _tricky_events() if isinstance(e, dict) and e.get("cat") in ("cpu_op", "ac2g")]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1), encoding="utf-8")
    batches = list(stream.iter_event_batches(path, {}))
    assert len(batches) > 2 and sum(map(len, batches)) == len(events)
    assert len(one_by_one) == 1  # the last event: no boundary after it
    first = batches[0][0]
    assert isinstance(first.args.dims, stream.msgspec.Raw) and stream.decoded(first.args.dims, {}) == [[4, 8], [8, 4]]


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_a_malformed_event_names_its_position_on_the_bulk_path_too(tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparsedebug.sources.importers.trace.read import stream

    monkeypatch.setattr(stream, "_CHUNK", chunk)
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [{"ph": "X"}, {"ph": X}, {"ph": "X"}, {"ph": "X"}]}', encoding="utf-8")
    with pytest.raises(UserError, match=r"malformed trace JSON at character 37: Expecting value"):
        list(stream.iter_event_batches(path, {}))
    path.write_text('{"traceEvents": [{"ph": "X"}, {"ph": "X", "ts": 1', encoding="utf-8")
    with pytest.raises(UserError, match=r"truncated\?"):
        list(stream.iter_event_batches(path, {}))
