"""report.html from `playbook run` and `memo --html`, and `import trace --html`: written, listed, re-rendered, refused cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.io import save_record
from tests.conftest import FIXTURES, assert_clean_error, invoke
from tests.render.html.common import parse
from tests.support.synth import dense_run, sparse_run

H200 = FIXTURES / "h200"
ART = FIXTURES / "artifacts"
SPARSE = H200 / "trace_sparse_mlp_T2048.json.gz"


def _svg_ids(html: str) -> list[str]:
    return [attrs["id"] or "" for tag, attrs in parse(html).tags if tag == "svg"]


@pytest.fixture(scope="module")
def h200_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("h200") / "bundle"
    result = invoke([
        "playbook", "run", "--baseline", str(H200 / "trace_dense_T2048.json.gz"), "--candidate", str(SPARSE),
        "--fixed", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"), "-o", str(out),
    ])
    assert result.exit_code == 0, result.stdout + result.stderr
    return out


def test_the_h200_walk_page_shows_the_eager_runs_host_wait(h200_bundle: Path) -> None:
    manifest = json.loads((h200_bundle / "bundle.json").read_text())
    assert manifest["files"]["html"] == "report.html"
    html = (h200_bundle / "report.html").read_text()
    assert _svg_ids(html) == ["fig-latency-svg", "fig-layers-svg", "fig-reality-svg", "fig-forward-svg", "fig-timeline-svg"]
    for title in ("baseline: trace_dense_T2048, iteration", "candidate: trace_sparse_mlp_T2048, iteration",
                  "fixed: trace_sparse_mlp_T2048_cudagraph, iteration"):
        assert title in html
    cand = json.loads((h200_bundle / "candidate.run.json").read_text())["schedule"]["timeline"]
    host = sum(g["dur_ms"] for g in cand["gaps"] if g["cause"] == "host_wait")
    assert host > 0.5 * cand["span_ms"]
    assert f"<td class=\"num\">{host:.3f} ({sum(g['cause'] == 'host_wait' for g in cand['gaps'])})</td>" in html
    assert "no run carries a quality measurement against the dense model" in html


def test_memo_html_rerenders_the_same_page(h200_bundle: Path) -> None:
    page = h200_bundle / "report.html"
    walked = page.read_text()
    page.unlink()
    result = invoke(["memo", str(h200_bundle), "--html"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == (h200_bundle / "memo.md").read_text().strip()
    assert f"wrote {page}" in result.stderr
    assert page.read_text() == walked
    data = json.loads(invoke(["memo", str(h200_bundle), "--html", "--json"]).stdout)
    assert data["html"] == str(page)


def test_memo_html_on_a_bundle_written_before_report_html(tmp_path: Path) -> None:
    paths = {}
    for name, run in (("base", dense_run(5.0)), ("cand", sparse_run(6.5, fallback=True))):
        paths[name] = tmp_path / f"{name}.json"
        save_record(run, paths[name])
    out = tmp_path / "bundle"
    assert invoke(["playbook", "run", "--baseline", str(paths["base"]), "--candidate", str(paths["cand"]), "-o", str(out)]).exit_code == 0
    manifest = json.loads((out / "bundle.json").read_text())
    del manifest["files"]["html"]
    (out / "bundle.json").write_text(json.dumps(manifest))
    (out / "report.html").unlink()
    result = invoke(["memo", str(out), "--html", "-o", str(tmp_path / "memo.md")])
    assert result.exit_code == 0, result.stderr
    assert f"wrote {out / 'report.html'}" in result.stdout
    assert "fig-quality-svg" in (out / "report.html").read_text()


def test_import_trace_html_page(tmp_path: Path) -> None:
    page, record = tmp_path / "trace.html", tmp_path / "run.json"
    result = invoke(["import", "trace", str(SPARSE), "--layers", "0", "--html", str(page), "-o", str(record)])
    assert result.exit_code == 0, result.stderr
    assert f"wrote {page}" in result.stdout and record.is_file()
    html = page.read_text()
    assert _svg_ids(html) == ["fig-timeline-svg", "fig-latency-svg", "fig-layers-svg", "fig-forward-svg"]
    assert "idle: host wait (launch began after the GPU went idle)" in html and "NVIDIA H200" in html


def test_import_trace_html_without_annotations(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    result = invoke(["import", "trace", str(ART / "no_annotations.json"), "--layers", "0", "--html", str(page)])
    assert result.exit_code == 0, result.stderr
    assert "fig-timeline-svg" in _svg_ids(page.read_text())


def test_import_trace_html_bad_paths_write_nothing(tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    result = invoke(["import", "trace", str(SPARSE), "-o", str(record), "--html", str(tmp_path / "no" / "p.html")])
    assert_clean_error(result, 2, "output directory", "--html")
    assert not record.exists()
    page = tmp_path / "p.html"
    assert_clean_error(invoke(["import", "trace", str(ART / "not_a_trace.json"), "--html", str(page)]), 2, "no traceEvents")
    assert not page.exists()
