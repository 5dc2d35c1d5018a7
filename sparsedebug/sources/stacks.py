"""Load the shipped stack profiles (``fixtures/stacks/*.yaml``) and parse ``--stack NAME==VERSION``.

Each file is one stack, validated by :class:`~sparsedebug.records.stacks.StackProfile`; a profile is found
by its name or one of its aliases. :func:`parse_stack_spec` splits ``vllm==0.19.1`` into the profile and
the version the user runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, validate
from sparsedebug.core.resources import data_dirs
from sparsedebug.core.versions import release
from sparsedebug.records.stacks import SparsePath, StackProfile


@dataclass(frozen=True)
class StackSpec:
    """A stack profile and the version the user runs (``None``: no version given)."""

    profile: StackProfile
    version: str | None
    file: Path

    @property
    def label(self) -> str:
        """``vllm==0.19.1`` (or the name alone)."""
        return self.profile.name if self.version is None else f"{self.profile.name}=={self.version}"


def stack_files() -> list[Path]:
    """Every shipped stack profile file (wheel first, else the source checkout)."""
    for directory in data_dirs("stacks"):
        if directory.is_dir():
            files = sorted(directory.glob("*.yaml"))
            if files:
                return files
    return []


def load_stack_file(path: Path) -> StackProfile:
    """One stack profile file, validated (``FILE: field: message`` on a bad one)."""
    return validate(StackProfile, load_data(path), str(path))


def load_stacks() -> dict[str, tuple[StackProfile, Path]]:
    """Every shipped profile by name and alias."""
    out: dict[str, tuple[StackProfile, Path]] = {}
    for path in stack_files():
        profile = load_stack_file(path)
        for key in (profile.name, *profile.aliases):
            out[key.lower()] = (profile, path)
    return out


def parse_stack_spec(text: str) -> StackSpec:
    """``NAME==VERSION`` into the shipped profile and the version; ``UserError`` naming the known stacks, or a
    missing version (the verdicts depend on the release)."""
    name, sep, version = text.partition("==")
    name = name.strip().lower()
    stacks = load_stacks()
    if name not in stacks:
        known = sorted({p.name for p, _ in stacks.values()})
        raise UserError(f"--stack {text!r}: unknown stack {name!r}; known: {', '.join(known) or 'none'} (write NAME==VERSION)")
    if not sep:
        raise UserError(f"--stack {text!r}: no version; a stack's verdict depends on its release: write NAME==VERSION "
                        f"(e.g. {name}==1.0)")
    if not version.strip():
        raise UserError(f"--stack {text!r}: no version after '=='")
    clean = version.strip()
    try:
        release(clean)
    except UserError as exc:
        raise UserError(f"--stack {text!r}: {exc}") from None
    profile, path = stacks[name]
    return StackSpec(profile=profile, version=clean, file=path)


def stack_for_backend(backend: str) -> tuple[StackProfile, SparsePath] | None:
    """The shipped profile and path whose kernels a trace's dispatch backend names (``cusparselt`` -> pytorch / cusparselt)."""
    seen: set[str] = set()
    for profile, _path in load_stacks().values():
        if profile.name in seen:
            continue
        seen.add(profile.name)
        for path in profile.paths:
            if backend in path.trace_backends:
                return profile, path
    return None
