"""Phases from the autograd structure, not from annotation text (issue 25)."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

from sparsedebug.records.run import RunRecord
from sparsedebug.sources.importers.trace.importer import import_trace
from tests.support.tracegen import AUTOGRAD_TID, PID, TraceSpec, generate, write_doc


def _phases(tmp_path: Path, name: str, doc: dict[str, Any]) -> tuple[RunRecord, Counter[str]]:
    path = tmp_path / f"{name}.json"
    write_doc(path, doc)
    run = import_trace(path)
    return run, Counter(layer.phase or "-" for layer in run.lower.layers)


def _on_main_thread(doc: dict[str, Any]) -> dict[str, Any]:
    """The backward run on the thread that ran the forward (no autograd engine thread of its own)."""
    moved = copy.deepcopy(doc)
    for event in moved["traceEvents"]:
        if event.get("pid") == PID and event.get("tid") == AUTOGRAD_TID:
            event["tid"] = PID
    moved["traceEvents"] = [e for e in moved["traceEvents"] if not (e.get("ph") == "M" and "pt_autograd" in str(e.get("args", {}).get("name", "")))]
    return moved


def _forward_marked(doc: dict[str, Any]) -> dict[str, Any]:
    """Every step's forward wrapped in a ``## forward: LlamaForCausalLM ##`` annotation, as some frameworks write it."""
    marked = copy.deepcopy(doc)
    events = marked["traceEvents"]
    for step in [e for e in events if e.get("cat") == "user_annotation" and str(e.get("name")).startswith("ProfilerStep#")]:
        inside = [
            e for e in events
            if e.get("tid") == PID and step["ts"] <= e.get("ts", -1) <= step["ts"] + step["dur"]
            and ((e.get("cat") == "user_annotation" and str(e["name"]).startswith("layers.")) or e.get("name") == "aten::gelu")
        ]
        start, end = min(e["ts"] for e in inside), max(e["ts"] + e["dur"] for e in inside)
        events.append({"ph": "X", "cat": "user_annotation", "name": "## forward: LlamaForCausalLM ##", "pid": PID, "tid": PID,
                       "ts": start - 0.5, "dur": end - start + 1.0, "args": {}})
    return marked


def test_backward_on_the_forward_thread_keeps_the_forward_forward(tmp_path: Path) -> None:
    doc, _ = generate(TraceSpec(iterations=3))
    plain, phases = _phases(tmp_path, "plain", doc)
    assert phases["forward"] and phases["backward"] and phases["optimizer"]
    moved, moved_phases = _phases(tmp_path, "main", _on_main_thread(doc))
    forward = {layer.name for layer in plain.lower.layers if layer.phase == "forward"}
    assert forward <= {layer.name for layer in moved.lower.layers if layer.phase == "forward"}
    assert moved_phases["backward"] >= 1 and moved_phases["optimizer"] == phases["optimizer"]
    assert all(layer.name.startswith("backward:") for layer in moved.lower.layers if layer.phase == "backward")


def test_a_forward_marker_is_a_container_and_marks_no_phase(tmp_path: Path) -> None:
    doc, _ = generate(TraceSpec(iterations=3))
    plain, phases = _phases(tmp_path, "plain", doc)
    marked, marked_phases = _phases(tmp_path, "marked", _forward_marked(doc))
    assert marked_phases == phases
    assert [layer.name for layer in marked.lower.layers] == [layer.name for layer in plain.lower.layers]
    both, both_phases = _phases(tmp_path, "both", _on_main_thread(_forward_marked(doc)))
    assert both_phases["forward"] >= phases["forward"] and not any("## forward" in layer.name for layer in both.lower.layers)
