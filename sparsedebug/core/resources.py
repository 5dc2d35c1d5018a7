"""Locate the data shipped with sparsedebug: playbooks, fixture workloads and target measurements.

An installed wheel carries them in ``sparsedebug/_data/{playbooks,workloads,h200,targets,stacks}``
(see ``[tool.hatch.build.targets.wheel.force-include]`` in pyproject.toml); an
editable install or a source checkout reads the repository's ``playbooks/``,
``fixtures/workloads/``, ``fixtures/h200/`` (the measured H200 artifacts) and
``fixtures/targets/`` (what the target cost model reads from them) and ``fixtures/stacks/`` (the stack
profiles ``audit --stack`` reads). The wheel
location wins when both exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sparsedebug.core.errors import UserError

Kind = Literal["playbooks", "workloads", "h200", "targets", "stacks"]

_PACKAGE = Path(__file__).resolve().parents[1]
_CHECKOUT = {
    "playbooks": _PACKAGE.parent / "playbooks",
    "workloads": _PACKAGE.parent / "fixtures" / "workloads",
    "h200": _PACKAGE.parent / "fixtures" / "h200",
    "targets": _PACKAGE.parent / "fixtures" / "targets",
    "stacks": _PACKAGE.parent / "fixtures" / "stacks",
}


def data_dirs(kind: Kind) -> list[Path]:
    """Candidate folders for ``kind``, in lookup order (wheel first, then source checkout)."""
    return [_PACKAGE / "_data" / kind, _CHECKOUT[kind]]


def data_file(kind: Kind, name: str) -> Path:
    """Path of the shipped file ``name`` in the ``kind`` folder (wheel first); ``UserError`` when absent."""
    for directory in data_dirs(kind):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in data_dirs(kind))
    raise UserError(f"shipped data file {name!r} not found (searched {searched}): the installation is incomplete")


def embedded_workload(name: str) -> Path:
    """Path of an embedded workload by file name, with or without ``.yaml``."""
    file_name = name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"
    for directory in data_dirs("workloads"):
        candidate = directory / file_name
        if candidate.is_file():
            return candidate
    known = ", ".join(embedded_workloads()) or "none"
    raise UserError(f"embedded workload {name!r} not found (known: {known})")


def embedded_workloads() -> list[str]:
    """Names (without suffix) of the embedded workloads."""
    for directory in data_dirs("workloads"):
        if directory.is_dir():
            return sorted(p.stem for p in directory.glob("*.yaml"))
    return []
