"""Figure data from records: layer grouping, path classes, reality figures, the quality points, the page builder."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sparsedebug.records.run import RunRecord
from sparsedebug.render.html import sections as sec
from sparsedebug.render.html.page import Chart, Section, Table, figure_page, markdown_html
from sparsedebug.signoff.metrics import layer_rows, reality_figures
from sparsedebug.signoff.report import run_figures
from tests.render.html.common import parse, small_bundle
from tests.support.synth import L, dense_run, make_run, sparse_run


def blocks(n: int, sparse: bool) -> list[L]:
    layers = []
    for i in range(n):
        for leaf in ("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"):
            fallback = sparse and i == 3 and leaf == "down_proj"
            layers.append(L(
                f"layers.{i}.{leaf}", intended="2:4" if sparse else "dense", path="dense" if fallback or not sparse else "sparse",
                time_ms=1.0 if sparse and not fallback else 2.0, dense_ms=2.0 if sparse and not fallback else None,
            ))
    return layers


def _page(role: str, run: RunRecord, base: RunRecord | None = None) -> sec.PageRun:
    """A page run with the figures signoff builds for it (against ``base`` when given)."""
    return sec.PageRun(role, run, run_figures(role, run, base), layer_rows(run), reality_figures(base, run) if base is not None else None)


def test_path_classes_follow_the_shared_predicates() -> None:
    kinds = {r.name: sec.path_kind(r) for r in layer_rows(sparse_run(fallback=True))}
    assert kinds == {"l0.up": "sparse", "l0.act": "dense (intended)", "l0.down": "dense fallback"}


def test_many_layers_are_grouped_across_blocks_with_exact_sums() -> None:
    base = make_run("dense", blocks(8, sparse=False), 40.0)
    cand = make_run("sparse", blocks(8, sparse=True), 30.0)
    section = sec.layer_section(_page("baseline", base), _page("candidate", cand, base))
    assert section.chart is not None
    rows = {row[0]: row for row in section.tables[0].rows}
    assert sorted(rows) == sorted(f"layers.*.{leaf} (x8)" for leaf in ("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"))
    down = rows["layers.*.down_proj (x8)"]
    assert down[1] == "dense (intended) x8" and down[2] == "16.0000"
    assert down[3] == "sparse x7, dense fallback x1" and down[4] == "9.0000" and down[5] == "0.562x"
    assert "layers.*.down_proj (x8)" in section.chart.svg  # its label, bold in the figure
    assert "group sum" in section.chart.svg


def test_layers_that_do_not_group_are_cut_to_the_largest_and_the_rest_summed() -> None:
    layers = [L(f"unique_{k}", time_ms=float(k + 1)) for k in range(45)]
    section = sec.layer_section(None, _page("run", make_run("r", layers, 100.0)))
    rows = section.tables[0].rows
    assert len(rows) == sec.MAX_LAYER_ROWS
    assert rows[-1][0] == "all other layers (x6)" and rows[-1][2] == f"{sum(range(1, 7)):.4f}"
    assert [r[0] for r in rows[:3]] == ["unique_6", "unique_7", "unique_8"]  # model order is kept


def test_reality_table_holds_the_shared_figures() -> None:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    section = sec.reality_section([_page("candidate", cand, base)])
    fig = reality_figures(base, cand)
    assert fig is not None and fig.ceiling is not None and fig.real is not None
    cells = {row[0]: row[1] for row in section.tables[0].rows}
    assert cells["nominal speedup"] == "2.000x" and cells["model ceiling"] == f"{fig.ceiling:.3f}x"
    assert cells["real speedup"] == f"{fig.real:.3f}x" == f"{5.0 / 6.5:.3f}x"
    assert reality_figures(base, base) is None
    assert sec.reality_section([_page("candidate", base, base)]).chart is None


def test_quality_points_pair_the_narrowed_model_with_its_own_measurement() -> None:
    b = small_bundle()
    assert b.fixed is not None
    points, rows = sec._quality_points([_page("baseline", b.baseline), _page("candidate", b.candidate), _page("fixed", b.fixed)])
    by = {p.label: p for p in points}
    # the candidate was timed at 6.5 ms beside its narrowed model, its own p50 is 6.5: one point
    assert by["dense, 25% of FFN removed (vs candidate)"].pair == "candidate"
    # the fixed run was timed at 3.7 ms there, its own p50 is 3.5: a hollow point of its own
    assert by["dense, 50% of FFN removed (vs fixed)"].pair == "fixed, timed beside it"
    assert by["fixed, timed beside it"].hollow and by["fixed, timed beside it"].latency_ms == 3.7
    assert by["dense baseline"].cosine == 1.0
    assert len(rows) == 3 + 2 * 2


def test_timeline_gaps_name_the_layer_that_waited() -> None:
    b = small_bundle()
    section = sec.timeline_section([_page("candidate", b.candidate)])
    summary, classes, gaps = section.tables
    assert summary.rows[0][6] == "3.050 (1)" and summary.rows[0][7] == "0.050 (1)" and summary.rows[0][5] == "3.400"
    assert gaps.rows[0] == ["candidate", "1.450", "3.050", "host wait", "l0.down"]
    assert [r[1] for r in classes.rows] == ["sparse_gemm", "dense_tc_gemm", "elementwise"]


def test_clock_names_where_a_latency_was_measured() -> None:
    run = dense_run()
    assert sec.clock(_page("run", run)) == "this machine, measured"  # the spelling every renderer uses (render.clocks)
    traced = run.model_copy(update={
        "source": run.source.model_copy(update={"kind": "torch_trace"}),
        "lower": run.lower.model_copy(update={"backend": "cuda:NVIDIA H200"}),
    })
    assert sec.clock(_page("run", traced)) == "cuda:NVIDIA H200, traced"


def test_a_figure_page_is_one_call_over_sections() -> None:
    table = Table("t", ["a", "b"], [["x<y", "1.5"]], numeric=[False, True])
    svg = '<svg id="k" role="img" aria-labelledby="k-title k-desc"><title id="k-title">T</title><desc id="k-desc">D</desc></svg>'
    html = figure_page("A page", "sub", [Section("k", "Key", Chart(svg, "cap"), [table]), Section("m", "Missing", None, [], missing="why")])
    doc = parse(html)
    assert "<td>x&lt;y</td><td class=\"num\">1.5</td>" in html
    assert html.index("<svg") < html.index("<table") and "Not drawn: why" in html
    assert doc.text["num-m"].startswith("2. Missing")


def test_markdown_parts_make_no_links_and_escape_html() -> None:
    html = markdown_html("# T\n\n[site](https://example.com) ![i](http://x/y.png) <b>raw</b> <https://a.b>\n\n| a |\n| - |\n| 1 |\n")
    assert "href" not in html and "<img" not in html and "<b>" not in html and "&lt;b&gt;" in html
    assert "<h2>T</h2>" in html and "<table>" in html


@pytest.mark.parametrize("module", ["sparsedebug.cli.memo", "sparsedebug.cli.importers", "sparsedebug.cli.playbook", "sparsedebug.render.html.bundle"])
def test_no_plotting_library_is_imported(module: str) -> None:
    code = f"import sys, {module}\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
