"""The figures' SVG: well-formed XML, drawn from the data (the series' values are the points), scaled by a viewBox;
the drawing primitives; and no plotting library imported on the way."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from sparsedebug.render.html import figures as fg
from sparsedebug.render.html import svg
from sparsedebug.render.html.bundle import bundle_sections
from tests.conftest import REPO_ROOT
from tests.render.html.common import small_bundle
from tests.render.html.test_browser import wide_bundle

NS = "{http://www.w3.org/2000/svg}"


def _figures() -> dict[str, str]:
    return {f"{name}/{s.key}": s.chart.svg for name, bundle in (("small", small_bundle()), ("wide", wide_bundle()))
            for s in bundle_sections(bundle) if s.chart is not None}


@pytest.mark.parametrize("name", ["small", "wide"])
def test_every_figure_is_well_formed_scalable_and_labelled(name: str) -> None:
    for key, text in _figures().items():
        if not key.startswith(name):
            continue
        root = ET.fromstring(text)
        assert root.tag == f"{NS}svg", key
        assert "width" not in root.attrib and "height" not in root.attrib, key  # the page's CSS sizes it
        x0, y0, w, h = (float(v) for v in root.attrib["viewBox"].split())
        assert (x0, y0, w) == (0.0, 0.0, svg.WIDTH) and h > 50, key
        ident = root.attrib["id"]
        assert root.attrib["role"] == "img" and root.attrib["aria-labelledby"] == f"{ident}-title {ident}-desc"
        assert root.find(f"{NS}title") is not None and len(root.findtext(f"{NS}desc") or "") > 40
        sizes = [float(t.attrib["font-size"]) for t in root.iter(f"{NS}text")]
        assert sizes and min(sizes) >= svg.FONT, key
        for element in root.iter():  # nothing drawn outside the viewBox's width
            for attr in ("x", "x1", "x2", "cx"):
                if attr in element.attrib and element.tag != f"{NS}pattern":
                    assert -0.01 <= float(element.attrib[attr]) <= svg.WIDTH + 0.01, (key, element.tag, element.attrib)


def test_wide_figure_labels_fit_the_width() -> None:
    """Row labels, legends and titles are laid out by their estimated width: none runs past the right edge."""
    for key, text in _figures().items():
        root = ET.fromstring(text)
        for t in root.iter(f"{NS}text"):
            if "transform" in t.attrib:
                continue
            width = svg.text_width(t.text or "", float(t.attrib["font-size"]))
            x = float(t.attrib["x"])
            start = {"start": x, "middle": x - width / 2, "end": x - width}[t.attrib.get("text-anchor", "start")]
            assert start >= -0.5 and start + width <= svg.WIDTH + 0.5, (key, t.text)


def _series_points(text: str) -> list[list[float]]:
    """The x coordinates of each step series (its ``H`` commands) in drawing order."""
    return [[float(v) for v in re.findall(r"H([-\d.]+)", d)] for d in re.findall(r'<path d="([^"]+)"[^>]*class="series"', text)]


def test_the_ecdf_steps_at_every_sample() -> None:
    rng = np.random.default_rng(7)
    samples = [tuple(float(v) for v in rng.normal(mu, 0.2, n)) for mu, n in ((5.0, 30), (6.5, 17))]
    series = []
    for role, s in zip(("baseline", "candidate"), samples, strict=True):
        p50, p95, p99 = (float(v) for v in np.percentile(s, [50, 95, 99]))
        series.append(fg.LatencySeries(role, role, s, p50, p95, p99, tail_ok=len(s) >= 20))
    text = fg.latency_ecdf(series, [6.0], "latency (ms)", 20)
    ET.fromstring(text)
    xs = _series_points(text)
    assert [len(x) for x in xs] == [len(s) for s in samples]
    # x is an affine function of the sample: recover it from all points, then every point lies on it
    values = np.array(sorted(samples[0]) + sorted(samples[1]))
    coords = np.array(xs[0] + xs[1])
    slope, offset = np.polyfit(values, coords, 1)
    assert slope > 0 and np.max(np.abs(slope * values + offset - coords)) < 0.02
    ys = [float(v) for v in re.findall(r"V([-\d.]+)", re.findall(r'<path d="([^"]+)"[^>]*class="series"', text)[1])]
    top, bottom = min(ys), max(ys)  # the candidate's steps: one per sample, evenly spaced up to 1
    assert len(set(np.round(np.diff(ys), 1))) == 1 and bottom > top
    assert "budget 6 ms" in text and "p99 from &lt; 20 samples: inconclusive" in text


def test_layer_bars_are_as_long_as_their_times() -> None:
    bars = [fg.LayerBar("a", (("sparse", 1.0),), (("sparse", 2.0), (fg.CONVERSION, 1.0)), False),
            fg.LayerBar("b", (("dense (intended)", 4.0),), (("dense fallback", 4.0),), True)]
    text = fg.layer_time(bars, "baseline: x", "candidate: y", grouped=False)
    root = ET.fromstring(text)
    widths = [float(r.attrib["width"]) for r in root.iter(f"{NS}rect") if r.attrib.get("height") == num(fg.ROW_BAR)]
    # baseline a, candidate a (sparse, conversion), baseline b, candidate b: proportional to 1, 2, 1, 4, 4
    assert len(widths) == 5
    unit = widths[0]
    assert np.allclose(np.array(widths) / unit, [1, 2, 1, 4, 4], atol=0.01)
    assert 'font-weight="bold"' in text and "url(#fig-layers-svg-hatch-fwd" in text


def num(value: float) -> str:
    return svg.num(value)


def test_primitives() -> None:
    assert svg.nice_ticks(0.0, 1.05) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert svg.nice_ticks(3.4, 6.6, 4) == [4.0, 5.0, 6.0]
    scale = svg.Scale(1.0, 1000.0, 0.0, 300.0, log=True)
    assert scale(10.0) == pytest.approx(100.0) and [v for v, _ in scale.ticks()] == [1.0, 10.0, 100.0, 1000.0]
    linear = svg.Scale(0.0, 2.0, 100.0, 0.0)  # a y axis runs upwards
    assert linear(0.5) == 75.0
    assert svg.num(-0.001) == "0" and svg.num(12.3456) == "12.35" and svg.num(3.0) == "3"
    assert all(svg.text_width(line) <= 100 for line in svg.wrap("a rather long label that must wrap into lines", 100))
    assert svg.wrap("x" * 30, 60) == ["x" * 7, "x" * 7, "x" * 7, "x" * 7, "xx"]
    c = svg.Canvas("k")
    assert c.fill(svg.BLUE, "//") == c.fill(svg.BLUE, "//") == "url(#k-hatch-fwd-0072b2-000000)" and len(c.defs) == 1
    c.text(1, 2, "a < b & c")
    assert "a &lt; b &amp; c" in c.svg("t", "d")


def test_a_trace_pair_walk_imports_no_plotting_library(tmp_path: Path) -> None:
    """``playbook run`` on two real traces, figures drawn: neither matplotlib nor scipy is loaded."""
    out = tmp_path / "bundle"
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from sparsedebug.cli.app import app\n"
        f"r = CliRunner().invoke(app, ['playbook', 'run', '--no-reduce', '--baseline', '{REPO_ROOT}/fixtures/h200/trace_dense_T2048.json.gz',"
        f" '--candidate', '{REPO_ROOT}/fixtures/h200/trace_sparse_mlp_T2048.json.gz', '-o', '{out}'])\n"
        "print('EXIT', r.exit_code)\n"
        "print('LOADED', sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'scipy'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert "EXIT 0" in done.stdout and "LOADED []" in done.stdout, done.stdout[-2000:]
    assert "<svg" in (out / "report.html").read_text()


def test_tick_labels_show_the_step() -> None:
    assert [label for _, label in svg.Scale(0.0, 1.05, 0.0, 300.0).ticks(5)] == ["0", "0.25", "0.50", "0.75", "1.00"]
    assert [label for _, label in svg.Scale(0.0, 12.0, 0.0, 300.0).ticks(6)] == ["0", "2", "4", "6", "8", "10", "12"]
