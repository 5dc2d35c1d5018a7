"""The sparsity deployment report: layer matrix, pruning schedule, Amdahl fallback impact, reality-check bars."""

from __future__ import annotations

import pytest

from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.deployment import (
    bar_chart,
    fallback_impact,
    layer_matrix,
    pruning_schedule,
    reality_check,
    render_report,
)
from sparsedebug.signoff.metrics import fallback_summary, nominal_factor, reality_figures
from sparsedebug.signoff.report import run_figures, run_report
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run


def _matrix(run: RunRecord) -> list[str]:
    """The layer matrix of ``run`` judged against a dense baseline, from the sections signoff builds."""
    base = dense_run()
    return layer_matrix(run, run_report("candidate", run, base, None), run_figures("candidate", run, base))


def test_layer_matrix_has_every_layer_and_marks_the_fallback() -> None:
    run = sparse_run(fallback=True)
    rows = _matrix(run)
    assert len(rows) == 2 + len(run.graph.layers)
    down = next(r for r in rows if r.startswith("| l0.down "))
    assert "**dense (fallback)**" in down and "shape_not_aligned" in down and "| 2:4 |" in down
    up = next(r for r in rows if r.startswith("| l0.up "))
    assert "| sparse |" in up and "| 1.2000 | 2.0000 |" in up


def test_amdahl_left_on_the_table_matches_hand_computation() -> None:
    fb = fallback_summary(sparse_run(fallback=True))
    # Kernel times: up 1.2 (sparse, dense 2.0), act 0.2, down 2.0 (fallback).
    share = 2.0 / (1.2 + 0.2 + 2.0)
    s = 2.0 / 1.2
    assert fb.fallback_time_share == pytest.approx(share)
    assert fb.sparse_kernel_speedup == pytest.approx(s)
    assert fb.speedup_left_on_table == pytest.approx(1.0 / ((1 - share) + share / s))
    # Ceiling: all meant-sparse layers at M/N = 2 over dense times 2.0 + 0.2 + 2.0.
    assert fb.amdahl_ceiling == pytest.approx(4.2 / (1.0 + 0.2 + 1.0))
    assert fb.rate == 0.5 and fb.reasons == {"shape_not_aligned": 1}
    text = "\n".join(fallback_impact(fb))
    assert f"{fb.speedup_left_on_table:.3f}x" in text and "58.8%" in text


def test_pruning_schedule_as_recorded_or_said_missing() -> None:
    run = sparse_run()
    assert run.workload is not None
    run.workload.knobs = {"pruning.method": "wanda", "pruning.schedule": "gradual, 4 steps", "pruning.calibration": "c4 x128"}
    lines = pruning_schedule(run)
    assert lines[:3] == ["- method: wanda", "- schedule: gradual, 4 steps", "- calibration: c4 x128"]
    assert lines[-1] == "- pattern(s): 2:4"
    run.workload.knobs = {}
    assert "not recorded in this replay run" in pruning_schedule(run)[0]


def test_bar_chart_is_proportional() -> None:
    lines = bar_chart([("a", 2.0, "2x"), ("b", 1.0, "1x"), ("c", 0.0, "n/a")], width=20)
    assert lines[0].count("\u2588") == 20 and lines[1].count("\u2588") == 10 and lines[2].count("\u2588") == 0
    assert lines[0].endswith("2x")


def test_reality_check_figures() -> None:
    chart = reality_check(reality_figures(dense_run(5.0), sparse_run(4.0, fallback=True)))
    assert chart is not None
    text = "\n".join(chart)
    assert "2.00x (pattern M/N)" in text and "1.25x (baseline p50 / run p50)" in text
    assert "58.8% of kernel time in dense fallbacks" in text
    assert reality_check(reality_figures(dense_run(), dense_run())) is None


def test_nominal_factor() -> None:
    assert nominal_factor("2:4") == 2.0 and nominal_factor("64:2:4") == 2.0 and nominal_factor("1:4") == 4.0
    assert nominal_factor("dense") is None and nominal_factor("5:4") is None


def test_full_report_sections() -> None:
    text = render_report(make_bundle(dense_run(5.0), sparse_run(6.5, fallback=True), sparse_run(3.5)))
    for head in ("## Latency (whole forward)", "## Supported-layer matrix (candidate", "## Pruning schedule (candidate",
                 "## Dense-fallback impact (candidate)", "## Sparse reality check (fixed)", "SPARSE REALITY CHECK"):
        assert head in text, head
    assert "| fixed | `sparse` | 3.500 |" in text
    assert "| candidate | fail: speedup 0.769x (30 vs 30 samples) |" in text
    assert "## Correctness, quality and performance matrix" in text


def test_no_fallback_means_nothing_left_on_the_table() -> None:
    text = "\n".join(fallback_impact(fallback_summary(sparse_run())))
    assert "none: no layer meant to be sparse runs dense" in text
    row = next(r for r in _matrix(sparse_run()) if r.startswith("| l0.up "))
    assert "| sparse | - |" in row
