"""The ``--executor`` values a run set is parsed through, told apart without importing any executor."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sparsedebug.core.errors import UserError

ExecutorKind = Literal["inprocess", "local", "dask"]


def executor_kind(spec: str) -> ExecutorKind:
    """Which executor ``spec`` names; anything else is a one-line ``UserError`` naming the value."""
    if spec in ("inprocess", "local"):
        return spec  # type: ignore[return-value]  # one of the two literals, checked just above
    if spec.startswith(("dask://", "tcp://")) or Path(spec).suffix == ".json":
        return "dask"
    raise UserError(f"--executor {spec!r}: expected local, inprocess, dask://HOST:PORT (or tcp://HOST:PORT) or a Dask scheduler file (.json)")
