"""The one door from a path to a run, workload, trace or bundle: detection, loading, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import save_record
from sparsedebug.sources.detect import describe_input, detect_kind, load_run, load_workload, resolve_workload
from sparsedebug.sources.workload.schema import save_workload
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.locate.test_walk import make_run
from tests.support.builders import mlp_chain

H200 = FIXTURES / "h200"


def test_detect_kind_and_load_errors(tmp_path: Path) -> None:
    run = make_run("r", iterations=4)
    as_json = tmp_path / "run.json"
    as_yaml = tmp_path / "run.yaml"
    save_record(run, as_json)
    save_record(run, as_yaml)
    assert detect_kind(as_json) == "run" and detect_kind(as_yaml) == "run"
    assert load_run(as_yaml) == run
    assert detect_kind(H200 / "trace_dense_T2048.json.gz") == "trace"
    events = tmp_path / "t.json"
    events.write_text(json.dumps({"traceEvents": []}))
    assert detect_kind(events) == "trace"
    other = tmp_path / "fp.yaml"
    other.write_text("kind: fingerprint\n")
    with pytest.raises(UserError, match="fp.yaml: kind"):
        detect_kind(other)
    with pytest.raises(UserError, match="not found"):
        detect_kind(tmp_path / "missing.json")


def test_accept_narrows_the_kinds_and_names_what_the_file_is(tmp_path: Path) -> None:
    workload = mlp_chain("w", [16, 32, 16], sequence=4, repeats=3)
    path = tmp_path / "w.yaml"
    save_workload(workload, path)
    assert detect_kind(path) == "workload"
    assert describe_input(path) == "replay w.yaml"
    with pytest.raises(UserError, match=r"w\.yaml: is a workload \(kind: workload\); expected a run record \(kind: run\) or a PyTorch trace"):
        load_run(path, accept=("run", "trace"))
    with pytest.raises(UserError, match=r"trace_dense_T2048\.json\.gz: is a PyTorch trace .*; expected a workload"):
        load_workload(H200 / "trace_dense_T2048.json.gz")
    run = tmp_path / "run.json"
    save_record(make_run("r", iterations=3), run)
    assert describe_input(run) == "load run.json"
    with pytest.raises(UserError, match=r"run\.json: is a run record \(kind: run\); expected a workload"):
        load_workload(run)


def test_a_file_without_kind_is_the_one_record_kind_the_caller_takes(tmp_path: Path) -> None:
    run = make_run("r", iterations=3)
    data = run.model_dump(mode="json")
    del data["kind"]
    path = tmp_path / "nokind.json"
    path.write_text(json.dumps(data))
    assert load_run(path, accept=("run", "trace")) == run
    with pytest.raises(UserError, match="nokind.json: kind: expected a run record"):
        load_run(path)  # run or workload: the file must say which
    workload = mlp_chain("w", [16, 32, 16], sequence=4, repeats=3)
    raw = workload.model_dump(mode="json", exclude_none=True)
    del raw["kind"]
    wl_path = tmp_path / "nokind.yaml"
    wl_path.write_text(yaml.safe_dump(raw))
    assert load_workload(wl_path) == workload
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(UserError, match="empty.yaml: .*expected a mapping, got empty file"):
        load_workload(empty)


def test_resolve_workload_names_embedded_workloads(tmp_path: Path) -> None:
    assert resolve_workload("llama_dense").is_file()
    assert resolve_workload(str(tmp_path / "x.yaml")) == tmp_path / "x.yaml"
    assert detect_kind(resolve_workload("llama_2of4")) == "workload"


def test_fallbacks_refuses_a_workload_through_the_door(tmp_path: Path) -> None:
    good = mlp_chain("good", [16, 32, 16], sequence=4, repeats=3)
    save_workload(good, tmp_path / "good.yaml")
    run = tmp_path / "run.json"
    save_record(make_run("r", iterations=4), run)
    assert_clean_error(invoke(["fallbacks", str(run), str(tmp_path / "good.yaml")]), 2, "good.yaml: is a workload", "expected a run record")
