"""Import TensorRT build logs: the build's sparsity option, and which layers were eligible for sparse math and which got it.

TensorRT (built with sparsity enabled and verbose logging) prints two lines::

    [TRT] (Sparsity) Layers eligible for sparse math: Conv_3 + Relu_4, MatMul_7
    [TRT] (Sparsity) TRT inference plan picked sparse implementation for layers: Conv_3 + Relu_4

Older releases prefix them ``[TensorRT] INFO:``; trtexec adds ``[date] [I]``. Layer
lists are comma-separated; fused layers keep their `` + `` joins; a list may be
empty. Eligible minus picked is the dense-fallback set: layers whose weights were
2:4 but whose sparse tactic lost (or was not offered) during the build.

trtexec also prints its build options (``[I] Sparsity: Disabled``, ``[I] Precision: FP32+FP16``)
and the device (``[I] Selected Device: A100-SXM4-40GB``). A build whose options say
``Sparsity: Disabled``, or a log with no ``(Sparsity)`` lines at all, is a finding: no layer
can have run sparse, and the report carries the flags that enable it.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparsedebug.core.io import read_text
from sparsedebug.records.artifacts import TrtSparsityReport
from sparsedebug.records.engine import TRT_SPARSITY_FLAGS, BuildSparsity

_ELIGIBLE = re.compile(r"\(Sparsity\)\s*Layers eligible for sparse math:(?P<layers>.*)$")
_PICKED = re.compile(r"\(Sparsity\)\s*TRT inference plan picked sparse implementation for layers:(?P<layers>.*)$")
_OPTION = re.compile(r"^\[[^\]]*\]\s*\[I\]\s*(?P<key>[A-Za-z][A-Za-z0-9 ()/.-]*?):\s*(?P<value>.*)$")
_SPARSITY = {"disabled": BuildSparsity.DISABLED, "enabled": BuildSparsity.ENABLED, "forced": BuildSparsity.FORCED, "force": BuildSparsity.FORCED}


def split_layers(text: str) -> list[str]:
    """Split a comma-separated TensorRT layer list, keeping fused ``A + B`` names whole."""
    return [name.strip() for name in text.split(",") if name.strip()]


def trtexec_options(text: str) -> dict[str, tuple[str, int]]:
    """trtexec's ``[I] Key: value`` lines (build, system and device options): the first value of each key, with its line number."""
    options: dict[str, tuple[str, int]] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        match = _OPTION.match(line.strip())
        if match is not None and "(Sparsity)" not in line:
            options.setdefault(match["key"].strip(), (match["value"].strip(), line_no))
    return options


def build_sparsity(options: dict[str, tuple[str, int]]) -> tuple[BuildSparsity, int | None]:
    """The build's ``Sparsity:`` option and its line (``not_said`` when the log has none)."""
    value = options.get("Sparsity")
    if value is None:
        return BuildSparsity.NOT_SAID, None
    return _SPARSITY.get(value[0].split()[0].lower() if value[0] else "", BuildSparsity.NOT_SAID), value[1]


def parse_trt_log(text: str, file: str) -> TrtSparsityReport:
    """The ``(Sparsity)`` lines and the ``Sparsity:`` build option of a TensorRT build log's text."""
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
    sparsity, sparsity_line = build_sparsity(trtexec_options(text))
    lines = bool(eligible_lines or picked_lines)
    picked_set = set(picked)
    eligible_set = set(eligible)
    off = sparsity is BuildSparsity.DISABLED or (not lines and sparsity is BuildSparsity.NOT_SAID)
    return TrtSparsityReport(
        file=file,
        build_sparsity=sparsity,
        build_sparsity_line=sparsity_line,
        sparsity_lines=lines,
        enable_flags=list(TRT_SPARSITY_FLAGS) if off else [],
        eligible=eligible,
        picked=picked,
        fallback=[name for name in eligible if name not in picked_set],
        picked_not_eligible=[name for name in picked if name not in eligible_set] if eligible_lines else [],
        eligible_lines=eligible_lines,
        picked_lines=picked_lines,
        complete=bool(eligible_lines and picked_lines) or not lines,
    )


def load_trt_log(path: Path) -> TrtSparsityReport:
    """Parse a TensorRT build log's ``(Sparsity)`` lines into eligible, picked and fallback layers, and its Sparsity option.

    A log with no ``(Sparsity)`` lines, or built with ``Sparsity: Disabled``, is read (its report
    says so and carries the enabling flags), not refused.
    """
    return parse_trt_log(read_text(path), str(path))
