"""Phrases for the notes signoff (metrics, stack, movement, energy, memo) and the playbook write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from collections.abc import Mapping

from sparsedebug.records.notes import NoteValue
from sparsedebug.render.words.notes import Phrase


def _own_pairs(v: Mapping[str, NoteValue]) -> str:
    text = f"measured on {v['layers']} sparse layer(s): dense/sparse kernel time"
    if v.get("converting"):
        text += f", per-call weight conversion of {v['converting']} layer(s) excluded (measured apart)"
    return text


def _no_pairs(v: Mapping[str, NoteValue]) -> str:
    tail = " and no layer of the baseline ran dense where this run ran sparse" if v["baseline"] else ", and no baseline to pair them with"
    return "not measured: no paired dense samples on the sparse layers" + tail


PHRASES: dict[str, Phrase] = {
    # metrics: how the sparse kernel speedup was measured, or why it was not
    "signoff.speedup_own_pairs": _own_pairs,
    "signoff.speedup_baseline_pairs": "measured on {layers} sparse layer(s) against the same layers of the baseline run dense: kernel time",
    "signoff.speedup_by_op": (
        "measured by op against the baseline (kernel-named layers, no shapes to pair): its {base_calls} GEMM calls, "
        "{base_ms:.3f} ms per iteration, less the run's {dense_calls} dense ones, {dense_ms:.3f} ms, over the run's "
        "{sparse_calls} sparse ones, {sparse_ms:.3f} ms"
    ),
    "signoff.speedup_none_sparse": "not measured: no layer meant to be sparse ran sparse",
    "signoff.speedup_no_pairs": _no_pairs,
    "signoff.speedup_no_sparse_gemm": "not measured: no timed sparse GEMM in the run",
    "signoff.speedup_baseline_sparse": (
        "not measured: the baseline runs {base_sparse_calls} sparse GEMM call(s) per iteration itself: no dense reference by op"
    ),
    "signoff.speedup_gemm_unpaired": (
        "not measured: the baseline runs {base_calls} GEMM calls per iteration, the run {calls} ({sparse_calls} sparse): "
        "the GEMM work does not pair by op"
    ),
    "signoff.speedup_no_dense_left": (
        "not measured: the run's {dense_calls} dense GEMM calls take {dense_ms:.3f} ms per iteration, no less than the "
        "baseline's {base_calls} ({base_ms:.3f} ms): no dense time left to pair with the sparse kernels"
    ),
}
