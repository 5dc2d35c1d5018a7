"""Reading a workload file: schema validation with layer names in the errors, then the graph check.

The records are :mod:`sparsedebug.sources.workload.schema`; the graph check is
:mod:`sparsedebug.sources.workload.graph`; this module joins the two, so neither imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import format_validation_error, validate
from sparsedebug.sources.sniff import WORKLOAD_ONLY, sniff_as
from sparsedebug.sources.workload.graph import check_graph, check_model_workload
from sparsedebug.sources.workload.schema import Workload


def _layer_names(data: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    if isinstance(data, dict) and isinstance(data.get("layers"), list):
        for i, item in enumerate(data["layers"]):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                names[i] = item["name"]
    return names


def parse_workload(data: Any, source: str, *, require_version: bool = False) -> Workload:
    """Validate parsed data as a workload and check its graph; errors name the layer.

    ``require_version``: refuse data without ``schema_version`` (a workload file must say its layout).
    """
    try:
        workload = validate(Workload, data, source, require_version=require_version)
    except UserError as exc:
        names = _layer_names(data)
        lines = []
        for line in str(exc).splitlines():
            for index, name in names.items():
                prefix = f"{source}: layers.{index}."
                if line.startswith(prefix):
                    line = f"{source}: layers.{index} ({name}): {line[len(prefix):]}"
                    break
            lines.append(line)
        raise UserError("\n".join(lines)) from None
    try:
        check_workload(workload)
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None
    return workload


def load_workload(path: Path) -> Workload:
    """Load, validate and graph-check a workload YAML (or JSON) file; a run record or a trace is refused by name,
    and the file must carry ``schema_version``."""
    _, data = sniff_as(path, WORKLOAD_ONLY)
    return parse_workload(data, str(path), require_version=True)


def revalidate(workload: Workload) -> Workload:
    """Re-run validation on a workload built with ``model_copy(update=...)`` (which skips it)."""
    try:
        fresh = Workload.model_validate(workload.model_dump())
    except ValidationError as exc:
        raise UserError(format_validation_error(f"workload {workload.name!r}", exc)) from None
    check_workload(fresh)
    return fresh


def check_workload(workload: Workload) -> None:
    """The check a workload's graph needs before anything runs: its declared layers, or a model workload's entries.

    This is where the schema's two kinds of graph are told apart on reading; past it, callers reach the graph
    through :func:`sparsedebug.sources.replay.sources.graph_source`.
    """
    if workload.model is not None:
        check_model_workload(workload)
    else:
        check_graph(workload)
