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
