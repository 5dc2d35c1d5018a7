"""Backward-phase layer identity: from the CPU op tree and autograd sequence numbers, never from timing noise.

Two profiles of one training loop differ only in timing; they must import with
the same layers (names, ops, shapes), and bisect must find nothing between
them. The generator (``tests.support.tracegen``) writes the sequence numbers
and the host clock as PyTorch does, so these traces have the structure of a
real one; the seed changes only the timing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.run import OpKind, RunRecord
from sparsedebug.render.words.locate_text import stage_text, verdict_text
from sparsedebug.sources.importers.trace.importer import analyze_trace
from sparsedebug.sources.importers.trace.read.events import HostRange, read_events
from sparsedebug.sources.importers.trace.structure.host_tree import ancestors, children, link_launches, link_parents
from sparsedebug.sources.importers.trace.structure.layers import LayerResolver
from tests.support.tracegen import TraceSpec, generate, layer_name, strip, write_doc

SPEC = TraceSpec(layers=6, calls=2, iterations=6, streams=2, bucket=4)
EVALUATE = "autograd::engine::evaluate_function: "
Doc = dict[str, Any]


def _without_sequence_numbers(doc: Doc) -> Doc:
    """What an older profiler, or one without autograd links, writes: no ``Sequence number``/``Fwd thread id``."""
    drop = ("Sequence number", "Fwd thread id")
    events = [{**e, "args": {k: v for k, v in e["args"].items() if k not in drop}} if isinstance(e.get("args"), dict) else e for e in doc["traceEvents"]]
    return {**doc, "traceEvents": events}


VARIANTS: dict[str, Callable[[Doc], Doc]] = {
    "annotated": lambda doc: doc,
    "unannotated": lambda doc: strip(doc, "no_annotations"),  # type: ignore[dict-item]
    "no_sequence_numbers": _without_sequence_numbers,
    "unannotated_no_sequence_numbers": lambda doc: _without_sequence_numbers(strip(doc, "no_annotations")),  # type: ignore[arg-type]
}


def _import(tmp_path: Path, spec: TraceSpec, variant: str) -> RunRecord:
    path = tmp_path / f"{variant}_{spec.seed}.json"
    write_doc(path, VARIANTS[variant](generate(spec)[0]))
    return analyze_trace(path).record


def _identity(record: RunRecord) -> dict[str, tuple[Any, ...]]:
    lower = {layer.name: layer for layer in record.lower.layers}
    return {
        g.name: (g.op, g.weight_shape, g.input_shape, g.output_shape, lower[g.name].phase, lower[g.name].identity)
        for g in record.graph.layers
    }


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_two_seeds_import_the_same_layers_and_bisect_finds_nothing(tmp_path: Path, variant: str) -> None:
    base = _import(tmp_path, replace(SPEC, seed=1), variant)
    rerun = _import(tmp_path, replace(SPEC, seed=2), variant)
    assert _identity(base) == _identity(rerun)
    assert sum(1 for lo in base.lower.layers if lo.phase == "backward") >= SPEC.layers  # the backward is there
    result = bisect_runs(base, rerun)
    assert result.first_stage is None, verdict_text(result)
    assert not [f.layer for s in result.stages for f in s.layers if f.regression]


def test_backward_layers_are_the_forward_layers_they_differentiate(tmp_path: Path) -> None:
    record = _import(tmp_path, replace(SPEC, seed=3), "annotated")
    graph = {g.name: g for g in record.graph.layers}
    backward = {lo.name for lo in record.lower.layers if lo.phase == "backward"}
    assert backward == {f"backward:{layer_name(i)}" for i in range(SPEC.layers)} | {"backward:nccl:all_reduce"}
    samples = {k.name: k.samples_ms for k in record.kernel.layers}
    for i in range(SPEC.layers):
        forward, grad = graph[layer_name(i)], graph[f"backward:{layer_name(i)}"]
        assert grad.op is OpKind.LINEAR and grad.weight_shape == forward.weight_shape == [SPEC.hidden, SPEC.hidden]
        assert len(samples[grad.name]) == SPEC.calls * SPEC.iterations  # one backward call per forward call
    lower = {lo.name: lo for lo in record.lower.layers}
    grad_gemm = lower[f"backward:{layer_name(0)}"].dispatch
    assert grad_gemm is not None and grad_gemm.op == "aten::mm"  # the GEMMs the engine ran, not the forward's addmm


def test_sparse_forward_does_not_make_its_backward_a_path_change(tmp_path: Path) -> None:
    dense = _import(tmp_path, replace(SPEC, seed=4), "annotated")
    sparse = _import(tmp_path, replace(SPEC, seed=5, sparse_layers=frozenset({0, 1})), "annotated")
    backends = {lo.name: lo.dispatch.backend if lo.dispatch else None for lo in sparse.lower.layers}
    assert backends[layer_name(0)] == "cusparselt" and backends[f"backward:{layer_name(0)}"] == "cublas"
    lower = bisect_runs(dense, sparse).stage("lower")
    assert lower.status == "expected", stage_text(lower)  # the two forward layers, as declared


def test_each_backward_node_maps_to_the_forward_op_that_created_it(tmp_path: Path) -> None:
    spec = replace(SPEC, iterations=3)
    path = tmp_path / "t.json"
    write_doc(path, generate(spec)[0])
    trace = read_events(path)
    link_launches(trace, link_parents(trace.ranges))
    resolver = LayerResolver(trace, children(trace.ranges))
    nodes = sorted((r for r in trace.ranges if r.name.startswith(EVALUATE)), key=lambda r: r.ts)
    assert all(r.seq is None for r in nodes if r.name.endswith("AccumulateGrad"))
    linked = [r for r in nodes if not r.name.endswith("AccumulateGrad")]
    steps = sorted(s.ts for s in trace.steps)

    def layer_of(index: int | None) -> tuple[int, str]:
        assert index is not None
        creator = trace.ranges[index]
        annotation = next(a.name for a in ancestors(trace.ranges, index) if a.kind == "annotation")
        return sum(1 for s in steps if s <= creator.ts) - 1, annotation

    got = [(r.name.removeprefix(EVALUATE), *layer_of(resolver.forward_op(r))) for r in linked]
    order = [layer_name(i) for _call in range(spec.calls) for i in range(spec.layers)]
    expected = [
        (node, step, layer)
        for step in range(spec.iterations)
        for layer in reversed(order)
        for node in ("GeluBackward0", "AddmmBackward0", "TBackward0")
    ]
    assert got == expected
    # the node of a step's first aten::t (its backward runs last) shares its number with the previous step's
    # last ops (aten::zero_, aten::item) and this step's aten::to: the creator is the last of them, not the first
    last_t = [r for r in linked if r.name.endswith("TBackward0") and steps[1] < r.ts < steps[2]][-1]
    sharing = [trace.ranges[i].name for i in resolver.forward_ops_of_seq[last_t.seq or 0][1]]
    assert sharing == ["aten::zero_", "aten::item", "aten::to", "aten::linear", "aten::t"]


def _two_autograd_threads(first: str, tids: tuple[int, int]) -> Doc:
    """One step; two autograd engine threads run a ``MulBackward0`` each (kernels ``k0``/``k1``); ``first`` starts earlier."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "thread 1 (python3)"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0, "dur": 1000.0, "args": {}},
    ]
    for k, tid in enumerate(tids):
        name = f"pt_autograd_{k}"
        start = 100.0 if name == first else 103.0
        events += [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": f"thread {tid} ({name})"}},
            {"ph": "X", "cat": "cpu_op", "name": EVALUATE + "MulBackward0", "pid": 1, "tid": tid, "ts": start, "dur": 20.0, "args": {}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": tid, "ts": start + 2, "dur": 10.0, "args": {}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": start + 4, "dur": 3.0, "args": {"correlation": 10 + k}},
            {"ph": "X", "cat": "kernel", "name": f"k{k}", "pid": 0, "tid": 7 + k, "ts": start + 30, "dur": 5.0, "args": {"device": 0, "stream": 7 + k, "correlation": 10 + k}},
        ]
    return {"traceEvents": events}


def test_ordinals_do_not_follow_how_threads_interleave(tmp_path: Path) -> None:
    names = []
    for first, tids in (("pt_autograd_0", (500, 600)), ("pt_autograd_1", (601, 501))):
        path = tmp_path / f"{first}.json"
        path.write_text(json.dumps(_two_autograd_threads(first, tids)))
        names.append({lo.name: lo.kernels for lo in analyze_trace(path).record.lower.layers})
    assert names[0] == names[1] == {"backward:MulBackward0#0": ["k0"], "backward:MulBackward0#1": ["k1"]}


# --------------------------------------------------------------------------- the host tree under clock rounding


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_nesting_does_not_depend_on_which_way_a_nanosecond_was_rounded(data: st.DataObject) -> None:
    tree = _flatten(data.draw(_nested()))
    jitter = st.floats(-1e-3, 1e-3, allow_nan=False)
    ranges = [
        HostRange("op", f"r{i}", a + data.draw(jitter), b + data.draw(jitter), (1, 1), index=i)
        for i, (a, b, _parent) in enumerate(tree)
    ]
    link_parents(ranges)
    assert [r.parent for r in ranges] == [parent for _a, _b, parent in tree]


@st.composite
def _nested(draw: st.DrawFn, lo: int = -1, hi: int = 400, depth: int = 0) -> list[tuple[int, int, list[Any]]]:
    """Sibling ranges inside (lo, hi] (they may abut each other and end with their parent), each with its children."""
    if depth >= 3 or hi - lo < 6:
        return []
    cuts = sorted(draw(st.lists(st.integers(lo + 1, hi), max_size=6)))
    out: list[tuple[int, int, list[Any]]] = []
    for a, b in zip(cuts[::2], cuts[1::2], strict=False):
        if b - a >= 2:
            out.append((a, b, draw(_nested(a, b, depth + 1))))
    return out


def _flatten(nodes: list[tuple[int, int, list[Any]]], parent: int = -1, out: list[tuple[int, int, int]] | None = None) -> list[tuple[int, int, int]]:
    """(start, end, parent index) of every range, parents before children."""
    out = [] if out is None else out
    for a, b, kids in nodes:
        out.append((a, b, parent))
        _flatten(kids, len(out) - 1, out)
    return out


def test_a_call_starting_a_nanosecond_before_the_previous_one_ends_is_its_sibling() -> None:
    ranges = [
        HostRange("op", "previous", 0.0, 10.0, (1, 1), index=0),
        HostRange("op", "next", 9.999, 20.0, (1, 1), index=1),  # rounding made it start early
        HostRange("op", "child", 12.0, 20.001, (1, 1), index=2),  # rounding made it end late
        HostRange("op", "abutting", 20.001, 30.0, (1, 1), index=3),
    ]
    link_parents(ranges)
    assert [r.parent for r in ranges] == [-1, -1, 1, -1]
