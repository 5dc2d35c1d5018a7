"""Dense/sparse and fp32/fp16/INT8 TensorRT engine export pairs built from the real MobileNet-QAT export (fixtures/trt).

The sparse build marks some convolutions' weights 2:4 (``HasSparseWeights``), gives most of them
a sparse tactic and scales their profiled times by ``speedup``; the rest stay eligible but keep
their dense tactic (not picked). Each engine folder holds trtexec's exports: layer info, profile,
per-inference times and a build log (``Sparsity: Disabled`` for the dense build, ``Enabled`` with the
``(Sparsity)`` eligible and picked lines for the sparse one).

:func:`build_precision_engine` rebuilds the same network as an fp16 or fp32 engine: its tensors in that
precision's formats, its convolutions on that precision's cuDNN tactics (``ampere_h16816cudnn_*`` HMMA
kernels for fp16), its weights in that type; the real export is the INT8 engine of such a pair.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.conftest import FIXTURES

TRT = FIXTURES / "trt"
GRAPH = TRT / "trex__tests_mobilenet.qat.onnx.engine.graph.json"
PROFILE = TRT / "trex__tests_mobilenet.qat.onnx.engine.profile.json"
SPARSE_TACTIC = (
    "sm80_xmma_fprop_sparse_conv_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_"
    "tilesize128x128x128_stage4_warpsize2x2x1_g1_sptensor16x8x64_t1r1s1"
)


@dataclass
class EnginePair:
    """Two engine folders and the layers the sparse build changed."""

    dense: Path
    sparse: Path
    picked: list[str]
    not_picked: list[str]


def _log(sparsity: str, eligible: list[str], picked: list[str], precision: str = "FP32+INT8") -> str:
    lines = [
        "[12/01/2026-10:00:00] [I] === Build Options ===",
        f"[12/01/2026-10:00:00] [I] Precision: {precision}",
        f"[12/01/2026-10:00:00] [I] Sparsity: {sparsity}",
        "[12/01/2026-10:00:00] [I] === Device Information ===",
        "[12/01/2026-10:00:01] [I] Selected Device: NVIDIA A100-SXM4-40GB",
        "[12/01/2026-10:00:01] [I] Compute Capability: 8.0",
        "[12/01/2026-10:00:01] [I] SMs: 108",
        "[12/01/2026-10:00:01] [I] Device Global Memory: 40536 MiB",
    ]
    if sparsity == "Enabled":
        lines.append(f"[12/01/2026-10:01:00] [V] [TRT] (Sparsity) Layers eligible for sparse math: {', '.join(eligible)}")
        lines.append(f"[12/01/2026-10:01:00] [V] [TRT] (Sparsity) TRT inference plan picked sparse implementation for layers: {', '.join(picked)}")
    return "\n".join(lines) + "\n"


def _times(total_ms: float, inferences: int, rng: np.random.Generator, host_gap_ms: float = 0.002) -> list[dict[str, float]]:
    """trtexec --exportTimes entries: back-to-back inferences, each enqueued ``host_gap_ms`` after the previous compute ended."""
    compute = total_ms * (1 + rng.normal(0, 0.01, inferences).clip(-0.03, 0.03))
    out, end = [], 0.0
    for c in compute:
        enqueue = end + host_gap_ms / 2
        start = end + host_gap_ms
        end = start + float(c)
        out.append({"startEnqMs": enqueue, "endEnqMs": enqueue + 0.001, "startComputeMs": start, "endComputeMs": end,
                    "computeMs": float(c), "latencyMs": float(c)})
    return out


def _write(folder: Path, graph: dict[str, Any], profile: list[dict[str, Any]], times: list[dict[str, float]], log: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "engine.graph.json").write_text(json.dumps(graph))
    (folder / "engine.profile.json").write_text(json.dumps(profile))
    (folder / "engine.times.json").write_text(json.dumps(times))
    (folder / "build.log").write_text(log)
    return folder


def build_engine_pair(root: Path, *, sparse_layers: int = 12, picked: int = 9, speedup: float = 0.6, inferences: int = 200,
                      seed: int = 0) -> EnginePair:
    """Write ``root/dense`` and ``root/sparse``: the first ``sparse_layers`` CaskConvolutions get 2:4 weights, the first
    ``picked`` of them a sparse tactic and ``speedup`` x their profiled times."""
    graph = json.loads(GRAPH.read_text())
    profile = json.loads(PROFILE.read_text())
    convs = [layer["Name"] for layer in graph["Layers"] if isinstance(layer, dict) and layer.get("LayerType") == "CaskConvolution"]
    chosen, ran = convs[:sparse_layers], convs[:picked]
    sparse_graph = copy.deepcopy(graph)
    for layer in sparse_graph["Layers"]:
        if layer["Name"] in chosen:
            layer["HasSparseWeights"] = 1
        if layer["Name"] in ran:
            layer["TacticName"] = SPARSE_TACTIC
    sparse_profile = copy.deepcopy(profile)
    for entry in sparse_profile:
        if entry.get("name") in ran:
            for key in ("timeMs", "averageMs", "medianMs"):
                entry[key] *= speedup
    total = sum(float(e["percentage"]) for e in sparse_profile if "percentage" in e)
    sparse_sum = sum(float(e["timeMs"]) for e in sparse_profile if "timeMs" in e)
    for entry in sparse_profile:
        if "timeMs" in entry:
            entry["percentage"] = 100.0 * entry["timeMs"] / sparse_sum
    assert total > 0
    rng = np.random.default_rng(seed)
    dense_total = sum(float(e["medianMs"]) for e in profile if "medianMs" in e)
    sparse_total = sum(float(e["medianMs"]) for e in sparse_profile if "medianMs" in e)
    dense = _write(root / "dense", graph, profile, _times(dense_total, inferences, rng), _log("Disabled", [], []))
    sparse = _write(root / "sparse", sparse_graph, sparse_profile, _times(sparse_total, inferences, rng), _log("Enabled", chosen, ran))
    return EnginePair(dense=dense, sparse=sparse, picked=ran, not_picked=[n for n in chosen if n not in ran])


@dataclass(frozen=True)
class _Precision:
    """How trtexec writes one build precision: the tensors' format, the weights' type, the convolutions' tactic."""

    build: str
    format: str
    weights: str
    tactic: str


# cuDNN tactic names as TensorRT reports them on Ampere: HMMA 16x8x16 for fp16, single-precision cuDNN for fp32.
PRECISIONS: dict[str, _Precision] = {
    "fp16": _Precision("FP32+FP16", "Channel major FP16 format where channel % 8 == 0", "Half",
                       "ampere_h16816cudnn_256x128_ldg8_relu_exp_small_nhwc_tn_v1"),
    "fp32": _Precision("FP32", "Row major linear FP32", "Float", "ampere_scudnn_128x64_relu_interior_nn_v1"),
}


def build_precision_engine(folder: Path, precision: str, *, slowdown: float = 1.5, inferences: int = 50, seed: int = 0) -> Path:
    """Write ``folder``: the MobileNet network built in ``precision`` (``fp16``, ``fp32``; ``int8`` is the real export),
    same layer names and shapes, every layer's profiled time ``slowdown`` x the INT8 one."""
    graph = json.loads(GRAPH.read_text())
    profile = json.loads(PROFILE.read_text())
    if precision != "int8":
        spec = PRECISIONS[precision]
        for layer in graph["Layers"]:
            for tensor in [*layer.get("Inputs", []), *layer.get("Outputs", [])]:
                if "Int8" in tensor.get("Format/Datatype", "") or "FP16" in tensor.get("Format/Datatype", ""):
                    tensor["Format/Datatype"] = spec.format
            if isinstance(layer.get("Weights"), dict):
                layer["Weights"]["Type"] = spec.weights
            if layer.get("TacticName"):
                layer["TacticName"] = spec.tactic
        for entry in profile:
            for key in ("timeMs", "averageMs", "medianMs"):
                if key in entry:
                    entry[key] *= slowdown
    total = sum(float(e["medianMs"]) for e in profile if "medianMs" in e)
    build = PRECISIONS[precision].build if precision in PRECISIONS else "FP32+INT8"
    return _write(folder, graph, profile, _times(total, inferences, np.random.default_rng(seed)), _log("Disabled", [], [], build))
