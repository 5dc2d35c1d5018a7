"""The synthetic trace generator writes what the PyTorch profiler writes, and its ground truth holds."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from sparsedebug.sources.importers.trace.importer import analyze_trace
from tests.support.tracegen import (
    AUTOGRAD_TID,
    COMM_STREAM,
    VARIATIONS,
    TraceSpec,
    generate,
    read_doc,
    spec_for_events,
    strip,
    union_ms,
    write_doc,
    write_trace,
)

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def test_every_gpu_op_has_its_launch_and_flow_pair() -> None:
    doc, truth = generate(TraceSpec(layers=4, iterations=2, streams=3))
    events = doc["traceEvents"]
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime" and e["args"].get("correlation")}
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    finishes = {e["id"]: e for e in events if e.get("ph") == "f"}
    gpu = [e for e in events if e.get("cat") in GPU_CATS]
    assert len(gpu) == len(truth.gpu) and truth.events == len(events)
    for op in gpu:
        corr = op["args"]["correlation"]
        assert {"device", "stream", "correlation", "External id"} <= set(op["args"])
        assert op["pid"] == 0 and op["tid"] == op["args"]["stream"]
        launch = runtime[corr]
        assert launch["ts"] <= op["ts"]  # launched before it ran
        assert starts[corr]["ts"] == launch["ts"] and starts[corr]["tid"] == launch["tid"]
        assert finishes[corr]["ts"] == op["ts"] and finishes[corr]["bp"] == "e" and finishes[corr]["cat"] == "ac2g"


def test_a_training_iteration_has_every_phase() -> None:
    spec = TraceSpec(layers=5, calls=2, iterations=3, bucket=2)
    events = generate(spec)[0]["traceEvents"]
    names = Counter(e["name"] for e in events if e.get("ph") == "X")
    assert [n for n in names if n.startswith("ProfilerStep#")] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#") and e["cat"] == "user_annotation"]
    assert len(steps) == 3
    assert names["autograd::engine::evaluate_function: AddmmBackward0"] == 3 * 5 * 2
    assert names["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"] == 3 * 5
    assert names["Optimizer.step#AdamW.step"] == 3 and names["nccl:all_reduce"] == 3 * 3  # buckets of 2 over 5 layers
    backward_launches = [e for e in events if e.get("cat") == "cuda_runtime" and e["tid"] == AUTOGRAD_TID]
    assert len(backward_launches) == 3 * (5 * 2 * 3 + 3)  # gelu + 2 mm per call, plus the all-reduces
    nccl = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel_")]
    assert len(nccl) == 9 and {e["tid"] for e in nccl} == {COMM_STREAM}
    copies = Counter(e["name"].split(" (")[0] for e in events if e.get("cat") == "gpu_memcpy")
    assert copies == {"Memcpy HtoD": 3, "Memcpy DtoH": 3}
    assert sum(1 for e in events if e.get("cat") == "gpu_memset") == 3
    gemms = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("nvjet")]
    assert len(gemms) == 3 * 5 * 2 * 3  # forward + two backward GEMMs per call


def test_switches_remove_what_they_say() -> None:
    spec = TraceSpec(layers=3, iterations=2, backward=False, optimizer=False, nccl=False, memcpy=False, annotations=False, record_shapes=False)
    events = generate(spec)[0]["traceEvents"]
    cats = Counter(e.get("cat") for e in events)
    assert cats["gpu_memcpy"] == 2  # only the loss read-back
    assert cats["gpu_user_annotation"] == 2  # only the ProfilerStep ranges
    assert not any(e.get("tid") == AUTOGRAD_TID for e in events if e.get("ph") == "X")
    assert not any("Input Dims" in e.get("args", {}) for e in events)
    shaped = generate(replace(spec, record_shapes=True))[0]["traceEvents"]
    linear = next(e for e in shaped if e.get("name") == "aten::linear")
    assert linear["args"]["Input Dims"] == [[4096, 2048], [2048, 2048], [2048]]
    assert linear["args"]["Input Strides"][0] == [2048, 1]


def test_sparse_layers_get_sparse_kernels_and_host_cost() -> None:
    base, _ = generate(TraceSpec(layers=3, iterations=2, backward=False))
    cand, _ = generate(TraceSpec(layers=3, iterations=2, backward=False, sparse_layers=frozenset({1}), sparse_host_us=300.0))
    sparse = [e for e in cand["traceEvents"] if e.get("cat") == "kernel" and "xmma_sparse_gemm" in e["name"]]
    assert len(sparse) == 2
    host = {d: [e["dur"] for e in doc["traceEvents"] if e.get("name") in ("aten::addmm", "aten::_cslt_sparse_mm")] for d, doc in (("b", base), ("c", cand))}
    assert max(host["c"]) > 300.0 > max(host["b"])


@pytest.mark.parametrize("streams", [1, 3])
def test_importer_busy_and_span_match_the_ground_truth(tmp_path: Path, streams: int) -> None:
    spec = TraceSpec(layers=6, calls=2, iterations=3, streams=streams, copies_per_call=1)
    path = tmp_path / "t.json.gz"
    truth = write_trace(path, spec)
    summary = analyze_trace(path).summary
    assert summary.busy_ms == pytest.approx(truth.busy_ms, rel=1e-9)
    assert summary.span_ms == pytest.approx(truth.span_ms, rel=1e-9)
    assert summary.gpu_ops == len(truth.gpu)
    assert summary.iteration_source == "ProfilerStep" and len(summary.iterations) == 3
    if streams > 1:  # overlapping streams: the union is shorter than the summed op time
        assert truth.busy_ms < sum(d for _, d, _ in truth.gpu) / 1e3


def test_union_is_plain_interval_arithmetic() -> None:
    assert union_ms([(0.0, 1000.0), (500.0, 1500.0), (3000.0, 4000.0), (3100.0, 3200.0)]) == pytest.approx(2.5)
    assert union_ms([]) == 0.0


def test_spec_for_events_hits_the_target_roughly() -> None:
    for target in (5_000, 40_000):
        spec = spec_for_events(target, layers=6, calls=2)
        events = generate(spec)[1].events
        assert 0.8 * target <= events <= 1.2 * target


def test_variations_keep_every_gpu_op(tmp_path: Path) -> None:
    path = tmp_path / "base.json"
    truth = write_trace(path, TraceSpec(layers=4, iterations=2))
    doc = read_doc(path)
    for variation in VARIATIONS:
        out = tmp_path / f"{variation}.json.gz"
        write_doc(out, strip(doc, variation, seed=3))
        summary = analyze_trace(out).summary
        assert summary.busy_ms == pytest.approx(truth.busy_ms, rel=1e-9), variation
        assert summary.annotated is (variation not in ("no_annotations",)), variation
    assert isinstance(strip(doc, "bare_array"), list)
    with pytest.raises(ValueError, match="unknown variation"):
        strip(doc, "nope")


def test_bad_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        generate(TraceSpec(layers=0))


def test_host_ranges_nest_exactly_as_the_profiler_writes_them() -> None:
    # Kineto writes ts/dur from nanosecond clocks: a range never overlaps the previous call on its thread,
    # and a child never outlives its parent (the importer must not be handed rounding artefacts as structure).
    events = generate(TraceSpec(layers=4, calls=2, iterations=3, jitter=0.3, seed=5))[0]["traceEvents"]
    by_thread: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("pid") != 0:
            start = round(e["ts"] * 1000)
            by_thread.setdefault(e["tid"], []).append((start, start + round(e["dur"] * 1000)))
    for ranges in by_thread.values():
        open_ends: list[int] = []
        gaps = []
        for start, end in sorted(ranges, key=lambda r: (r[0], -r[1])):
            while open_ends and open_ends[-1] <= start:
                gaps.append(start - open_ends.pop())
            assert not open_ends or end <= open_ends[-1]  # inside its parent, or after it
            open_ends.append(end)
        assert min(gaps) > 0  # consecutive calls are apart


def test_sequence_numbers_link_backward_nodes_to_the_forward_ops_that_created_them() -> None:
    spec = TraceSpec(layers=3, calls=2, iterations=2)
    events = [e for e in generate(spec)[0]["traceEvents"] if e.get("cat") == "cpu_op"]
    forward = [e for e in events if e["tid"] != AUTOGRAD_TID]
    backward = [e for e in events if e["tid"] == AUTOGRAD_TID]
    creators = {e["args"]["Sequence number"]: e["name"] for e in forward if e["name"] in ("aten::t", "aten::addmm", "aten::gelu")}
    assert len(creators) == 2 * 3 * 2 * 3  # every node has its own number
    node_of = {"aten::t": "TBackward0", "aten::addmm": "AddmmBackward0", "aten::gelu": "GeluBackward0"}
    evaluated = [e for e in backward if e["name"].startswith("autograd::engine::evaluate_function: ")]
    for e in evaluated:
        node = e["name"].split(": ", 1)[1]
        if node.endswith("AccumulateGrad"):
            assert "Sequence number" not in e["args"]
            continue
        assert node_of[creators[e["args"]["Sequence number"]]] == node and e["args"]["Fwd thread id"] == 1
    assert sum(1 for e in evaluated if "Sequence number" in e["args"]) == len(creators)
    # ops below autograd, inside backward, and in the optimizer step (no_grad) record none
    unnumbered = {e["name"] for e in events if "Sequence number" not in e["args"]}
    assert {"aten::copy_", "aten::_local_scalar_dense", "aten::_fused_adamw_", "aten::mm", "aten::gelu_backward"} <= unnumbered
    assert all("Sequence number" in e["args"] for e in forward if e["name"] in ("aten::linear", "aten::to", "aten::mse_loss", "aten::item"))
