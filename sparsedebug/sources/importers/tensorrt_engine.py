"""Import a TensorRT engine from trtexec's exports as a five-stage ``RunRecord``: were the sparse kernels used?

trtexec writes, per engine:

- ``--exportLayerInfo GRAPH.json`` (with ``--profilingVerbosity=detailed``): ``{"Layers": [...], "Bindings": [...]}``,
  each layer with its ``Name``, ``LayerType``, inputs and outputs (dimensions, ``Format/Datatype``),
  ``Weights`` (type, count), ``HasSparseWeights`` and the ``TacticName`` the build picked;
- ``--exportProfile PROFILE.json``: ``[{"count": N}, {"name", "timeMs", "averageMs", "medianMs", "percentage"}, ...]``,
  each layer's time over N profiled inferences;
- ``--exportTimes TIMES.json``: one entry per timed inference (``computeMs``, ``latencyMs``, ...);
- its log: the build options (``Sparsity: Disabled``, ``Precision: FP32+FP16``), the device, and with
  ``--verbose`` the ``(Sparsity)`` eligible and picked lists (``sources.importers.tensorrt_log``).

TREx (TensorRT Engine Explorer) writes its parse of the log as ``*.profile.metadata.json`` /
``*.build.metadata.json``; those are read for the device and build options when no log is given.

The lower stage says per layer whether the build had sparsity enabled, whether its weights carry
a 2:4 pattern (``HasSparseWeights``), whether its tactic is a sparse one and why it did not run
sparse (``records.run.EngineLayer``). The kernel stage holds each layer's profiled median time (one
summary per layer: trtexec's profile has no per-inference layer samples); the schedule and
outcome stages hold the per-inference times of ``--exportTimes`` when given, else the profiled
inference (the layers' medians summed). With ``--exportTimes``' compute and enqueue times, the idle
time between inferences is split into host wait and kernel wait by the shared timeline
(``sources.importers.timeline``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparsedebug.core.dtypes import itemsize
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest, load_json_text, read_text
from sparsedebug.core.kernel_names import classify_kernel
from sparsedebug.records.artifacts import TrtSparsityReport
from sparsedebug.records.comparability import DeviceInfo
from sparsedebug.records.engine import TRT_SPARSITY_FLAGS, BuildSparsity, EngineBuild, EngineLayer, NotSparse
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.run import (
    FallbackReason,
    GraphLayer,
    GraphStage,
    KernelClass,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
)
from sparsedebug.sources.importers.tensorrt_log import build_sparsity, parse_trt_log, trtexec_options
from sparsedebug.sources.importers.tensorrt_precision import layer_precision
from sparsedebug.sources.importers.timeline import timeline

# ``RunSource.kind`` of an imported engine (``sources.registry`` registers it).
SOURCE_KIND = "trt_engine"

_OPS: dict[str, OpKind] = {
    "convolution": OpKind.LINEAR, "deconvolution": OpKind.LINEAR, "fullyconnected": OpKind.LINEAR, "matrixmultiply": OpKind.LINEAR,
    "gemm": OpKind.LINEAR, "myelin": OpKind.OTHER, "pooling": OpKind.OTHER, "reformat": OpKind.OTHER, "shuffle": OpKind.OTHER,
    "noop": OpKind.OTHER, "elementwise": OpKind.ELEMENTWISE, "pointwise": OpKind.ELEMENTWISE, "activation": OpKind.ACTIVATION,
    "normalization": OpKind.NORM, "softmax": OpKind.OTHER, "gather": OpKind.EMBEDDING,
}
# Kernel class of a layer without a tactic name, by its LayerType, where the type says it (a Reformat copies).
_LAYER_CLASSES: dict[str, KernelClass] = {"reformat": KernelClass.COPY, "shuffle": KernelClass.COPY}


@dataclass
class EngineFiles:
    """The trtexec exports of one engine: layer info, and the profile, times and build log when given."""

    graph: Path
    profile: Path | None = None
    times: Path | None = None
    log: Path | None = None
    profile_metadata: Path | None = None
    build_metadata: Path | None = None


def engine_files(path: Path, *, profile: Path | None = None, times: Path | None = None, log: Path | None = None) -> EngineFiles:
    """The exports of one engine: ``path`` is the layer-info JSON, or a folder holding trtexec's exports (told by content)."""
    if not path.is_dir():
        return EngineFiles(graph=path, profile=profile, times=times, log=log, **_metadata_beside(path))
    found: dict[str, list[Path]] = {"graph": [], "profile": [], "times": [], "log": []}
    for item in sorted(path.iterdir()):
        if not item.is_file():
            continue
        role = _role(item)
        if role is not None:
            found[role].append(item)
    for role, items in found.items():
        if len(items) > 1:
            raise UserError(f"{path}: {len(items)} {role} exports ({', '.join(p.name for p in items)}); keep one engine's exports per folder")
    if not found["graph"]:
        raise UserError(f"{path}: no layer-info JSON (trtexec --exportLayerInfo with --profilingVerbosity=detailed) in this folder")
    graph = found["graph"][0]
    return EngineFiles(
        graph=graph, profile=profile or next(iter(found["profile"]), None), times=times or next(iter(found["times"]), None),
        log=log or next(iter(found["log"]), None), **_metadata_beside(graph),
    )


def _metadata_beside(graph: Path) -> dict[str, Path | None]:
    """TREx's metadata files beside a ``NAME.graph.json``: ``NAME.profile.metadata.json``, ``NAME.build.metadata.json``."""
    stem = graph.name.removesuffix(".json").removesuffix(".graph")
    out: dict[str, Path | None] = {}
    for key, suffix in (("profile_metadata", ".profile.metadata.json"), ("build_metadata", ".build.metadata.json")):
        candidate = graph.with_name(stem + suffix)
        out[key] = candidate if candidate.is_file() else None
    return out


def _role(item: Path) -> str | None:
    """Which export a file in an engine folder is, from its content (TREx metadata files aside)."""
    name = item.name.lower()
    if name.endswith(".log") or name.endswith(".txt"):
        return "log"
    if not name.endswith(".json") or name.endswith(".metadata.json"):
        return None
    head = item.open("rb").read(4096).decode("utf-8", errors="replace")
    if '"Layers"' in head:
        return "graph"
    if '"averageMs"' in head or '"count"' in head:
        return "profile"
    if '"computeMs"' in head or '"latencyMs"' in head or '"startComputeMs"' in head:
        return "times"
    return None


def _json(path: Path) -> Any:
    return load_json_text(read_text(path), str(path))


def _number(value: Any, where: str, *, positive: bool = False) -> float:
    """A finite JSON number (``UserError`` naming ``where`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0 or (positive and value <= 0):
        raise UserError(f"{where}: expected a finite {'positive' if positive else 'non-negative'} number, got {value!r}")
    return float(value)


def is_sparse_tactic(tactic: str) -> bool:
    """Whether a TensorRT tactic is a sparse one: its kernel class is a sparse GEMM, or its name says sparse."""
    return classify_kernel(tactic) is KernelClass.SPARSE_GEMM or "sparse" in tactic.lower()


@dataclass
class _Profile:
    runs: int | None
    layers: dict[str, dict[str, float]]


def _profile(path: Path) -> _Profile:
    data = _json(path)
    if isinstance(data, list) and data and all(isinstance(item, list) for item in data):
        data = data[0]  # one profile per optimization profile: the first
    if not isinstance(data, list):
        raise UserError(f"{path}: expected trtexec --exportProfile's list of layer entries")
    runs: int | None = None
    layers: dict[str, dict[str, float]] = {}
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise UserError(f"{path}: entry {index}: expected an object")
        if "count" in entry and "name" not in entry:
            runs = int(_number(entry["count"], f"{path}: count", positive=True))
            continue
        name = entry.get("name")
        if not isinstance(name, str):
            raise UserError(f"{path}: entry {index}: no layer name")
        figures = {key: _number(entry[key], f"{path}: layer {name!r}: {key}") for key in ("timeMs", "averageMs", "medianMs", "percentage") if key in entry}
        if "averageMs" not in figures and "medianMs" not in figures:
            raise UserError(f"{path}: layer {name!r}: neither averageMs nor medianMs")
        layers[name] = figures
    if not layers:
        raise UserError(f"{path}: no layer entries")
    return _Profile(runs=runs, layers=layers)


def _times(path: Path) -> list[float]:
    """Per-inference latency (``latencyMs``, else ``computeMs``) of ``--exportTimes``."""
    data = _json(path)
    if not isinstance(data, list) or not data:
        raise UserError(f"{path}: expected trtexec --exportTimes's list of per-inference entries")
    out: list[float] = []
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise UserError(f"{path}: entry {index}: expected an object")
        key = "latencyMs" if "latencyMs" in entry else "computeMs"
        if key not in entry:
            raise UserError(f"{path}: entry {index}: neither latencyMs nor computeMs")
        out.append(_number(entry[key], f"{path}: entry {index}: {key}", positive=True))
    return out


@dataclass(frozen=True)
class _Inference:
    """One timed inference as an interval of the shared timeline (microseconds): compute start and end, enqueue start."""

    ts: float
    end: float
    launch_ts: float | None


def _inferences(path: Path) -> list[_Inference]:
    """The timed inferences of ``--exportTimes`` on its own clock (empty when its entries lack compute start and end)."""
    data = _json(path)
    keys = ("startComputeMs", "endComputeMs")
    if not isinstance(data, list) or not all(isinstance(e, dict) and all(k in e for k in keys) for e in data):
        return []
    out = []
    for i, e in enumerate(data):
        start, end = (_number(e[k], f"{path}: entry {i}: {k}") * 1e3 for k in keys)
        launch = _number(e["startEnqMs"], f"{path}: entry {i}: startEnqMs") * 1e3 if "startEnqMs" in e else None
        if end < start:
            raise UserError(f"{path}: entry {i}: endComputeMs is before startComputeMs")
        out.append(_Inference(ts=start, end=end, launch_ts=launch))
    return out


def _compute_times(path: Path) -> list[float] | None:
    """Per-inference GPU compute time (``computeMs``) of ``--exportTimes``, None when its entries lack it."""
    data = _json(path)
    if not isinstance(data, list) or not all(isinstance(e, dict) and "computeMs" in e for e in data):
        return None
    return [_number(e["computeMs"], f"{path}: entry {i}: computeMs", positive=True) for i, e in enumerate(data)]


def _numel(dims: Any) -> int | None:
    if not isinstance(dims, list) or not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        return None
    return math.prod(dims)


def _first(tensors: Any, key: str) -> Any:
    return tensors[0].get(key) if isinstance(tensors, list) and tensors and isinstance(tensors[0], dict) else None


def _layers(path: Path) -> list[dict[str, Any]]:
    data = _json(path)
    layers = data.get("Layers") if isinstance(data, dict) else None
    if not isinstance(layers, list) or not layers:
        raise UserError(f"{path}: Layers: expected trtexec --exportLayerInfo's list of layers")
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, layer in enumerate(layers):
        if isinstance(layer, str):  # profiling verbosity below detailed: names only
            out.append({"Name": layer})
        elif isinstance(layer, dict) and isinstance(layer.get("Name"), str):
            _check_dimensions(path, index, layer)
            out.append(layer)
        else:
            raise UserError(f"{path}: Layers[{index}]: expected an object with a Name (or a layer name)")
        if (name := out[-1]["Name"]) in seen:
            raise UserError(f"{path}: Layers[{index}]: layer {name[:80]!r} is listed twice (first at Layers[{seen[name]}]); "
                            "an engine's layer info lists each layer once: export it again")
        seen[name] = index
    return out


def _check_dimensions(path: Path, index: int, layer: dict[str, Any]) -> None:
    """Refuse a tensor's ``Dimensions`` that is not a list of whole numbers, each a size or -1 (a dynamic axis)."""
    for side in ("Inputs", "Outputs"):
        tensors = layer.get(side)
        for k, tensor in enumerate(tensors if isinstance(tensors, list) else []):
            dims = tensor.get("Dimensions") if isinstance(tensor, dict) else None
            if dims is not None and not (isinstance(dims, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in dims)):
                raise UserError(f"{path}: Layers[{index}] ({layer['Name'][:80]!r}): {side}[{k}].Dimensions: {dims!r} is not a "
                                "list of sizes (whole numbers, -1 for a dynamic axis)")


@dataclass
class _Build:
    sparsity: BuildSparsity
    report: TrtSparsityReport | None
    precision: str | None
    model: str | None
    device: DeviceInfo


def _device(options: dict[str, str]) -> DeviceInfo:
    """The GPU from trtexec's device lines (or TREx's device_information)."""
    name = options.get("Selected Device") or None
    capability = options.get("Compute Capability")
    sms = options.get("SMs")
    memory = re.match(r"\s*([\d.]+)\s*MiB", options.get("Device Global Memory", ""))
    return DeviceInfo(
        kind="gpu", family="cuda", vendor="NVIDIA", name=name,
        compute_capability=str(capability).strip() if capability else None,
        multiprocessors=int(float(sms)) if sms and re.fullmatch(r"\s*[\d.]+\s*", str(sms)) else None,
        memory_bytes=int(float(memory.group(1)) * 2**20) if memory else None,
    )


def _build(files: EngineFiles) -> _Build:
    options: dict[str, str] = {}
    report = None
    sparsity = BuildSparsity.NOT_SAID
    if files.log is not None:
        text = read_text(files.log)
        logged = trtexec_options(text)
        options = {key: value for key, (value, _line) in logged.items()}
        report = parse_trt_log(text, str(files.log))
        sparsity = build_sparsity(logged)[0]
    for meta, sections in ((files.build_metadata, ("build_options", "model_options")), (files.profile_metadata, ("device_information",))):
        if meta is None:
            continue
        data = _json(meta)
        for section in sections:
            values = data.get(section) if isinstance(data, dict) else None
            if isinstance(values, dict):
                for key, value in values.items():
                    options.setdefault(str(key), str(value))
    if sparsity is BuildSparsity.NOT_SAID and "Sparsity" in options:
        sparsity = build_sparsity({"Sparsity": (options["Sparsity"], 0)})[0]
    return _Build(sparsity=sparsity, report=report, precision=options.get("Precision"), model=options.get("Model"), device=_device(options))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int | None:
    """A non-negative JSON integer (None otherwise)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _fallback(not_sparse: NotSparse | None, sparse_weights: bool | None) -> FallbackReason:
    """The lower stage's fallback reason of a layer that ran dense."""
    if not_sparse is NotSparse.NOT_PICKED:
        return FallbackReason.SLOWER_THAN_DENSE  # TensorRT timed the sparse tactic and a dense one won
    return FallbackReason.OBSERVED_DENSE if sparse_weights else FallbackReason.INTENDED_DENSE


def _op(layer: dict[str, Any]) -> OpKind:
    for key in ("ParameterType", "LayerType"):
        value = layer.get(key)
        if isinstance(value, str):
            low = value.lower()
            for marker, op in _OPS.items():
                if marker in low:
                    return op
    return OpKind.OTHER


def _not_sparse(build: _Build, sparse_weights: bool | None, sparse_tactic: bool | None, eligible: bool | None, picked: bool | None) -> NotSparse | None:
    """Why a layer with weights did not run sparse, where the engine or the log says (None when it ran sparse or nothing says)."""
    if sparse_tactic or picked:
        return None
    if build.sparsity is BuildSparsity.DISABLED or (build.report is not None and build.report.enable_flags):
        return NotSparse.BUILD_DISABLED
    if eligible is False or sparse_weights is False:
        return NotSparse.NOT_ELIGIBLE
    if eligible or sparse_weights:
        return NotSparse.NOT_PICKED
    return None


def _record_layer(layer: dict[str, Any], build: _Build, timing: dict[str, float] | None, graph_file: Path) -> tuple[GraphLayer, LowerLayer, KernelLayer | None]:
    name: str = layer["Name"]
    inputs, outputs = layer.get("Inputs"), layer.get("Outputs")
    formats = [str(t.get("Format/Datatype")) for t in (inputs if isinstance(inputs, list) else []) + (outputs if isinstance(outputs, list) else [])
               if isinstance(t, dict) and t.get("Format/Datatype")]
    weights = _object(layer.get("Weights"))
    count = _count(weights.get("Count"))
    bias_count = _count(_object(layer.get("Bias")).get("Count")) or 0
    tactic = layer.get("TacticName") if isinstance(layer.get("TacticName"), str) and layer.get("TacticName") else None
    precision = layer_precision(layer, tactic)
    has_sparse = layer.get("HasSparseWeights")
    sparse_weights = bool(has_sparse) if isinstance(has_sparse, int | bool) else None
    sparse_tactic = is_sparse_tactic(tactic) if tactic is not None else None
    report = build.report
    eligible = name in report.eligible if report is not None and report.eligible_lines else None
    picked = name in report.picked if report is not None and report.picked_lines else None
    with_weights = count is not None and count > 0
    not_sparse = _not_sparse(build, sparse_weights, sparse_tactic, eligible, picked) if with_weights else None
    op = _op(layer)
    out_dims = _first(outputs, "Dimensions")
    out_numel = _numel(out_dims)
    out_maps = _count(layer.get("OutMaps")) or None
    flops = 2.0 * count * out_numel / out_maps if op is OpKind.LINEAR and count and out_numel and out_maps else 0.0
    size = itemsize(precision)
    in_numel = _numel(_first(inputs, "Dimensions"))
    moved = [n for n in (in_numel, out_numel, count) if n is not None]
    graph = GraphLayer(
        name=name, op=op, dtype=precision or "unknown",
        weight_shape=[out_maps, count // out_maps] if count and out_maps and count % out_maps == 0 else None,
        input_shape=_first(inputs, "Dimensions") if in_numel else None, output_shape=out_dims if out_numel else None,
        intended="2:4" if sparse_weights else "dense", params=(count or 0) + bias_count,
        flops=flops, bytes=float(sum(moved) * size) if size is not None and moved else 0.0,
    )
    ran_sparse = bool(sparse_tactic or picked)
    layer_type = str(layer.get("LayerType") or "")
    kernel_class = classify_kernel(tactic, precision) if tactic else _LAYER_CLASSES.get(layer_type.lower(), classify_kernel(layer_type, precision))
    if kernel_class is KernelClass.OTHER and op is OpKind.LINEAR:
        kernel_class = classify_kernel("gemm", precision)  # a convolution's tactic is an implicit GEMM: its class by precision
    if ran_sparse:
        kernel_class = KernelClass.SPARSE_GEMM
    reason = None if ran_sparse else _fallback(not_sparse, sparse_weights)
    engine = EngineLayer(
        layer_type=str(layer.get("LayerType") or "unknown"), tactic=tactic, precision=precision, formats=formats, weights=count,
        weights_type=str(weights.get("Type")) if weights.get("Type") else None, sparse_weights=sparse_weights, build_sparsity=build.sparsity,
        sparse_tactic=sparse_tactic, eligible=eligible, picked=picked, not_sparse=not_sparse,
        median_ms=timing.get("medianMs") if timing else None, average_ms=timing.get("averageMs") if timing else None,
        total_ms=timing.get("timeMs") if timing else None, share=timing["percentage"] / 100 if timing and "percentage" in timing else None,
    )
    lower = LowerLayer(
        name=name, path=KernelPath.SPARSE if ran_sparse else KernelPath.DENSE, reason=reason, kernel_class=kernel_class,
        kernels=[tactic] if tactic else [], identity="engine_layer", engine=engine,
    )
    kernel = None
    if timing is not None:
        ms = timing.get("medianMs") or timing.get("averageMs")
        if ms:
            kernel = KernelLayer(name=name, samples_ms=[ms], precision=precision,
                                 by_class_ms={kernel_class.value: ms} if kernel_class is not None else {})
    return graph, lower, kernel


def import_engine(path: Path, *, profile: Path | None = None, times: Path | None = None, log: Path | None = None) -> RunRecord:
    """Read one engine's trtexec exports (``path``: the layer-info JSON or a folder of exports) into a run record.

    Needs a time: the profile (``--exportProfile``) or the per-inference times
    (``--exportTimes``); without either, a one-line ``UserError``.
    """
    files = engine_files(path, profile=profile, times=times, log=log)
    layers = _layers(files.graph)
    prof = _profile(files.profile) if files.profile is not None else None
    latency = _times(files.times) if files.times is not None else None
    if prof is None and latency is None:
        raise UserError(f"{path}: no time for this engine: give its profile (--profile, trtexec --exportProfile) "
                        "or its per-inference times (--times, trtexec --exportTimes)")
    build = _build(files)
    names = {layer["Name"] for layer in layers}
    if prof is not None and not names & set(prof.layers):
        raise UserError(f"{files.profile}: no layer of the profile is in {files.graph.name}: the two exports are of different engines")
    entries = [_record_layer(layer, build, prof.layers.get(layer["Name"]) if prof is not None else None, files.graph) for layer in layers]
    kernel_layers = [k for _, _, k in entries if k is not None]
    by_class: dict[str, float] = {}
    for k in kernel_layers:
        for cls, ms in k.by_class_ms.items():
            by_class[cls] = by_class.get(cls, 0.0) + ms
    profiled = sum(k.samples_ms[0] for k in kernel_layers) if kernel_layers else None
    compute = _compute_times(files.times) if files.times is not None else None
    span = compute or latency or ([profiled] if profiled else [])
    busy = [profiled] if profiled else []
    waits = timeline(_inferences(files.times)) if files.times is not None else None
    sparse_busy = sum(k.samples_ms[0] for (_, lower, k) in entries if k is not None and lower.path is KernelPath.SPARSE)
    device = build.device
    enable = list(TRT_SPARSITY_FLAGS) if build.sparsity is BuildSparsity.DISABLED or (build.report is not None and build.report.enable_flags) else []
    digests: list[FileDigest] = [file_digest(p) for p in (files.graph, files.profile, files.times, files.log) if p is not None]
    record = RunRecord(
        name=path.name if path.is_dir() else _stem(files.graph),
        source=RunSource(
            kind=SOURCE_KIND, files=digests,
            engine=EngineBuild(
                layers=len(layers), profiled_runs=prof.runs if prof is not None else None, build_sparsity=build.sparsity,
                sparsity_lines=build.report.sparsity_lines if build.report is not None else False, precision=build.precision,
                model=build.model, enable_flags=enable, times=len(latency) if latency is not None else None,
            ),
        ),
        device=device,
        graph=GraphStage(layers=[g for g, _, _ in entries]),
        lower=LowerStage(backend=f"tensorrt:{device.name}" if device.name else "tensorrt", layers=[lo for _, lo, _ in entries]),
        kernel=KernelStage(layers=kernel_layers, by_class_ms=by_class),
        schedule=ScheduleStage(
            span_samples_ms=span, busy_samples_ms=busy, launches_per_iteration=len(kernel_layers) or None,
            dense_share=(1 - sparse_busy / profiled) if profiled else None,
            host_wait_ms=waits.host_wait_ms if waits is not None and waits.span_ms > 0 else None,
            kernel_wait_ms=waits.kernel_wait_ms if waits is not None and waits.span_ms > 0 else None,
        ),
        outcome=OutcomeStage(latency_samples_ms=latency or ([profiled] if profiled else [])),
    )
    return record


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".json", ".graph", ".layers", ".engine", ".plan"):
        name = name.removesuffix(suffix)
    return name or path.name
