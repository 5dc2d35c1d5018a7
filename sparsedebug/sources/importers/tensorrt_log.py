"""Import TensorRT build logs: which layers were eligible for sparse math and which got it.

TensorRT (built with sparsity enabled and verbose logging) prints two lines::

    [TRT] (Sparsity) Layers eligible for sparse math: Conv_3 + Relu_4, MatMul_7
    [TRT] (Sparsity) TRT inference plan picked sparse implementation for layers: Conv_3 + Relu_4

Older releases prefix them ``[TensorRT] INFO:``; trtexec adds ``[date] [I]``. Layer
lists are comma-separated; fused layers keep their `` + `` joins; a list may be
empty. Eligible minus picked is the dense-fallback set: layers whose weights were
2:4 but whose sparse tactic lost (or was not offered) during the build.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import read_text
from sparsedebug.records.artifacts import TrtSparsityReport

_ELIGIBLE = re.compile(r"\(Sparsity\)\s*Layers eligible for sparse math:(?P<layers>.*)$")
_PICKED = re.compile(r"\(Sparsity\)\s*TRT inference plan picked sparse implementation for layers:(?P<layers>.*)$")


def split_layers(text: str) -> list[str]:
    """Split a comma-separated TensorRT layer list, keeping fused ``A + B`` names whole."""
    return [name.strip() for name in text.split(",") if name.strip()]


def load_trt_log(path: Path) -> TrtSparsityReport:
    """Parse a TensorRT build log's ``(Sparsity)`` lines into eligible, picked and fallback layers."""
    text = read_text(path)
    eligible: list[str] = []
    picked: list[str] = []
    eligible_lines: list[int] = []
    picked_lines: list[int] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        line = line.rstrip()
        if match := _ELIGIBLE.search(line):
            eligible_lines.append(line_no)
            eligible.extend(n for n in split_layers(match["layers"]) if n not in eligible)
        elif match := _PICKED.search(line):
            picked_lines.append(line_no)
            picked.extend(n for n in split_layers(match["layers"]) if n not in picked)
    if not eligible_lines and not picked_lines:
        raise UserError(
            f"{path}: no '(Sparsity) Layers eligible for sparse math' or '(Sparsity) TRT inference plan picked' lines; "
            "build with sparsity enabled (trtexec --sparsity=enable, BuilderFlag.SPARSE_WEIGHTS) and verbose logging"
        )
    picked_set = set(picked)
    eligible_set = set(eligible)
    return TrtSparsityReport(
        file=str(path),
        eligible=eligible,
        picked=picked,
        fallback=[name for name in eligible if name not in picked_set],
        picked_not_eligible=[name for name in picked if name not in eligible_set] if eligible_lines else [],
        eligible_lines=eligible_lines,
        picked_lines=picked_lines,
        complete=bool(eligible_lines and picked_lines),
    )
