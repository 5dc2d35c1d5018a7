"""Fuzz the timing samples of run records: every value a sample list can hold, through bisect, gate and classify.

A run record is validated on load like a workload: its samples are finite positive times
of at most a week (idle and busy times may be zero). A damaged sample is one clean line naming the field
and exit 2, and then ``gate --junit`` leaves no file; an undamaged record gates and writes it.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.core.io import save_record
from sparsedebug.records.defaults import MAX_DURATION_MS
from tests.fuzz.conftest import FUZZ
from tests.fuzz.harness import check_cli
from tests.support.synth import dense_run, sparse_run

SAMPLE_FIELDS: tuple[tuple[Any, ...], ...] = (
    ("outcome", "latency_samples_ms"),
    ("outcome", "dense_baseline_samples_ms"),
    ("kernel", "layers", 0, "samples_ms"),
    ("kernel", "layers", 1, "dense_samples_ms"),
    ("schedule", "span_samples_ms"),
    ("schedule", "busy_samples_ms"),
)
"""Where a run record keeps raw samples (each a list of times in ms)."""

ZERO_ALLOWED = {("schedule", "busy_samples_ms")}
"""Sample lists that are durations, where zero is a valid measurement."""

BAD_VALUES = st.sampled_from([math.nan, math.inf, -math.inf, -1.0, -1e-9, 0.0, 1e300, MAX_DURATION_MS * 1.01])
ODD_VALUES = st.one_of(
    st.floats(min_value=1e-6, max_value=1e6, allow_nan=False), st.integers(1, 10**6), st.sampled_from([MAX_DURATION_MS, 5e-324])
)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("records")
    base, cand = folder / "base.json", folder / "cand.json"
    save_record(dense_run(5.0, n=12), base)
    save_record(sparse_run(3.5, n=12), cand)
    return base, json.loads(cand.read_text())


def _slot(doc: dict[str, Any], field: tuple[Any, ...]) -> list[Any] | None:
    node: Any = doc
    for key in field:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return node if isinstance(node, list) and node else None


def _write(doc: dict[str, Any], suffix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="fuzz-run-")) / f"cand{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(doc, allow_nan=True))  # what a lax writer leaves: bare NaN / Infinity
    else:
        path.write_text(yaml.safe_dump(doc))
    return path


@FUZZ
@given(data=st.data(), suffix=st.sampled_from([".json", ".yaml"]))
def test_damaged_samples_are_refused_by_field(records: tuple[Path, dict[str, Any]], data: st.DataObject, suffix: str) -> None:
    base, clean = records
    doc = json.loads(json.dumps(clean))
    field = data.draw(st.sampled_from([f for f in SAMPLE_FIELDS if _slot(doc, f) is not None]))
    samples = _slot(doc, field)
    assert samples is not None
    index = data.draw(st.integers(0, len(samples) - 1))
    bad = data.draw(BAD_VALUES.filter(lambda v: not (v == 0.0 and field in ZERO_ALLOWED)))
    samples[index] = bad
    path = _write(doc, suffix)
    junit = path.with_name("gate.xml")
    for args in (["bisect", str(base), str(path)], ["gate", str(base), str(path), "--junit", str(junit)], ["classify", str(path)]):
        result = check_cli(args, ok=(2,))
        named = ".".join(map(str, field))
        if suffix == ".json" and not math.isfinite(bad):
            assert "strict JSON has no NaN or Infinity" in result.stderr, result.stderr
        else:
            assert f"{named}.{index}" in result.stderr, (named, result.stderr)
    assert not junit.exists()  # bad input: no JUnit file, never a half-written one


@FUZZ
@given(data=st.data())
def test_finite_positive_samples_are_read(records: tuple[Path, dict[str, Any]], data: st.DataObject) -> None:
    base, clean = records
    doc = json.loads(json.dumps(clean))
    for field in SAMPLE_FIELDS:
        samples = _slot(doc, field)
        if samples is not None and data.draw(st.booleans()):
            samples[data.draw(st.integers(0, len(samples) - 1))] = data.draw(ODD_VALUES)
    path = _write(doc, data.draw(st.sampled_from([".json", ".yaml"])))
    junit = path.with_name("gate.xml")
    check_cli(["bisect", str(base), str(path)], ok=(0,))
    result = check_cli(["gate", str(base), str(path), "--junit", str(junit)], ok=(0, 1))
    assert junit.is_file(), result.stderr  # a gate that decided always leaves its JUnit file
