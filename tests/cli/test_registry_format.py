"""A format registered in sources.registry goes through `import` and `playbook run` with no other edit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparsedebug.core.io import load_json_text, read_text
from sparsedebug.records.run import RunRecord, RunSource
from sparsedebug.sources import registry
from tests.conftest import invoke
from tests.support.synth import L, make_run


def _toy_sniff(path: Path, head: bytes | None) -> bool:
    return head is not None and path.name.endswith(".toyrun")


def _toy_load(path: Path) -> RunRecord:
    """A throwaway format: {"latency_ms": 2.0, "sparse": true} -> a two-layer run."""
    data = load_json_text(read_text(path), str(path))
    path_of = "sparse" if data["sparse"] else "dense"
    intent = "2:4" if data["sparse"] else "dense"
    run = make_run(path.stem, [L("fc1", path=path_of, intended=intent), L("act", op="activation")], float(data["latency_ms"]))
    return run.model_copy(update={"source": RunSource(kind="toy_source")})


@pytest.fixture
def toy() -> Iterator[registry.InputKind]:
    kind = registry.InputKind(
        name="toy", what="a toy run (.toyrun)", verb="import", source="toy_source", command="toy", sniff=_toy_sniff, load=_toy_load,
        capabilities=registry.Capabilities(layers=True, kernels=False, timeline=False, absolute_time=False, per_iteration=True,
                                           power=False, replayed=False, accelerator=False, reproducer=False),
    )
    registry.register(kind)
    try:
        yield kind
    finally:
        registry.unregister("toy")


def test_a_registered_format_is_imported_and_walked(toy: registry.InputKind, tmp_path: Path) -> None:
    base, cand = tmp_path / "base.toyrun", tmp_path / "cand.toyrun"
    base.write_text(json.dumps({"latency_ms": 2.0, "sparse": False}))
    cand.write_text(json.dumps({"latency_ms": 1.5, "sparse": True}))
    imported = invoke(["import", "toy", str(cand), "--json"])
    assert imported.exit_code == 0, imported.stderr
    record = RunRecord.model_validate(json.loads(imported.stdout))
    assert record.source.kind == "toy_source" and [layer.name for layer in record.lower.layers] == ["fc1", "act"]
    table = invoke(["import", "toy", str(cand)])
    assert table.exit_code == 0 and "fc1" in table.stdout
    out = tmp_path / "bundle"
    walked = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "-o", str(out)])
    assert walked.exit_code == 0, walked.stdout + walked.stderr
    manifest = json.loads((out / "bundle.json").read_text())
    assert [i["kind"] for i in manifest["inputs"]] == ["toy", "toy"]
    assert (out / "memo.md").is_file()


def test_an_unregistered_format_is_not_an_import_command() -> None:
    result = invoke(["import", "toy", "x.toyrun"])
    assert result.exit_code == 2 and "No such command" in result.stdout + result.stderr
