"""Loading and saving records: safe YAML, one line per problem, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import atomic_write_text, file_digest, load_record, save_record
from sparsedebug.records.run import (
    GraphLayer,
    GraphStage,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
)


def _tiny_run() -> RunRecord:
    return RunRecord(
        name="tiny",
        source=RunSource(kind="replay"),
        graph=GraphStage(layers=[GraphLayer(name="fc", op=OpKind.LINEAR, weight_shape=[8, 16], dtype="fp32", intended="2:4")]),
        lower=LowerStage(backend="cpu-numpy", layers=[LowerLayer(name="fc", path=KernelPath.SPARSE)]),
        kernel=KernelStage(layers=[KernelLayer(name="fc", samples_ms=[0.1, 0.2, 0.15])]),
        schedule=ScheduleStage(span_samples_ms=[1.0, 1.1], busy_samples_ms=[0.4, 0.5]),
        outcome=OutcomeStage(latency_samples_ms=[1.0, 1.1]),
    )


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_run_record_round_trips(tmp_path: Path, suffix: str) -> None:
    run = _tiny_run()
    path = tmp_path / f"run{suffix}"
    save_record(run, path)
    assert load_record(path, RunRecord) == run


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text("name: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(UserError, match="evil.yaml: malformed YAML"):
        load_record(path, RunRecord)


def test_nested_problems_are_one_line_each(tmp_path: Path) -> None:
    data = _tiny_run().model_dump(mode="json")
    data["lower"]["layers"][0]["path"] = "teleport"
    data["kernel"]["layers"][0]["samples_ms"] = "fast"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as info:
        load_record(path, RunRecord)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}: lower.layers.0.path: ")
    assert lines[1].startswith(f"{path}: kernel.layers.0.samples_ms: ")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(UserError, match=r"\(top level\): expected a mapping, got a list"):
        load_record(path, RunRecord)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(UserError, match="empty file"):
        load_record(empty, RunRecord)


def test_malformed_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"name": \n')
    with pytest.raises(UserError, match="bad.json: malformed JSON at line 2"):
        load_record(path, RunRecord)


def test_interrupted_write_keeps_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.json"
    target.write_text("old content")

    def crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("sparsedebug.core.io.os.replace", crash)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new content that never lands")
    assert target.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_atomic_write_replaces_content(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_file_digest_is_sha256(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"abc")
    digest = file_digest(path)
    assert digest.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest.size_bytes == 3


def test_non_utf8_file_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UserError, match="bin.yaml: binary data, not UTF-8 text"):
        load_record(path, RunRecord)
