"""Golden input/output pairs for the trace importer, under ``fixtures/traces/``.

Inputs are derived from the real H200 traces (annotations stripped, the SDPA
backend and its inputs changed) or written by hand (``handmade_traces``); the
HTA test traces under ``fixtures/traces/hta/`` are copied from Holistic Trace
Analysis (MIT). Each input ``X`` has ``X.expected.json``: the importer's figures
and per-layer identity, as ``digest`` extracts them. ``tests/sources/importers/test_golden.py``
compares against them; after an intended change, regenerate and review the diff::

    PYTHONPATH=. python -m tests.sources.importers.golden --write
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparsedebug.render.words.dispatch import trigger_words
from sparsedebug.sources.importers.trace.importer import TraceImport, analyze_trace
from tests.conftest import FIXTURES
from tests.sources.importers import handmade_traces
from tests.sources.importers.trace_variants import (
    Doc,
    edit_op_inputs,
    load,
    rename_kernels,
    rename_ops,
    save,
    slow_kernels,
    strip_annotations,
)

TRACES = FIXTURES / "traces"
H200 = FIXTURES / "h200"
CUDNN = "aten::_scaled_dot_product_cudnn_attention"
CUDNN_FWD = "aten::_cudnn_attention_forward"
SDPA = "aten::scaled_dot_product_attention"
# query's last two dims transposed: last-dimension stride 2048 instead of 1
NONCONTIG_Q = [[8388608, 262144, 1, 2048], [4096, 128, 4096, 1], [4096, 128, 4096, 1]]


def _dense() -> Doc:
    return load(H200 / "trace_dense_T2048.json.gz")


def sdpa_efficient_noncontiguous(doc: Doc) -> Doc:
    """SDPA dispatched to the memory-efficient backend because the query is not contiguous."""
    doc = rename_ops(doc, {CUDNN: "aten::_scaled_dot_product_efficient_attention", CUDNN_FWD: "aten::_efficient_attention_forward"})
    for name in (SDPA, "aten::_scaled_dot_product_efficient_attention", "aten::_efficient_attention_forward"):
        doc = edit_op_inputs(doc, name, strides=NONCONTIG_Q + [[]] * 6)
    doc = slow_kernels(doc, lambda n: "sdpa" in n, 60.0)
    return rename_kernels(doc, lambda n: "sdpa" in n, "fmha_cutlassF_f16_aligned_64x64_rf_sm80")


def sdpa_math_fp32(doc: Doc) -> Doc:
    """SDPA on the math backend in fp32: the fused cuDNN kernel replaced by SIMT sgemm."""
    doc = rename_ops(doc, {CUDNN: "aten::_scaled_dot_product_attention_math", CUDNN_FWD: "aten::_softmax"})
    for name in (SDPA, "aten::_scaled_dot_product_attention_math"):
        doc = edit_op_inputs(doc, name, types=["float", "float", "float", "", "Scalar", "Scalar", "", "Scalar"])
    doc = slow_kernels(doc, lambda n: "sdpa" in n, 400.0)
    return rename_kernels(doc, lambda n: "sdpa" in n, "ampere_sgemm_128x64_nn")


GENERATED: dict[str, Callable[[], Doc]] = {
    "h200_dense_unannotated.json.gz": lambda: strip_annotations(_dense()),
    "h200_sparse_mlp_unannotated.json.gz": lambda: strip_annotations(load(H200 / "trace_sparse_mlp_T2048.json.gz")),
    "h200_dense_sdpa_efficient_noncontig.json.gz": lambda: sdpa_efficient_noncontiguous(_dense()),
    "h200_dense_sdpa_math_fp32.json.gz": lambda: sdpa_math_fp32(_dense()),
    "h200_dense_unannotated_sdpa_math_fp32.json.gz": lambda: strip_annotations(sdpa_math_fp32(_dense())),
    "training_step.json": handmade_traces.training_trace,
    "module_trace.json": handmade_traces.module_trace,
    "compiled_region.json": handmade_traces.compiled_trace,
}
COPIED = ["hta/sampled_rank-0.json.gz", "hta/mi250_minitoy_train.json.gz", "hta/triton_example.json.gz"]


def inputs() -> list[Path]:
    """Every golden input file."""
    return [TRACES / name for name in GENERATED] + [TRACES / name for name in COPIED]


def _r(value: float) -> float:
    return round(value, 6)


def digest(result: TraceImport) -> dict[str, Any]:
    """What a golden output pins: timeline figures, iterations, breakdowns, and each layer's identity and path."""
    s, rec = result.summary, result.record
    graph = {g.name: g for g in rec.graph.layers}
    layers = []
    for lo in rec.lower.layers:
        g = graph[lo.name]
        d = lo.dispatch
        layers.append({
            "name": lo.name, "op": g.op.value, "weight": g.weight_shape, "dtype": g.dtype, "path": lo.path.value,
            "class": lo.kernel_class.value if lo.kernel_class else None, "phase": lo.phase, "identity": lo.identity,
            "backend": d.backend if d else None, "triggers": [trigger_words(t) for t in d.triggers] if d else [],
        })
    return {
        "busy_ms": _r(s.busy_ms), "span_ms": _r(s.span_ms), "host_wait_ms": _r(s.host_wait_ms), "kernel_wait_ms": _r(s.kernel_wait_ms),
        "iteration_source": s.iteration_source, "iterations": [[it.gpu_ops, _r(it.latency_ms), it.partial] for it in s.iterations],
        "layer_sources": s.layer_sources, "cuda_graph": s.cuda_graph, "phases_ms": {k: _r(v) for k, v in sorted(s.phases_ms.items())},
        "streams": [[st.stream, st.gpu_ops, _r(st.busy_ms)] for st in s.streams],
        "temporal": {t.convention: [_r(t.compute_ms), _r(t.non_compute_ms), _r(t.idle_ms)] for t in s.temporal},
        "by_class_ms": {k: _r(v) for k, v in sorted(s.by_class_ms.items())},
        "layers": layers,
    }


def expected_path(path: Path) -> Path:
    """Where the golden output of ``path`` lives."""
    return path.with_name(path.name.split(".json")[0] + ".expected.json")


def write() -> None:
    """Regenerate the generated inputs and every expected output."""
    TRACES.mkdir(parents=True, exist_ok=True)
    for name, make in GENERATED.items():
        save(make(), TRACES / name)
    for path in inputs():
        expected_path(path).write_text(json.dumps(digest(analyze_trace(path)), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="regenerate inputs and expected outputs")
    if parser.parse_args().write:
        write()
