"""report.html: parses, every figure inline and labelled, figures above tables, numbers in tables, nothing external."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparsedebug.core.stats import percentiles
from sparsedebug.render.html.bundle import render_bundle_html
from sparsedebug.signoff.metrics import reality_figures
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.playbook import load_playbook
from tests.render.html.common import figure_words, parse, small_bundle
from tests.support.bundles import make_bundle, reviewed
from tests.support.synth import L, make_run

FIGURES = ("latency", "layers", "reality", "forward", "timeline", "quality")


@pytest.fixture(scope="module")
def bundle() -> LoadedBundle:
    return small_bundle()


@pytest.fixture(scope="module")
def html(bundle: LoadedBundle) -> str:
    return render_bundle_html(bundle, load_playbook())


def test_the_page_parses_and_ids_are_unique(html: str) -> None:
    doc = parse(html)
    ids = [attrs["id"] for _, attrs in doc.tags if attrs.get("id")]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})[:5]
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html


def test_every_figure_is_inline_labelled_and_above_the_tables(html: str) -> None:
    doc = parse(html)
    svgs = [attrs for tag, attrs in doc.tags if tag == "svg"]
    assert [a["id"] for a in svgs] == [f"fig-{key}-svg" for key in FIGURES]
    for attrs in svgs:
        assert attrs["role"] == "img"
        title_id, desc_id = (attrs["aria-labelledby"] or "").split()
        assert doc.text[title_id].strip() and len(doc.text[desc_id]) > 40
    for key in FIGURES:
        assert f'<figure id="fig-{key}">' in html
        assert doc.text[f"fig-{key}"].count("Figure ") >= 1  # the visible caption
    first_table = html.index("<table")
    assert all(html.index(f'<svg id="fig-{key}-svg"') < first_table for key in FIGURES)
    # The memo and the report follow the figures, as rendered Markdown.
    assert html.index("ACCELERATOR REVIEW MEMO") > html.index("The figures in numbers")
    assert "<h2>Sparsity deployment report</h2>" in html


def test_axes_carry_labels_with_units(html: str) -> None:
    words = figure_words(html)  # every figure's text, its wrapped lines joined
    for label in (
        "whole-forward latency (ms; this machine, measured)",
        "fraction of forwards at or below",
        "kernel ms per call, median",
        "speedup (x)",
        "share of kernel time (%)",
        "median forward time (ms; this machine, measured)",
        "time from the iteration's first GPU op (ms)",
        "latency p50 (ms; this machine, measured)",
        "output cosine vs the dense model (1 = same)",
    ):
        assert label in words, label


def test_nothing_is_fetched_from_outside(html: str) -> None:
    doc = parse(html)
    for tag, attrs in doc.tags:
        assert tag not in ("script", "link", "img", "iframe", "object", "embed", "base"), tag
        for name in ("src", "href", "xlink:href", "action", "srcset"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith("#"), (tag, name, value)
    assert "@import" not in html
    assert not re.search(r"url\(\s*['\"]?(?!#)", html), re.search(r"url\([^)]*\)", html)
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html)


def test_the_tables_carry_the_figures_numbers(bundle: LoadedBundle, html: str) -> None:
    for run in (bundle.baseline, bundle.candidate, bundle.fixed):
        assert run is not None
        p = percentiles(run.outcome.latency_samples_ms)
        assert f"<td class=\"num\">{p.p50:.3f}</td>" in html and f"<td class=\"num\">{p.p99:.3f}</td>" in html
    fig = reality_figures(bundle.baseline, bundle.candidate)
    assert fig is not None and fig.real is not None and fig.fallback_time_share is not None
    assert f"{fig.real:.3f}x" in html and f"{fig.fallback_time_share:.1%}" in html
    # p99 of the 12-sample fixed run is inconclusive, the 30-sample ones are tail estimates
    assert html.count("inconclusive: fewer than 20 samples") == 1 and html.count("tail estimate") == 2
    # the timeline's host wait before l0.down, with its layer, and the fallback layer's reason
    assert "<td class=\"num\">3.050</td><td>host wait</td><td>l0.down</td>" in html
    assert "dense fallback: shape_not_aligned" in html
    # the equal-latency points and the dense point
    assert "dense, 25% of FFN removed (vs candidate)" in html and "dense baseline" in html


def test_decision_is_read_from_the_bundle(bundle: LoadedBundle, html: str) -> None:
    assert bundle.decision is not None
    label = load_playbook().decision(bundle.decision.decision).label
    assert f'<p class="decision">Decision: {label} (' in html and '</p><p>judged on the ' in html  # the label, what it asks
    box = html[html.index('<div class="banner'):]
    box = box[:box.index("</div>")]
    assert box.count("<li>") <= 3 and "every gate check" in box


def test_text_from_records_is_escaped() -> None:
    bundle = small_bundle()
    evil = bundle.candidate.model_copy(update={"name": '<script>alert("x")</script> costs $5'})
    html = render_bundle_html(reviewed(bundle.model_copy(update={"candidate": evil})), load_playbook())
    assert "<script>" not in html and "&lt;script&gt;" in html
    parse(html)


def test_a_bundle_without_timeline_or_quality_says_what_is_not_drawn() -> None:
    bundle = small_bundle()
    runs = {}
    for role in ("baseline", "candidate", "fixed"):
        run = getattr(bundle, role)
        runs[role] = run.model_copy(update={
            "schedule": run.schedule.model_copy(update={"timeline": None}),
            "outcome": run.outcome.model_copy(update={"quality": None, "equal_latency": None}),
        })
    html = render_bundle_html(reviewed(bundle.model_copy(update=runs)), load_playbook())
    doc = parse(html)
    assert [a["id"] for t, a in doc.tags if t == "svg"] == ["fig-latency-svg", "fig-layers-svg", "fig-reality-svg", "fig-forward-svg"]
    assert "no per-kernel timeline in these runs" in html
    assert "no run carries a quality measurement against the dense model" in html


def test_the_same_records_give_the_same_bytes(html: str) -> None:
    assert render_bundle_html(small_bundle(), load_playbook()) == html


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(["dense", "2:4", "4:8"]), st.sampled_from(["dense", "sparse"]), st.floats(0.001, 5.0)),
             min_size=1, max_size=6),
    st.floats(0.001, 500.0), st.floats(0.001, 500.0), st.integers(1, 25),
)
@pytest.mark.slow
def test_any_valid_records_render_a_page(layers: list[tuple[str, str, float]], base_ms: float, cand_ms: float, n: int) -> None:
    specs = [L(f"blk.{i}.op$", intended=intended, path=path, time_ms=t) for i, (intended, path, t) in enumerate(layers)]
    base = make_run("base", [L(s.name, time_ms=s.time_ms) for s in specs], base_ms, n=n)
    cand = make_run("cand <&>", specs, cand_ms, n=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        html = render_bundle_html(make_bundle(base, cand), load_playbook())
    assert "fig-latency-svg" in html and "fig-forward-svg" in html
    parse(html)
