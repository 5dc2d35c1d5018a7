"""The kernel stage on its own: precision findings follow the one dtype table."""

from __future__ import annotations

import pytest

from sparsedebug.core.dtypes import kernel_tolerance
from sparsedebug.locate.kernel import kernel_stage
from sparsedebug.locate.lower import lower_stage
from sparsedebug.records.run import RunRecord
from sparsedebug.render.words.locate_text import finding_text
from tests.locate.test_walk import make_run

LAYER = "layers.0.mlp.up"


def _labelled(run: RunRecord, precision: str | None, dtype: str = "fp16") -> RunRecord:
    out = run.model_copy(deep=True)
    next(k for k in out.kernel.layers if k.name == LAYER).precision = precision
    next(g for g in out.graph.layers if g.name == LAYER).dtype = dtype
    return out


def _precision_findings(base: RunRecord, cand: RunRecord) -> list[str]:
    stage = kernel_stage(base, cand, lower_stage(base, cand), 0.05, 1.10)
    return [finding_text(f) for f in stage.layers if f.kind == "precision"]


@pytest.mark.parametrize(
    ("label", "dtype", "err", "flagged"),
    [
        ("fp16", "fp16", 2e-2, True),  # beyond fp16's 1e-2
        ("fp16", "fp16", 5e-3, False),
        ("fp16 in / fp32 acc", "fp16", 2e-2, True),  # a free-text label names its input format
        ("torch.bfloat16", "bf16", 2e-2, False),  # bf16 explains up to 5e-2
        (None, "fp32", 1e-3, True),  # no kernel label: the graph dtype decides (fp32: 1e-4)
        ("tf32", "fp32", 5e-3, False),  # tf32 rounds to 11 bits: 1e-2
        ("int8", "int8", 0.5, False),  # no tolerance known: no evidence either way
    ],
)
def test_precision_tolerance_follows_the_layer_format(label: str | None, dtype: str, err: float, flagged: bool) -> None:
    base = _labelled(make_run("b", seed=1, rel_err={LAYER: 1e-6}), label, dtype)
    cand = _labelled(make_run("c", seed=2, rel_err={LAYER: err}), label, dtype)
    found = _precision_findings(base, cand)
    assert bool(found) == flagged, found
    if flagged:
        assert f"{err:.3g} vs fp64" in found[0]


def test_error_already_beyond_tolerance_in_the_baseline_is_not_the_candidates() -> None:
    tolerance = kernel_tolerance("fp16")
    assert tolerance is not None
    base = make_run("b", seed=1, rel_err={LAYER: 3 * tolerance})
    cand = make_run("c", seed=2, rel_err={LAYER: 4 * tolerance})
    assert _precision_findings(base, cand) == []
    assert len(_precision_findings(make_run("b", seed=1), cand)) == 1
