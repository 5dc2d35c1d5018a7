"""Golden input/output pairs under fixtures/traces/ (regenerate with `python -m tests.sources.importers.golden --write`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.sources.importers.trace.importer import analyze_trace
from tests.sources.importers.golden import GENERATED, TRACES, digest, expected_path, inputs
from tests.sources.importers.trace_variants import load


@pytest.mark.parametrize("path", inputs(), ids=lambda p: p.name)
def test_import_matches_its_golden_output(path: Path) -> None:
    expected = json.loads(expected_path(path).read_text())
    assert digest(analyze_trace(path)) == expected


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_inputs_are_what_the_generator_makes(name: str) -> None:
    assert load(TRACES / name) == GENERATED[name]()
