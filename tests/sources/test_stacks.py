"""The shipped stack profiles: one file per stack, each valid, every fact with versions and a traceable citation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparsedebug.core.errors import UserError
from sparsedebug.sources.stacks import load_stack_file, load_stacks, parse_stack_spec, stack_files, stack_for_backend
from tests.conftest import FIXTURES


def test_one_file_per_stack_all_valid() -> None:
    files = stack_files()
    assert {f.stem for f in files} == {"pytorch", "torchao", "vllm", "tensorrt"}
    for path in files:
        profile = load_stack_file(path)
        assert profile.name == path.stem
        for fact in [*profile.paths, *profile.limits]:
            assert fact.cite, f"{path}: {fact.id} has no citation"


def test_a_citation_without_a_number_or_measurement_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load((FIXTURES / "stacks" / "vllm.yaml").read_text())
    data["limits"][0]["cite"][0]["source"] = "the vLLM docs"
    bad = tmp_path / "vllm.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match=r"vllm.yaml: limits.0.cite.0.source"):
        load_stack_file(bad)


def test_aliases_and_backends() -> None:
    stacks = load_stacks()
    assert stacks["torch"][0].name == "pytorch" and stacks["tensorrt-llm"][0].name == "tensorrt"
    assert parse_stack_spec("TRT==10.3.0.26").label == "tensorrt==10.3.0.26"
    match = stack_for_backend("cusparselt")
    assert match is not None and (match[0].name, match[1].id) == ("pytorch", "cusparselt")
    assert stack_for_backend("cublas") is None
