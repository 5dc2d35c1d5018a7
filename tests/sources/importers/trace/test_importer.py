"""Trace importer: H200 acceptance figures, an independent recomputation, exact hand-made numbers, bad files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.records.run import KernelClass, KernelPath, RunRecord
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.sources_trace import skipped_words
from sparsedebug.sources.importers.trace.importer import (
    GpuOp,
    analyze_trace,
    import_trace,
    timeline,
)
from sparsedebug.sources.importers.trace.read.stream import iter_trace
from tests.conftest import FIXTURES
from tests.sources.importers import trace_variants

H200 = FIXTURES / "h200"
ART = FIXTURES / "artifacts"
SPARSE = H200 / "trace_sparse_mlp_T2048.json.gz"
DENSE = H200 / "trace_dense_T2048.json.gz"
SPARSE_GRAPH = H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"


def independent_figures(path: Path) -> dict[str, float]:
    """Busy, span, idle and host wait of a trace, recomputed the plain way (microseconds).

    Deliberately different from the importer: whole-document json.load, a
    sort on start times, and a running "covered until" cursor instead of merged
    segments; launches looked up in a dict keyed by correlation id.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        doc = json.load(handle)
    events = doc["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
    launch_ts = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu.sort(key=lambda e: e["ts"])
    first = gpu[0]["ts"]
    last = max(e["ts"] + e["dur"] for e in gpu)
    covered = first
    busy = host = kernel_wait = 0.0
    for e in gpu:
        start, end = e["ts"], e["ts"] + e["dur"]
        if start > covered:
            gap = start - covered
            launched = launch_ts.get(e["args"].get("correlation"))
            if launched is not None and launched > covered:
                host += gap
            elif launched is not None:
                kernel_wait += gap
        if end > covered:
            busy += end - max(start, covered)
            covered = end
    span = last - first
    return {"busy": busy, "span": span, "idle": span - busy, "host": host, "kernel": kernel_wait}


@pytest.mark.parametrize("path", [SPARSE, DENSE, SPARSE_GRAPH], ids=lambda p: p.name)
def test_busy_span_idle_match_an_independent_computation(path: Path) -> None:
    summary = analyze_trace(path).summary
    ref = independent_figures(path)
    for ours, theirs in (
        (summary.busy_ms, ref["busy"]),
        (summary.span_ms, ref["span"]),
        (summary.idle_ms, ref["idle"]),
        (summary.host_wait_ms, ref["host"]),
        (summary.kernel_wait_ms, ref["kernel"]),
    ):
        assert ours * 1e3 == pytest.approx(theirs, rel=1e-3, abs=1e-6)


def test_eager_sparse_trace_is_host_bound_with_twelve_sparse_mlp_projections() -> None:
    result = analyze_trace(SPARSE)
    s = result.summary
    assert s.busy_ms == pytest.approx(15.5, abs=0.1)
    assert s.span_ms == pytest.approx(36.5, abs=0.1)
    assert s.host_wait_ms > 0.9 * s.idle_ms
    assert s.host_wait_ms + s.kernel_wait_ms + s.other_wait_ms == pytest.approx(s.idle_ms, rel=1e-9)
    assert s.iteration_source == "repeating call sequence"
    assert s.iteration_detail is not None and s.iteration_detail.values["unit"] == 44
    assert "every 44 calls" in say(s.iteration_detail)
    assert len(s.iterations) == 3

    record = result.record
    sparse = [layer.name for layer in record.lower.layers if layer.path is KernelPath.SPARSE]
    expected = [f"layers.{i}.mlp.{proj}" for i in range(4) for proj in ("gate_proj", "up_proj", "down_proj")]
    assert sorted(sparse) == sorted(expected)
    assert all(layer.kernel_class is KernelClass.SPARSE_GEMM for layer in record.lower.layers if layer.name in expected)
    for layer in record.lower.layers:
        if layer.name not in expected:
            assert layer.path is KernelPath.DENSE and layer.reason is not None and layer.reason.value == "observed_dense"
    intents = {layer.name: layer.intended for layer in record.graph.layers}
    assert {name for name, intent in intents.items() if intent == "2:4"} == set(expected)
    down = next(layer for layer in record.graph.layers if layer.name == "layers.0.mlp.down_proj")
    assert down.weight_shape == [4096, 11008] and down.input_shape == [2048, 11008] and down.dtype == "fp16"
    assert down.flops == 2.0 * 2048 * 4096 * 11008
    assert record.graph.tokens == 2048
    attn = [layer for layer in record.lower.layers if layer.kernel_class is KernelClass.ATTENTION]
    assert [layer.name for layer in attn] == [f"layers.{i}.self_attn.sdpa" for i in range(4)]


def test_record_schedule_and_outcome_are_per_iteration() -> None:
    record = import_trace(SPARSE)
    assert record.source.kind == "torch_trace"
    assert record.source.files[0].sha256
    sched = record.schedule
    assert len(sched.span_samples_ms) == len(sched.busy_samples_ms) == len(record.outcome.latency_samples_ms) == 3
    assert sum(sched.busy_samples_ms) == pytest.approx(15.5, abs=0.1)
    assert sched.host_wait_ms is not None and sched.kernel_wait_ms is not None
    idle_inside = sum(sched.span_samples_ms) - sum(sched.busy_samples_ms)
    assert sched.host_wait_ms + sched.kernel_wait_ms == pytest.approx(idle_inside, rel=1e-9)
    for span, latency in zip(sched.span_samples_ms, record.outcome.latency_samples_ms, strict=True):
        assert latency >= span
    # every layer's per-call samples add up to the GPU time of its kernels
    assert sum(sum(layer.samples_ms) for layer in record.kernel.layers) == pytest.approx(sum(record.kernel.by_class_ms.values()))
    RunRecord.model_validate_json(record.model_dump_json())


def test_dense_trace_is_gpu_bound() -> None:
    s = analyze_trace(DENSE).summary
    assert s.busy_ms > 0.9 * s.span_ms
    assert s.span_ms == pytest.approx(19.5, abs=0.1)


def test_cuda_graph_trace_has_no_annotations_so_one_layer_per_kernel_name() -> None:
    result = analyze_trace(SPARSE_GRAPH)
    assert not result.summary.annotated
    assert result.summary.cuda_graph and result.summary.layer_sources == {"kernel": result.summary.layers}
    assert all(layer.identity == "kernel" for layer in result.record.lower.layers)
    assert result.summary.iteration_source == "cudaGraphLaunch"
    assert len(result.summary.iterations) == 3
    assert result.summary.host_wait_ms == 0.0
    names = [layer.name for layer in result.record.lower.layers]
    assert len(names) == len(set(names))
    sparse = [layer for layer in result.record.lower.layers if layer.kernel_class is KernelClass.SPARSE_GEMM]
    assert len(sparse) == 2 and all("xmma_sparse_gemm" in layer.name for layer in sparse)
    # graph replays queue back to back: latency is measured from when the GPU freed up
    for latency, span in zip(result.record.outcome.latency_samples_ms, result.record.schedule.span_samples_ms, strict=True):
        assert latency == pytest.approx(span, rel=0.1)


def test_small_handmade_trace_exact_figures() -> None:
    result = analyze_trace(ART / "small_trace.json")
    s = result.summary
    # kernels (us): 20-70 gemm, 30-50 on a second stream (inside), 115-125, 215-265, 330-340, 342-347, 400-410
    assert s.busy_ms == pytest.approx(0.135)
    assert s.span_ms == pytest.approx(0.390)
    assert s.host_wait_ms == pytest.approx(0.200)  # 70->115, 125->215, 265->330: launched after the GPU went idle
    assert s.kernel_wait_ms == pytest.approx(0.002)  # 340->342: launched at 312, already queued
    assert s.other_wait_ms == pytest.approx(0.053)  # 347->400: kernel without a correlation id
    assert [it.gpu_ops for it in s.iterations] == [3, 4]
    assert [it.latency_ms for it in s.iterations] == pytest.approx([0.150, 0.210])
    record = result.record
    assert [layer.name for layer in record.graph.layers] == ["layers.0.fc", "layers.0.act", "mystery_kernel_xyz"]
    fc = record.graph.layers[0]
    assert (fc.op.value, fc.weight_shape, fc.input_shape, fc.output_shape, fc.dtype) == ("linear", [16, 8], [4, 8], [4, 16], "fp16")
    assert fc.flops == 2 * 4 * 16 * 8
    assert record.lower.layers[2].kernel_class is KernelClass.OTHER
    fc_kernel = record.kernel.layers[0]
    assert fc_kernel.samples_ms == pytest.approx([0.070, 0.050])  # gemm + the second-stream kernel, then gemm alone


def test_profiler_steps_define_iterations(tmp_path: Path) -> None:
    doc = json.loads((ART / "small_trace.json").read_text())
    doc["traceEvents"] += [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": -5, "dur": 160},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 1, "tid": 1, "ts": 195, "dur": 160},
    ]
    path = tmp_path / "steps.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    result = analyze_trace(path)
    assert result.summary.iteration_source == "ProfilerStep"
    assert [it.gpu_ops for it in result.summary.iterations] == [3, 4]
    assert "ProfilerStep#7" not in [layer.name for layer in result.record.graph.layers]


def test_gpu_annotations_used_when_launches_are_missing(tmp_path: Path) -> None:
    doc = json.loads((ART / "small_trace.json").read_text())
    events = [e for e in doc["traceEvents"] if e.get("cat") not in ("cuda_runtime", "user_annotation")]
    events.append({"ph": "X", "cat": "gpu_user_annotation", "name": "block.fc", "pid": 0, "tid": 7, "ts": 18, "dur": 60})
    path = tmp_path / "gpu_ann.json"
    path.write_text(json.dumps({"traceEvents": events}))
    record = import_trace(path)
    names = [layer.name for layer in record.lower.layers]
    assert "block.fc" in names
    assert analyze_trace(path).summary.other_wait_ms == pytest.approx(analyze_trace(path).summary.idle_ms)


@pytest.mark.parametrize("source", ["h200_dense", "generated_training"])
def test_legacy_capitalised_categories_import_with_their_kernels(tmp_path: Path, source: str) -> None:
    """A 2021-era Kineto trace (``Kernel``, ``Memcpy``, ``Memset``, ``Runtime``, ``Operator``) was refused as having
    no GPU activity; built here from a real trace and a generated training step (backward, optimizer, annotations),
    it gives the same GPU timeline, kernels, iterations and layers."""
    from tests.support.tracegen import TraceSpec, write_trace

    path = DENSE if source == "h200_dense" else tmp_path / "today.json"
    if source != "h200_dense":
        write_trace(path, TraceSpec(layers=6, iterations=3, attention="math", nccl=False))  # record_param_comms is 2022+
    legacy = trace_variants.save(trace_variants.legacy_categories(trace_variants.load(path)), tmp_path / "legacy.json")
    assert '"cat":"Kernel"' in legacy.read_text() and '"cat":"kernel"' not in legacy.read_text()
    today, then = analyze_trace(path), analyze_trace(legacy)
    assert then.summary.kernels == today.summary.kernels > 0
    assert then.summary.gpu_ops == today.summary.gpu_ops
    assert then.summary.busy_ms == pytest.approx(today.summary.busy_ms)
    assert then.summary.host_wait_ms == pytest.approx(today.summary.host_wait_ms)
    assert len(then.summary.iterations) == len(today.summary.iterations) > 1
    layers = [(layer.name, layer.op) for layer in then.record.graph.layers]
    assert layers == [(layer.name, layer.op) for layer in today.record.graph.layers] and layers


def test_missing_fields_are_skipped_and_counted_never_fatal() -> None:
    result = analyze_trace(ART / "missing_fields.json")
    skipped = result.summary.skipped_events
    assert skipped["event:not_object"] == 1
    assert skipped["kernel:no_ts_dur"] == 1 and skipped["kernel:no_ts"] == 1
    assert skipped["annotation:unnamed"] == 1
    assert [skipped_words(k) for k in ("kernel:no_ts", "annotation:unnamed", "gpu_op:other_device:1")] == [
        "kernel without numeric ts", "annotation without name", "GPU ops on devices other than 1 (analysed the busiest device only)"]
    assert "<unnamed kernel>" in [layer.name for layer in result.record.lower.layers]


def test_bare_event_array_is_accepted(tmp_path: Path) -> None:
    events = json.loads((ART / "small_trace.json").read_text())["traceEvents"]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(events))
    assert analyze_trace(path).summary.busy_ms == pytest.approx(0.135)


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("truncated_trace.json.gz", "truncated gzip"),
        ("cut_json_trace.json.gz", "truncated?"),
        ("cpu_only_trace.json", "no GPU activity"),
        ("not_a_trace.json", "no traceEvents array"),
        ("ncu_no_header.csv", "not a Chrome trace"),
        ("does_not_exist.json", "file not found"),
    ],
)
def test_bad_files_give_one_clear_user_error(name: str, needle: str) -> None:
    with pytest.raises(UserError) as info:
        analyze_trace(ART / name)
    message = str(info.value)
    assert needle in message and name in message
    assert "\n" not in message


def test_garbage_bytes_and_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(UserError, match="empty file"):
        analyze_trace(empty)
    bad_gz = tmp_path / "bad.json.gz"
    bad_gz.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    with pytest.raises(UserError, match="gzip"):
        analyze_trace(bad_gz)
    trailing = tmp_path / "trailing.json"
    trailing.write_text('{"traceEvents": []} x')
    with pytest.raises(UserError, match="after the end"):
        analyze_trace(trailing)


def test_streamed_events_equal_json_load(tmp_path: Path) -> None:
    with gzip.open(DENSE, "rt") as handle:
        doc = json.load(handle)
    meta: dict[str, Any] = {}
    streamed = list(iter_trace(DENSE, meta))
    assert streamed == doc["traceEvents"]
    assert meta == {k: v for k, v in doc.items() if k != "traceEvents"}
    # tiny chunks exercise values split across buffer refills
    import sparsedebug.sources.importers.trace.read.stream as js

    original = js._CHUNK
    js._CHUNK = 7
    try:
        assert list(iter_trace(ART / "small_trace.json", {})) == json.loads((ART / "small_trace.json").read_text())["traceEvents"]
    finally:
        js._CHUNK = original


_interval = st.tuples(
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=0, max_value=50),
    st.one_of(st.none(), st.integers(min_value=-50, max_value=1100)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_interval, min_size=1, max_size=30))
def test_timeline_partitions_the_span(items: list[tuple[int, int, int | None]]) -> None:
    ops = [
        GpuOp(name="k", ts=float(ts), dur=float(dur), device=0, stream=i % 3, correlation=None, is_kernel=True, launch_ts=None if lt is None else float(lt))
        for i, (ts, dur, lt) in enumerate(items)
    ]
    tl = timeline(ops)
    # busy by brute force over integer microseconds
    covered: set[int] = set()
    for ts, dur, _ in items:
        covered.update(range(ts, ts + dur))
    assert tl.busy_ms * 1e3 == pytest.approx(len(covered))
    first = min(ts for ts, _, _ in items)
    last = max(ts + dur for ts, dur, _ in items)
    assert tl.span_ms * 1e3 == pytest.approx(last - first)
    assert (tl.host_wait_ms + tl.kernel_wait_ms + tl.other_wait_ms) == pytest.approx(tl.idle_ms, abs=1e-9)
    assert min(tl.host_wait_ms, tl.kernel_wait_ms, tl.other_wait_ms) >= 0.0


def test_flow_events_link_kernels_when_runtime_events_are_missing(tmp_path: Path) -> None:
    doc = json.loads((ART / "small_trace.json").read_text())
    events = []
    for e in doc["traceEvents"]:
        if e.get("cat") == "cuda_runtime":
            events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": e["args"]["correlation"], "pid": 1, "tid": 1, "ts": e["ts"]})
        else:
            events.append(e)
    path = tmp_path / "flows.json"
    path.write_text(json.dumps({"traceEvents": events}))
    s = analyze_trace(path).summary
    assert (s.host_wait_ms, s.kernel_wait_ms, s.other_wait_ms) == pytest.approx((0.200, 0.002, 0.053))
    assert s.iteration_source == "repeating call sequence"


@st.composite
def _laminar(draw: st.DrawFn) -> list[tuple[int, int]]:
    """A properly nested (laminar) family of integer ranges."""
    kept: list[tuple[int, int]] = []
    for start, length in draw(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 40)), max_size=15)):
        cand = (start, start + length)
        if all(cand[1] <= a or b <= cand[0] or (a <= cand[0] and cand[1] <= b) or (cand[0] <= a and b <= cand[1]) for a, b in kept):
            kept.append(cand)
    return kept


@settings(max_examples=200, deadline=None)
@given(_laminar(), st.lists(st.integers(-5, 150), max_size=20))
def test_innermost_annotation_matches_brute_force(ranges: list[tuple[int, int]], points: list[int]) -> None:
    from sparsedebug.sources.importers.trace.read.events import HostRange
    from sparsedebug.sources.importers.trace.structure.host_tree import innermost, link_parents

    objs = [HostRange("annotation", f"r{i}", float(a), float(b), (1, 1), index=i) for i, (a, b) in enumerate(ranges)]
    by_thread = link_parents(objs)
    found = innermost(by_thread.get((1, 1), []), [(float(t), k) for k, t in enumerate(points)])
    for k, t in enumerate(points):
        containing = [r for r in objs if r.ts <= t <= r.end]
        if not containing:
            assert k not in found
            continue
        best = max(containing, key=lambda r: (r.ts, -r.end))
        assert found[k].ts == best.ts and found[k].end == best.end


def test_layer_idle_and_dense_share_small_trace() -> None:
    sched = import_trace(ART / "small_trace.json").schedule
    # first call of the trace has no gap before it; then 70->115 (act), 125->215 (fc), 265->330 (act)
    expected = {"layers.0.fc": [0.090], "layers.0.act": [0.045, 0.065]}
    assert sorted(sched.layer_idle_samples_ms) == sorted(expected)
    for name, samples in expected.items():
        assert sched.layer_idle_samples_ms[name] == pytest.approx(samples)
    assert sched.dense_share == 1.0


def test_dense_share_of_sparse_trace_counts_sparse_layers_out() -> None:
    record = import_trace(SPARSE)
    sparse_ms = sum(sum(k.samples_ms) for k in record.kernel.layers if k.name.split(".")[-1] in ("gate_proj", "up_proj", "down_proj"))
    total_ms = sum(sum(k.samples_ms) for k in record.kernel.layers)
    assert record.schedule.dense_share == pytest.approx(1.0 - sparse_ms / total_ms, abs=0.01)
    assert set(record.schedule.layer_idle_samples_ms) == {layer.name for layer in record.graph.layers}
