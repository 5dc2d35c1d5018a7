"""What the CPU ops of a trace say about a layer: its op kind, its backend, and its inputs.

An op's kind comes from the ops the model called, never from the kernels they
launched (a kernel change under the same op is a lowering change):

* linear: ``aten::linear``, ``addmm``, ``mm``, ``matmul``, ``bmm``, ``baddbmm``,
  ``_cslt_sparse_mm`` (cuSPARSELt), ``_sparse_semi_structured_linear``/``_mm``/``_addmm``
  (CUTLASS 2:4), ``_scaled_mm`` (fp8), ``_int_mm``, Inductor GEMM templates.
* attention: ``aten::scaled_dot_product_attention`` and its backend ops
  (``_scaled_dot_product_flash_attention``, ``_efficient_attention``,
  ``_scaled_dot_product_cudnn_attention``, ``_scaled_dot_product_attention_math``,
  ``_flash_attention_forward``, ...), FlashAttention's ``flash_attn::*`` ops,
  xformers, and any op named ``*attention*``; their autograd backward nodes.
* norm: layer/RMS/group/batch/instance norm ops; embedding; activations
  (relu, gelu, silu, sigmoid, tanh, ...); elementwise (arithmetic, casts, copies).

When the ops leave the kind open (only elementwise ops, as in an RMSNorm written
in Python), the layer name decides: ``norm``, ``act``, ``embed``, ``attn`` in its
last component. An attention written by hand (matmul + softmax) under an
attention-named layer is attention on the ``unfused`` backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from sparsedebug.records.run import DispatchEvidence, OpKind, SlowPathTrigger
from sparsedebug.sources.importers.trace.read.events import HostRange, input_dtype

# Which kind names a layer whose ops have several kinds: the first one present.
KIND_PRECEDENCE: tuple[OpKind, ...] = (
    OpKind.ATTENTION, OpKind.LINEAR, OpKind.EMBEDDING, OpKind.NORM, OpKind.ACTIVATION, OpKind.ELEMENTWISE, OpKind.OTHER,
)

LINEAR_OPS = frozenset({
    "aten::linear", "aten::addmm", "aten::mm", "aten::matmul", "aten::bmm", "aten::baddbmm", "aten::addmv", "aten::mv",
    "aten::_cslt_sparse_mm", "aten::_sparse_semi_structured_linear", "aten::_sparse_semi_structured_mm",
    "aten::_sparse_semi_structured_addmm", "aten::_scaled_mm", "aten::_int_mm", "aten::_addmm_activation", "aten::einsum",
})
_BATCHED_MATMUL = frozenset({"aten::bmm", "aten::baddbmm", "aten::matmul", "aten::einsum"})
_NORM_WORDS = ("layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "layernorm", "rmsnorm", "groupnorm", "batchnorm")
_ACTIVATIONS = (
    "relu", "gelu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "selu", "celu", "mish",
    "softplus", "glu", "swiglu", "threshold",
)
# Pointwise aten ops (trailing underscores of in-place variants stripped); _foreach_*/_fused_* count too.
_ELEMENTWISE = frozenset({
    "add", "sub", "rsub", "mul", "div", "pow", "rsqrt", "sqrt", "exp", "log", "neg", "abs", "clamp", "where", "copy", "to",
    "_to_copy", "contiguous", "clone", "fill", "zero", "zeros", "ones", "cat", "masked_fill", "cos", "sin", "reciprocal",
    "maximum", "minimum", "lerp", "addcmul", "addcdiv", "sign", "floor", "ceil", "round", "bitwise_and", "eq", "ne", "lt",
    "gt", "le", "ge", "full", "arange", "index_put", "stack", "dropout", "native_dropout", "square", "erf", "expm1",
})
# Ops that wrap other ops (torch.compile regions): their children are the model's ops.
_CONTAINER_OPS = ("Torch-Compiled Region", "CompiledFunction", "TorchDynamo Cache Lookup")

# Argument positions of aten::scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, *,
# scale, enable_gqa).
_SDPA_ARGS = {"attn_mask": 3, "dropout_p": 4, "is_causal": 5}


def strip_namespace(name: str) -> str:
    """``aten::linear`` -> ``linear``; autograd ``evaluate_function`` ranges -> their node name."""
    if name.startswith("autograd::engine::evaluate_function: "):
        name = name[len("autograd::engine::evaluate_function: ") :]
        return name.removeprefix("torch::autograd::")
    return name.removeprefix("aten::")


def is_container_op(name: str) -> bool:
    """An op that only wraps others (a torch.compile region)."""
    return name.startswith(_CONTAINER_OPS)


@lru_cache(maxsize=4096)
def op_kind(name: str) -> OpKind | None:
    """Kind of one op from its name; None when the name says nothing (views, allocations, unknown ops).

    Cached by name: a trace names the same few ops under every layer of every iteration (1,108 calls for 29
    names in a bisect of the H200 T2048 pair)."""
    n = name.lower()
    if "attention" in n or n.startswith(("flash_attn", "xformers::", "flash_attn_3")) or "sdpa" in n or "flashattn" in n:
        return OpKind.ATTENTION
    if name in LINEAR_OPS or n.startswith("triton_tem_") or (n.startswith("autograd::") and any(k in n for k in ("mmbackward", "addmmbackward", "linearbackward", "bmmbackward"))):
        return OpKind.LINEAR
    if "embedding" in n:
        return OpKind.EMBEDDING
    if any(word in n for word in _NORM_WORDS):
        return OpKind.NORM
    base = strip_namespace(name).lower()
    if base.rstrip("_") in _ACTIVATIONS or any(base.startswith(a + "backward") for a in _ACTIVATIONS):
        return OpKind.ACTIVATION
    if n.startswith("triton_poi_") or n.startswith("aten::") and (base.rstrip("_") in _ELEMENTWISE or base.startswith(("_foreach_", "_fused_"))):
        return OpKind.ELEMENTWISE
    return None


def name_hint(name: str) -> OpKind | None:
    """Kind suggested by a layer's (annotation or module class) name, from its last component."""
    leaf = name.lower().rsplit(".", 1)[-1]
    if "norm" in leaf:
        return OpKind.NORM
    if "embed" in leaf:
        return OpKind.EMBEDDING
    if "attn" in leaf or "attention" in leaf or "sdpa" in leaf:
        return OpKind.ATTENTION
    if leaf in ("act", "act_fn", "activation") or any(tag in leaf for tag in ("silu", "gelu", "relu", "swiglu", "sigmoid")):
        return OpKind.ACTIVATION
    return None


def layer_kind(op_names: Iterable[str], layer_name: str | None) -> OpKind:
    """Kind of a layer from the ops under it, refined by its name where the ops leave it open."""
    kinds: set[OpKind] = set()
    softmax = False
    for name in op_names:
        kind = op_kind(name)
        if kind is not None:
            kinds.add(kind)
        softmax = softmax or "softmax" in name
    hint = name_hint(layer_name) if layer_name else None
    if hint is OpKind.ATTENTION and OpKind.LINEAR in kinds and softmax and OpKind.ATTENTION not in kinds:
        return OpKind.ATTENTION  # a hand-written attention: matmul, softmax, matmul
    for kind in KIND_PRECEDENCE:
        if kind in kinds and kind not in (OpKind.ELEMENTWISE, OpKind.OTHER):
            return kind
    if hint is not None:
        return hint
    return OpKind.ELEMENTWISE if OpKind.ELEMENTWISE in kinds else OpKind.OTHER


# --------------------------------------------------------------------------- backends


def attention_backend(names: Sequence[str]) -> tuple[str, str | None]:
    """The SDPA (or other attention) backend the op names under an attention layer show, and the op that shows it."""
    for name in names:
        n = name.lower()
        if "cudnn" in n and "attention" in n:
            return "cudnn", name
        if "flash_attn_3" in n or "flash3" in n or "flash_attn3" in n:
            return "flash3", name
        if "flash" in n:
            return "flash", name
        if "efficient" in n or "xformers" in n or "mem_eff" in n:
            return "efficient", name
        if "attention_math" in n:
            return "math", name
        if "overrideable" in n:
            return "overrideable", name
    if any(n in LINEAR_OPS for n in names) and any("softmax" in n for n in names):
        op = next((n for n in names if "attention" in n.lower()), None)
        return ("math" if op is not None else "unfused"), op
    return "unknown", None


def linear_backend(names: Sequence[str]) -> tuple[str, str | None]:
    """The GEMM path the op names under a linear layer show, and the op that shows it."""
    for name in names:
        if name == "aten::_cslt_sparse_mm":
            return "cusparselt", name
        if name.startswith("aten::_sparse_semi_structured"):
            return "cutlass_sparse", name
        if name == "aten::_scaled_mm":
            return "scaled_mm", name
        if name == "aten::_int_mm":
            return "int_mm", name
        if name.startswith("triton_tem_"):
            return "triton", name
    mm = next((n for n in names if n in LINEAR_OPS), None)
    return ("cublas", mm) if mm is not None else ("unknown", None)


# --------------------------------------------------------------------------- inputs


def _dims(value: Any) -> list[int] | None:
    if isinstance(value, list) and value and all(isinstance(d, int) and not isinstance(d, bool) for d in value):
        return list(value)
    return None


def tensor_inputs(op: HostRange) -> list[tuple[int, str | None, list[int] | None, list[int] | None]]:
    """(position, dtype, shape, strides) of each tensor input of ``op`` (entries with a shape or a tensor dtype)."""
    dims = op.dims if isinstance(op.dims, list) else []
    types = op.types if isinstance(op.types, list) else []
    strides = op.strides if isinstance(op.strides, list) else []
    out = []
    for i in range(max(len(dims), len(types))):
        shape = _dims(dims[i]) if i < len(dims) else None
        dtype = input_dtype(types[i]) if i < len(types) else None
        if shape is None and dtype is None:
            continue
        stride = _dims(strides[i]) if i < len(strides) else None
        out.append((i, dtype, shape, stride))
    return out


def first_dtype(op: HostRange | None) -> str | None:
    """dtype of the first tensor input of ``op``."""
    if op is None:
        return None
    return next((dtype for _i, dtype, _s, _st in tensor_inputs(op) if dtype is not None), None)


def weight_shape(op: HostRange) -> list[int] | None:
    """(out, in) of a linear-family op's weight, from its input shapes (None when the op's layout does not tell)."""
    dims = op.dims if isinstance(op.dims, list) else []

    def at(i: int) -> list[int] | None:
        return _dims(dims[i]) if i < len(dims) else None

    if op.name in ("aten::linear", "aten::_sparse_semi_structured_linear"):
        w = at(1)
        return w if w is not None and len(w) == 2 else None
    if op.name in ("aten::addmm", "aten::_addmm_activation"):
        w = at(2)
        return [w[1], w[0]] if w is not None and len(w) == 2 else None
    if op.name in ("aten::mm", "aten::matmul"):
        w = at(1)
        return [w[1], w[0]] if w is not None and len(w) == 2 else None
    return None


def shape_text(op: HostRange) -> str:
    """The shape that names an op: a linear op's weight (out x in), else its first tensor input."""
    shape = weight_shape(op) if op.name in LINEAR_OPS and op.name not in _BATCHED_MATMUL else None
    if shape is None:
        shape = next((s for _i, _d, s, _st in tensor_inputs(op) if s is not None), None)
    return "x".join(str(d) for d in shape) if shape else ""


def _concrete(op: HostRange, index: int) -> str | None:
    values = op.concrete if isinstance(op.concrete, list) else []
    value = values[index] if index < len(values) else None
    return value if isinstance(value, str) and value != "" else None


def _attention_args(op: HostRange, evidence: DispatchEvidence) -> None:
    if op.name != "aten::scaled_dot_product_attention":
        return
    dims = op.dims if isinstance(op.dims, list) else []
    evidence.attn_mask = bool(_dims(dims[_SDPA_ARGS["attn_mask"]])) if len(dims) > _SDPA_ARGS["attn_mask"] else None
    dropout = _concrete(op, _SDPA_ARGS["dropout_p"])
    try:
        evidence.dropout_p = float(dropout) if dropout is not None else None
    except ValueError:
        evidence.dropout_p = None
    causal = _concrete(op, _SDPA_ARGS["is_causal"])
    evidence.is_causal = None if causal is None else causal.lower() == "true"


def dispatch_evidence(primary: HostRange, under: Sequence[HostRange], kind: OpKind) -> DispatchEvidence:
    """Backend, inputs and the visible slow-path triggers of one layer call (``primary``: the op the model called)."""
    names = [r.name for r in under if r.kind == "op"]
    backend, backend_op = attention_backend(names) if kind is OpKind.ATTENTION else linear_backend(names)
    inputs = tensor_inputs(primary)
    evidence = DispatchEvidence(
        op=primary.name,
        backend=backend,
        backend_op=backend_op,
        input_dtypes=[d for _i, d, _s, _st in inputs],
        input_shapes=[s for _i, _d, s, _st in inputs],
        input_strides=[st for _i, _d, _s, st in inputs],
        non_contiguous=[k for k, (_i, _d, _s, st) in enumerate(inputs) if st is not None and st and st[-1] != 1],
    )
    if kind is OpKind.ATTENTION:
        _attention_args(primary, evidence)
        query = inputs[0][2] if inputs else None
        evidence.head_dim = query[-1] if query else None
    evidence.triggers = _triggers(evidence, kind)
    return evidence


_INPUT_NAMES = {OpKind.ATTENTION: ("query", "key", "value"), OpKind.LINEAR: ("input", "weight", "bias")}


def _transposed_matrix(shape: list[int] | None, stride: list[int] | None) -> bool:
    """A column-major 2-D operand (a ``.t()`` view): BLAS reads it as it is, no copy (the weight-gradient GEMM's ``grad.t()``)."""
    return shape is not None and stride is not None and len(shape) == len(stride) == 2 and stride[0] == 1 and stride[1] >= max(1, shape[0])


def _triggers(e: DispatchEvidence, kind: OpKind) -> list[SlowPathTrigger]:
    names = _INPUT_NAMES.get(kind, ())
    out = []
    for k in e.non_contiguous:
        if kind is OpKind.LINEAR and _transposed_matrix(e.input_shapes[k], e.input_strides[k]):
            continue
        label = names[k] if k < len(names) else f"input {k}"
        stride = e.input_strides[k]
        out.append(SlowPathTrigger(code="non_contiguous", tensor=label, value=str(stride[-1]) if stride else None))
    dtypes = "/".join(sorted({d for d in e.input_dtypes[:3] if d is not None}))
    if kind in (OpKind.ATTENTION, OpKind.LINEAR) and {"fp32", "fp64"} & set(dtypes.split("/")):
        out.append(SlowPathTrigger(code="fp32_inputs", value=dtypes))
    if "/" in dtypes:
        out.append(SlowPathTrigger(code="mixed_dtypes", value=dtypes))
    if e.attn_mask:
        out.append(SlowPathTrigger(code="attn_mask"))
    if e.dropout_p:
        out.append(SlowPathTrigger(code="dropout", value=f"{e.dropout_p:g}"))
    if e.head_dim is not None and (e.head_dim % 8 != 0 or e.head_dim > 256):
        out.append(SlowPathTrigger(code="head_dim", value=str(e.head_dim)))
    return out


def signature(op: HostRange) -> str:
    """What makes two top-level op calls the same step of a model: name and input shapes."""
    return op.name + json.dumps(op.dims, separators=(",", ":"))
