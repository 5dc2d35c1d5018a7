"""report.html in a real browser (headless Chromium) at 400, 1400 and 1920 px: no page-wide sideways scroll, figure
text at least 9 px tall, every figure whole inside its box (it scales to the width). Tables scroll inside their own box.

Needs Debian's ``chromium`` (``.ci/run`` installs it). Without it the test is skipped, except under ``CI=true``,
where a missing browser fails it.
"""

from __future__ import annotations

import os

import pytest

from sparsedebug.records.notes import note
from sparsedebug.records.run import RunRecord
from sparsedebug.render.html.bundle import render_bundle_html
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.playbook import load_playbook
from sparsedebug.sources.workload.lowering import SUPPORT_MATRIX_SOURCE
from tests.render.html.common import small_bundle
from tests.support.browser import PageMeasure, chromium, measure_widths
from tests.support.bundles import make_bundle
from tests.support.synth import L, make_run

WIDTHS = (400, 1400, 1920)
MIN_TEXT_PX = 9.0
TORCH_ERROR = (
    "RuntimeError(\"Error original_tensor.dtype torch.float32 is not a supported dtype for "
    "<class 'torch.sparse.semi_structured.SparseSemiStructuredTensorCUSPARSELT'>!\")"
)
TORCH_MESSAGE = note("targets.torch_raises", stage="to_sparse_semi_structured", error=TORCH_ERROR, source=SUPPORT_MATRIX_SOURCE)


def _model_layers(sparse: bool) -> list[L]:
    layers = []
    for block in range(6):
        for leaf in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            layers.append(L(f"encoder.layer.{block}.{leaf}", time_ms=0.7))
        for leaf in ("intermediate.dense", "output.dense"):
            name = f"encoder.layer.{block}.{leaf}"
            if not sparse:
                layers.append(L(name, time_ms=2.5))
            elif (block, leaf) == (3, "output.dense"):
                layers.append(L(name, intended="2:4", path="dense", reason="dtype_unsupported", time_ms=2.0, dense_ms=2.0))
            else:
                layers.append(L(name, intended="2:4", path="sparse", time_ms=16.0, dense_ms=2.4, conversions_per_call=1))
    return layers


def _with_detail(run: RunRecord) -> RunRecord:
    lower = [lo.model_copy(update={"detail": TORCH_MESSAGE}) if lo.reason is not None and lo.reason.value == "dtype_unsupported" else lo
             for lo in run.lower.layers]
    return run.model_copy(update={"lower": run.lower.model_copy(update={"layers": lower})})


def wide_bundle() -> LoadedBundle:
    """A MiniLM-shaped bundle: 36 long layer names and a fallback whose reason quotes a long torch message."""
    base = make_run("minilm_dense", _model_layers(sparse=False), 105.0, n=10, budget_ms=150.0)
    cand = _with_detail(make_run("minilm_2of4_regressed", _model_layers(sparse=True), 222.0, n=10, budget_ms=150.0))
    fixed = _with_detail(make_run("minilm_2of4_regressed_fixed", _model_layers(sparse=True), 130.0, n=10, budget_ms=150.0))
    return make_bundle(base, cand, fixed)


@pytest.fixture(scope="module")
def browser() -> str:
    found = chromium()
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (CI=true): apt-get install -y chromium")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return found


@pytest.fixture(scope="module", params=["small", "wide"])
def measured(request: pytest.FixtureRequest, browser: str) -> dict[int, PageMeasure]:
    bundle = small_bundle() if request.param == "small" else wide_bundle()
    return measure_widths(render_bundle_html(bundle, load_playbook()), WIDTHS, binary=browser)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_fits_the_screen_and_figure_text_is_readable(measured: dict[int, PageMeasure], width: int) -> None:
    got = measured[width]
    assert got.inner_width == width
    assert got.scroll_width <= got.inner_width, (got.scroll_width, got.wide_elements)
    assert got.glyph_runs > 50  # the figures' text was found and measured
    assert got.cropped_figures == []
    assert got.min_figure_text_px is not None and got.min_figure_text_px >= MIN_TEXT_PX, got.smallest
