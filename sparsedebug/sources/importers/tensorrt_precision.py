"""The precision a TensorRT engine layer computes in, from trtexec's ``--exportLayerInfo`` (``tensorrt_engine``'s reader).

A layer's output format is not its precision: an INT8 convolution that dequantizes writes FP16 or FP32
(``turing_fp16_i8816cudnn_int8_*``, ``volta_fp32_i8816cudnn_int8_*`` in the TREx MobileNet-QAT export). The
precision is read from what ran: the layer's declared precision, its tactic, its input formats.
"""

from __future__ import annotations

import re
from typing import Any

from sparsedebug.core.kernel_names import kernel_input_dtype

# TensorRT's Format/Datatype texts and Weights.Type values, narrowest spelling first
_PRECISIONS: tuple[tuple[str, str], ...] = (
    ("bf16", "bf16"), ("bfloat16", "bf16"), ("fp16", "fp16"), ("half", "fp16"), ("fp32", "fp32"), ("float", "fp32"), ("int8", "int8"),
    ("fp8", "fp8_e4m3"), ("int32", "int32"), ("int64", "int64"), ("bool", "bool"),
)


def precision_of(text: str | None) -> str | None:
    """The canonical dtype a TensorRT ``Format/Datatype`` text or ``Weights.Type`` names (None when none)."""
    if not text:
        return None
    low = text.lower()
    return next((dtype for marker, dtype in _PRECISIONS if re.search(rf"(?<![a-z0-9]){marker}(?![0-9])", low)), None)


def layer_precision(layer: dict[str, Any], tactic: str | None) -> str | None:
    """The precision a layer computes in (canonical dtype; None when nothing says).

    In this order: the layer's declared ``Precision`` where the export has one; the input type its tactic's name
    states (``core.kernel_names.kernel_input_dtype``: ``turing_fp16_i8816cudnn_int8`` reads int8 and writes fp16);
    its first input's ``Format/Datatype`` (TREx's rule, trex/layer.py: ``precision = inputs[0].precision``); its
    weights' type; its first output's format.
    """
    weights = layer.get("Weights")
    candidates = (
        precision_of(_text(layer.get("Precision"))),
        kernel_input_dtype(tactic) if tactic is not None else None,
        precision_of(_format(layer.get("Inputs"))),
        precision_of(_text(weights.get("Type")) if isinstance(weights, dict) else None),
        precision_of(_format(layer.get("Outputs"))),
    )
    return next((dtype for dtype in candidates if dtype is not None), None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _format(tensors: Any) -> str | None:
    """The first tensor's ``Format/Datatype`` text (None when the list or the field is not there)."""
    first = tensors[0] if isinstance(tensors, list) and tensors else None
    return _text(first.get("Format/Datatype")) if isinstance(first, dict) else None
