"""Step 4 for a trace pair: cut the layer the verdict blames into a focused reproducer (standing for every layer its fix covers).

``reduce_workloads`` needs two workloads; a trace-only user has two profiler traces. From the bisect of
the pair, :func:`trace_repro` takes the regression the first divergent stage blames (the largest change
per iteration), finds that layer in both traces and records the op as the traces called it: shapes,
dtypes and strides of its inputs, the backend it dispatched to, eager or CUDA graph. From that record
:func:`repro_workloads` builds the workload for the built-in replay (the one op, with the trace's
shapes, dtype and pattern) and its dense twin, and ``render.repro`` writes the standalone PyTorch
script. The record says whether the built-in replay can show the trace's stage and mechanism, and why
not when it cannot.
"""

from __future__ import annotations

from typing import Literal

from sparsedebug.core.dtypes import canonical_dtype
from sparsedebug.kernels.masks import parse_pattern
from sparsedebug.records.classification import Classification
from sparsedebug.records.findings import BisectResult, LayerFinding
from sparsedebug.records.reduce import ReplayReason, TraceOperand, TraceOpSide, TraceRepro
from sparsedebug.records.run import KernelPath, LowerLayer, RunRecord
from sparsedebug.sources.workload.lowering import PROFILES, LayerQuery
from sparsedebug.sources.workload.schema import Layer, Tokens, Workload, WorkloadOrigin

_ROLES = {"linear": ("x", "weight", "bias"), "attention": ("q", "k", "v", "attn_mask")}
# Inputs a call needs (x and weight; q, k and v); bias and attn_mask are rebuilt when the trace shows them passed.
_REQUIRED = {"linear": 2, "attention": 3}
_PROFILE_OF_BACKEND = {"cusparselt": "cusparselt", "cutlass_sparse": "cutlass"}
_REPLAY_DTYPES = ("fp32", "fp16", "bf16")


def _blamed(bisect: BisectResult) -> LayerFinding | None:
    if bisect.first_stage is None:
        return None
    regressions = [f for f in bisect.stage(bisect.first_stage).layers if f.regression]
    if not regressions:
        return None
    return max(regressions, key=lambda f: abs(f.delta_ms or 0.0))


def _lower_layer(run: RunRecord, name: str) -> LowerLayer | None:
    return next((layer for layer in run.lower.layers if layer.name == name), None)


def _side(run: RunRecord, name: str) -> TraceOpSide | None:
    """The layer's call as the trace recorded it: required inputs with shape, stride and dtype, bias or mask when passed."""
    layer = _lower_layer(run, name)
    if layer is None or layer.dispatch is None:
        return None
    d = layer.dispatch
    kind = "attention" if "attention" in d.op else "linear"
    roles, required = _ROLES[kind], _REQUIRED[kind]
    operands = []
    for i, role in enumerate(roles):
        shape = d.input_shapes[i] if i < len(d.input_shapes) else None
        stride = d.input_strides[i] if i < len(d.input_strides) else None
        dtype = d.input_dtypes[i] if i < len(d.input_dtypes) else None
        if not shape or stride is None or dtype is None or (role == "attn_mask" and not d.attn_mask):
            if i < required:
                return None
            continue
        operands.append(TraceOperand(role=role, shape=shape, stride=stride, dtype=canonical_dtype(dtype) or dtype))
    return TraceOpSide(
        run=run.name, op=d.op, backend=d.backend, backend_op=d.backend_op, operands=operands, path=layer.path.value,
        is_causal=d.is_causal, dropout_p=d.dropout_p,
    )


def _device(run: RunRecord) -> str | None:
    backend = run.lower.backend
    return backend.removeprefix("cuda:") if backend.startswith("cuda:") else None


def _profile(side: TraceOpSide, device: str | None, run_backends: list[str]) -> str:
    """The replay profile of the traced stack: the layer's own sparse backend, else the one the run's other sparse layers used."""
    known = [b for b in [side.backend or "", *run_backends] if b in _PROFILE_OF_BACKEND]
    torch_backend = _PROFILE_OF_BACKEND[known[0]] if known else None
    if torch_backend is not None and device is not None and "H200" in device:
        name = f"h200-{torch_backend}"
        if name in PROFILES:
            return name
    return "cpu-numpy"


def _replay_reason(stage: str, profile: str, dtype_ok: bool, kind: str, fallback: str | None) -> tuple[bool, ReplayReason]:
    """Whether the built-in replay can show the trace's first stage and mechanism, and why (a code render words)."""
    if not dtype_ok:
        return False, "dtype_without_kernel"
    if stage in ("graph", "lower"):
        if kind == "attention":
            return False, "attention_dispatch"
        if fallback is not None:
            return True, "profile_falls_back"
        return False, "profile_runs_sparse"
    if stage == "schedule":
        return False, "host_wait"
    return False, "cpu_timing"


def trace_repro(baseline: RunRecord, candidate: RunRecord, bisect: BisectResult, classification: Classification | None) -> TraceRepro | None:
    """The reproducer of the layer the bisect blames, or None when no regression names a layer the traces dispatch."""
    finding = _blamed(bisect)
    if finding is None or bisect.first_stage is None:
        return None
    names = finding.members or [finding.layer]
    for name in names:
        cand = _side(candidate, name)
        if cand is not None:
            break
    else:
        return None
    graph = next((g for g in candidate.graph.layers if g.name == name), None)
    kind: Literal["linear", "attention"] = "attention" if "attention" in cand.op else "linear"
    first = cand.operands[0].shape
    tokens = first[0] * first[2] if kind == "attention" and len(first) == 4 else _prod(first[:-1])
    device = _device(candidate)
    profile = _profile(cand, device, candidate.source.runtime.sparse_backends if candidate.source.runtime is not None else [])
    dtype_ok = cand.operands[0].dtype in _REPLAY_DTYPES
    mechanism = classification.winner.value if classification is not None and classification.winner is not None else None
    pattern = graph.intended if graph is not None and kind == "linear" else "dense"
    fallback = _profile_fallback(profile, cand, pattern) if kind == "linear" else None
    shows, reason = _replay_reason(bisect.first_stage, profile, dtype_ok, kind, fallback)
    fix = classification.fix if classification is not None else None
    group = next((t for t in (fix.targets if fix is not None else []) if name in t.layers), None)
    return TraceRepro(
        layer=name, group=finding.layer, first_stage=bisect.first_stage, finding=finding.kind, mechanism=mechanism,
        delta_ms=finding.delta_ms, op_kind=kind, pattern=pattern,
        tokens=tokens, candidate=cand, baseline=_side(baseline, name), device=device,
        launch="cuda_graph" if candidate.source.runtime is not None and candidate.source.runtime.cuda_graph else "eager", backend_profile=profile,
        profile_target=PROFILES[profile].target if profile in PROFILES else None, replay_shows=shows, replay_reason=reason, replay_fallback=fallback,
        targets=list(group.layers) if group is not None and len(group.layers) > 1 else [],
        targets_ms=group.removes_ms if group is not None and len(group.layers) > 1 else None,
    )


def _profile_fallback(profile: str, side: TraceOpSide, pattern: str) -> str | None:
    """The replay profile's dense-fallback reason for the traced linear (None: it runs sparse or is meant dense)."""
    if pattern == "dense":
        return None
    weight = side.operands[1]
    decision = PROFILES[profile].decide(LayerQuery(side.run, "linear", weight.shape[0], weight.shape[-1], weight.dtype, parse_pattern(pattern)))
    return decision.reason.value if decision.path is KernelPath.DENSE and decision.reason is not None else None


def _prod(dims: list[int]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def repro_workloads(repro: TraceRepro, trace_name: str, *, twin_file: str, note: str) -> tuple[Workload, Workload] | None:
    """The reproducer workload (the blamed op as traced) and its dense twin; None when the replay has no kernel for its dtype.

    ``note`` is what the replay of it can and cannot show, in words (``render.words.core.replay_reason_words``): the
    workload file carries it for the reader.
    """
    ops = repro.candidate.operands
    dtype = ops[0].dtype
    if dtype not in _REPLAY_DTYPES:
        return None
    origin = WorkloadOrigin(
        trace=trace_name, layer=repro.layer, first_stage=repro.first_stage, mechanism=repro.mechanism,
        replay_shows=repro.replay_shows, note=note, dense_twin=twin_file,
    )
    if repro.op_kind == "linear":
        x, w = ops[:2]
        tokens = Tokens(batch=x.shape[0], sequence=x.shape[1]) if len(x.shape) == 3 else Tokens(batch=1, sequence=max(1, repro.tokens))
        layer = Layer(name=repro.layer, op="linear", shape=[w.shape[0], w.shape[1]], inputs=["input"], sparsity=repro.pattern)
        features = w.shape[1]
    else:
        q, k = ops[:2]
        batch, heads, seq, head_dim = q.shape
        layer = Layer(
            name=repro.layer, op="attention", shape=[heads * head_dim], inputs=["input", "input", "input"], heads=heads,
            kv_heads=k.shape[1] if k.shape[1] != heads else None, causal=bool(repro.candidate.is_causal),
        )
        tokens = Tokens(batch=batch, sequence=seq)
        features = heads * head_dim
    description = (
        f"Focused reproducer of {repro.layer} cut from trace {trace_name}: first divergent stage {repro.first_stage} "
        f"({repro.finding}), mechanism {repro.mechanism or 'none'}; shapes, dtype and pattern as the trace recorded them."
    )
    cand = Workload(
        name=f"{repro.layer}-reproducer", description=description, tokens=tokens, input_features=features, layers=[layer],
        repeats=5, warmup=1, backend=repro.backend_profile, precision=dtype, launch=repro.launch,
        pruning={"method": "magnitude", "schedule": "one-shot", "calibration": "none (seeded weights; the trace carries no weights)"},
        origin=origin,
    )
    twin_layer = layer.model_copy(update={"sparsity": "dense"})
    base = cand.model_copy(update={
        "name": f"{repro.layer}-dense-twin", "layers": [twin_layer], "origin": None,
        "description": f"Dense twin of {cand.name}: the same op with the same shapes and dtype, dense.",
    })  # fmt: skip
    return cand, base
