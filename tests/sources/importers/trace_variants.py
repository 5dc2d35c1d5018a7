"""Make trace variants for tests: strip annotations, rename or drop ops, change strides, dtypes and kernels.

Each function takes a Kineto trace document (the dict json.load gives) and
returns a new one; nothing is edited in place. They build the unannotated and
other-backend inputs the importer is tested on from the real H200 traces.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Doc = dict[str, Any]
Event = dict[str, Any]


def load(path: Path) -> Doc:
    """A trace file (.json or .json.gz) as a document."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        doc: Doc = json.load(handle)
    return doc


def save(doc: Doc, path: Path) -> Path:
    """Write ``doc`` (gzip when the name ends in .gz), deterministic bytes."""
    text = json.dumps(doc, separators=(",", ":"))
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text)
    return path


def _events(doc: Doc, keep: Callable[[Event], bool] | None = None, edit: Callable[[Event], Event | None] | None = None) -> Doc:
    out = copy.deepcopy(doc)
    events = []
    for event in out["traceEvents"]:
        if keep is not None and not keep(event):
            continue
        if edit is not None:
            event = edit(event)
            if event is None:
                continue
        events.append(event)
    out["traceEvents"] = events
    return out


def strip_annotations(doc: Doc) -> Doc:
    """Drop every record_function annotation, CPU and GPU side (ProfilerSteps too)."""
    return _events(doc, keep=lambda e: e.get("cat") not in ("user_annotation", "gpu_user_annotation"))


LEGACY = {"kernel": "Kernel", "gpu_memcpy": "Memcpy", "gpu_memset": "Memset", "cuda_runtime": "Runtime", "cpu_op": "Operator",
          "user_annotation": "Operator"}
"""Today's categories as Kineto's first Chrome traces (PyTorch 1.8-1.9) wrote them: record_function ranges were operators."""


def legacy_categories(doc: Doc) -> Doc:
    """``doc`` as a 2021-era Kineto trace: capitalised categories, no GPU annotations and no ac2g flows."""

    def edit(event: Event) -> Event:
        event["cat"] = LEGACY.get(event.get("cat", ""), event.get("cat"))
        return event

    return _events(doc, keep=lambda e: e.get("cat") not in ("gpu_user_annotation", "ac2g"), edit=edit)


def rename_ops(doc: Doc, mapping: dict[str, str]) -> Doc:
    """Rename CPU ops (e.g. an SDPA backend op) by exact name."""

    def edit(event: Event) -> Event:
        if event.get("cat") == "cpu_op" and event.get("name") in mapping:
            event["name"] = mapping[event["name"]]
        return event

    return _events(doc, edit=edit)


def drop_ops(doc: Doc, names: set[str]) -> Doc:
    """Drop CPU ops by exact name (their children stay, now under the parent)."""
    return _events(doc, keep=lambda e: not (e.get("cat") == "cpu_op" and e.get("name") in names))


def edit_op_inputs(doc: Doc, name: str, *, strides: list[Any] | None = None, types: list[Any] | None = None,
                   dims: list[Any] | None = None, concrete: list[Any] | None = None) -> Doc:
    """Replace the recorded input strides/types/dims/concrete values of every call of op ``name``."""

    def edit(event: Event) -> Event:
        if event.get("cat") == "cpu_op" and event.get("name") == name:
            args = event.setdefault("args", {})
            for key, value in (("Input Strides", strides), ("Input type", types), ("Input Dims", dims), ("Concrete Inputs", concrete)):
                if value is not None:
                    args[key] = copy.deepcopy(value)
        return event

    return _events(doc, edit=edit)


def rename_kernels(doc: Doc, match: Callable[[str], bool], new_name: str) -> Doc:
    """Rename the GPU kernels whose name satisfies ``match``."""

    def edit(event: Event) -> Event:
        if event.get("cat") == "kernel" and match(str(event.get("name", ""))):
            event["name"] = new_name
        return event

    return _events(doc, edit=edit)


def slow_kernels(doc: Doc, match: Callable[[str], bool], extra_us: float) -> Doc:
    """Make each kernel matching ``match`` ``extra_us`` longer and push every later GPU event back by the total so far.

    Only the GPU timeline moves (kernels, memsets, memcpys, GPU annotations); the
    host side keeps its times, as when the GPU was the bottleneck.
    """
    out = copy.deepcopy(doc)
    gpu_cats = ("kernel", "gpu_memset", "gpu_memcpy", "gpu_user_annotation")
    gpu = sorted((e for e in out["traceEvents"] if e.get("cat") in gpu_cats and e.get("ph") == "X"), key=lambda e: e["ts"])
    shift = 0.0
    for event in gpu:
        event["ts"] += shift
        if event.get("cat") == "kernel" and match(str(event.get("name", ""))):
            event["dur"] += extra_us
            shift += extra_us
    return out
