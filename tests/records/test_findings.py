"""The locate records: bisect.json is a top-level record with schema_version; unknown keys are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_record, save_record
from sparsedebug.locate.paths import compare_paths
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.base import FACTS_SCHEMA_VERSION
from sparsedebug.records.findings import BisectResult, FallbackReport
from tests.locate.test_walk import make_run


def test_bisect_result_round_trips_with_schema_version(tmp_path: Path) -> None:
    result = bisect_runs(make_run("b", seed=1), make_run("c", seed=2, scale={"layers.0.mlp.up": 1.5}))
    path = tmp_path / "bisect.json"
    save_record(result, path)
    data = json.loads(path.read_text())
    assert next(iter(data)) == "schema_version" and data["schema_version"] == FACTS_SCHEMA_VERSION
    assert load_record(path, BisectResult) == result


def test_unknown_keys_and_newer_versions_are_refused(tmp_path: Path) -> None:
    result = bisect_runs(make_run("b", seed=1), make_run("c", seed=2))
    data = result.model_dump(mode="json")
    data["stages"][0]["layers"] = [{"stage": "graph", "layer": "x", "kind": "added", "regression": True, "facts": {"code": "locate.finding.added", "values": {"op": "linear"}}, "extra": 1}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"bad\.json: stages\.0\.layers\.0\.extra: unknown field"):
        load_record(bad, BisectResult)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**result.model_dump(mode="json"), "schema_version": FACTS_SCHEMA_VERSION + 1}))
    with pytest.raises(UserError, match="newer than this sparsedebug understands"):
        load_record(newer, BisectResult)


def test_a_bisect_result_with_sentences_is_refused_with_an_upgrade_message(tmp_path: Path) -> None:
    """Layout 1 held sentences (summary, detail, verdict); this release reads the facts layout only."""
    result = bisect_runs(make_run("b", seed=1), make_run("c", seed=2))
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**result.model_dump(mode="json"), "schema_version": 1}))
    with pytest.raises(UserError, match="written by an older sparsedebug"):
        load_record(old, BisectResult)


def test_fallback_report_refuses_unknown_keys() -> None:
    report = compare_paths(make_run("b", seed=1), make_run("c", seed=2))
    data = report.model_dump(mode="json")
    assert FallbackReport.model_validate(data) == report
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        FallbackReport.model_validate({**data, "surprise": True})
