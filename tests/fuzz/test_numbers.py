"""Fuzz the numbers: every numeric field of a trace's events, a run record, an nvidia-smi and a Zeus log, the numeric options,
and folders of mixed files.

A number no measurement can be (NaN, an infinity, a magnitude beyond any run) is refused by
a named check as one line and exit 2; anything else is read. Never a traceback.
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.core.bounds import MAX_TRACE_DURATION_US, MAX_TRACE_TIMESTAMP_US, MAX_UTC_OFFSET_H
from sparsedebug.core.io import save_record
from tests.conftest import FIXTURES
from tests.fuzz.conftest import FUZZ
from tests.fuzz.harness import check_cli
from tests.support.synth import dense_run, sparse_run
from tests.support.tracegen import TraceSpec, generate

TRACE, _ = generate(TraceSpec(layers=3, iterations=3, backward=False, optimizer=False, nccl=False))
TIMED_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cpu_op", "user_annotation", "gpu_user_annotation"}
"""Categories whose complete events are kept with their ts and dur (``read.events``)."""

ODD = st.sampled_from([math.nan, math.inf, -math.inf, 1e30, -1e30, 1e300, 5e-324, -1.0, 0.0, 2**63, -(2**63)]) | st.floats()
"""Numbers a damaged or hand-edited file can hold (Python's json writes NaN and Infinity bare)."""


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="fuzz-num-"))


def _numeric_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every number (not a boolean) in a document."""
    if isinstance(obj, bool):
        return []
    if isinstance(obj, int | float):
        return [prefix]
    if isinstance(obj, dict):
        return [p for key, value in obj.items() for p in _numeric_paths(value, (*prefix, key))]
    if isinstance(obj, list):
        return [p for index, value in enumerate(obj) for p in _numeric_paths(value, (*prefix, index))]
    return []


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _refused_trace_number(field: str, value: float) -> bool:
    """Whether the trace reader must refuse this ts or dur of a timed event (a negative dur is skipped instead)."""
    if field == "dur":
        return not value < 0 and not (0 <= value <= MAX_TRACE_DURATION_US)
    return not (-MAX_TRACE_TIMESTAMP_US <= value <= MAX_TRACE_TIMESTAMP_US)


@FUZZ
@given(data=st.data(), compress=st.booleans())
def test_every_number_of_a_trace_event(data: st.DataObject, compress: bool) -> None:
    doc = json.loads(json.dumps(TRACE))
    events = doc["traceEvents"]
    index = data.draw(st.integers(0, len(events) - 1))
    paths = _numeric_paths(events[index])
    if not paths:
        return
    path = data.draw(st.sampled_from(paths))
    value = data.draw(ODD)
    _set(events[index], path, value)
    raw = json.dumps(doc).encode()
    file = _folder() / ("t.json.gz" if compress else "t.json")
    file.write_bytes(gzip.compress(raw) if compress else raw)
    result = check_cli(["import", "trace", str(file)], ok=(0, 2))
    event = events[index]
    if (path in (("ts",), ("dur",)) and event.get("ph") == "X" and event.get("cat") in TIMED_CATEGORIES
            and isinstance(event.get("ts"), int | float) and isinstance(event.get("dur"), int | float)
            and _refused_trace_number(path[0], float(value))):
        assert result.exit_code == 2 and f"{path[0]} (us)" in result.stderr, (path, value, result.stderr)


@pytest.fixture(scope="module")
def records() -> tuple[Path, dict[str, Any]]:
    folder = _folder()
    base = folder / "base.json"
    save_record(dense_run(5.0, n=6), base)
    return base, sparse_run(3.5, n=6).model_dump(mode="json")


@FUZZ
@given(data=st.data())
def test_every_number_of_a_run_record(records: tuple[Path, dict[str, Any]], data: st.DataObject) -> None:
    base, clean = records
    doc = json.loads(json.dumps(clean))
    path = data.draw(st.sampled_from(_numeric_paths(doc)))
    value = data.draw(ODD)
    _set(doc, path, value)
    file = _folder() / "cand.yaml"
    file.write_text(yaml.safe_dump(doc))
    result = check_cli(["gate", str(base), str(file)], ok=(0, 1, 2))
    if isinstance(value, float) and not math.isfinite(value):
        assert result.exit_code == 2 and ".".join(map(str, path)) in result.stderr, (path, value, result.stderr)


@FUZZ
@given(value=ODD | st.sampled_from([14.0, -14.0, 14.000001, 0.5]))
def test_the_smi_utc_offset_option(value: float) -> None:
    file = _folder() / "t.json"
    file.write_text(json.dumps(TRACE))
    result = check_cli(["classify", str(file), "--smi-utc-offset", repr(value)], ok=(0, 1, 2))
    refused = not (math.isfinite(value) and abs(value) <= MAX_UTC_OFFSET_H)
    assert (result.exit_code == 2) == refused, (value, result.exit_code, result.stderr)
    if refused:
        assert "--smi-utc-offset" in result.stderr and "expected a finite number of hours" in result.stderr


MEMBERS = st.sampled_from(["trace", "binary", "empty", "cut_gzip", "text", "json_list"])


def _member(kind: str, data: st.DataObject) -> bytes:
    raw = json.dumps(TRACE).encode()
    if kind == "trace":
        return raw
    if kind == "binary":
        return data.draw(st.binary(min_size=1, max_size=512))
    if kind == "empty":
        return b""
    if kind == "cut_gzip":
        packed = gzip.compress(raw)
        return packed[: data.draw(st.integers(2, len(packed) - 1))]
    if kind == "text":
        return data.draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    return b"[1, 2, 3]"


@FUZZ
@given(data=st.data(), kinds=st.lists(MEMBERS, min_size=1, max_size=4))
def test_a_folder_of_mixed_files(data: st.DataObject, kinds: list[str]) -> None:
    folder = _folder() / "ranks"
    folder.mkdir()
    for rank, kind in enumerate(kinds):
        suffix = ".json.gz" if kind == "cut_gzip" or (kind == "trace" and data.draw(st.booleans())) else ".json"
        body = _member(kind, data)
        if kind == "trace" and suffix == ".json.gz":
            body = gzip.compress(body)
        (folder / f"rank{rank}{suffix}").write_bytes(body)
    result = check_cli(["import", "trace", str(folder)], ok=(0, 2))
    if any(kind != "trace" for kind in kinds):
        assert result.exit_code == 2, (kinds, result.stdout)


SMI_LOG = (FIXTURES / "h200" / "nvidia_smi_short.csv").read_text().splitlines()
ZEUS_LOG = (FIXTURES / "artifacts" / "power_zeus.csv").read_text().splitlines()


def _cell_log(data: st.DataObject, lines: list[str], first_numeric: int, unit_of: dict[int, str]) -> tuple[str, float, int, int]:
    """The log with one numeric cell of one data row replaced by an odd number (kept with its unit), and what was put where."""
    row = data.draw(st.integers(1, len(lines) - 1))
    cells = lines[row].split(",")
    column = data.draw(st.integers(first_numeric, len(cells) - 1))
    value = data.draw(ODD)
    cells[column] = f" {value!r}{unit_of.get(column, '')}"
    return "\n".join([*lines[:row], ",".join(cells), *lines[row + 1:]]) + "\n", value, row + 1, column


@FUZZ
@given(data=st.data())
def test_every_number_of_an_smi_log(data: st.DataObject) -> None:
    text, value, line, _ = _cell_log(data, SMI_LOG, 1, {2: " MHz", 3: " MHz", 4: " W", 5: " %", 6: " %"})
    file = _folder() / "smi.csv"
    file.write_text(text)
    result = check_cli(["import", "smi", str(file)], ok=(0, 2))
    if not math.isfinite(value):
        assert result.exit_code == 2 and f"line {line}" in result.stderr, (value, result.stderr)


@FUZZ
@given(data=st.data())
def test_every_number_of_a_zeus_log(data: st.DataObject) -> None:
    text, value, line, column = _cell_log(data, ZEUS_LOG, 0, {})
    file = _folder() / "zeus.csv"
    file.write_text(text)
    result = check_cli(["import", "power", str(file)], ok=(0, 2))
    if line > 1 and (not math.isfinite(value) or abs(value) > 1e18) and column != 1:  # column 1 is window_name, text
        assert result.exit_code == 2 and f"line {line}" in result.stderr, (value, result.stderr)
