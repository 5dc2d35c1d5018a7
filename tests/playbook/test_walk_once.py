"""The walk reads each input once and writes each bundle file once (counted with an audit hook on ``open``), and what
it wrote is what the bundle re-renders to from disk."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sparsedebug.core.errors import InternalError
from sparsedebug.core.resources import embedded_workload
from sparsedebug.playbook.bundle import PARTIAL, BundleWriter, work_dir
from sparsedebug.playbook.run import DEFAULT_BASELINE, DEFAULT_CANDIDATE
from sparsedebug.records.bundle import FixOutcome
from sparsedebug.records.notes import note
from sparsedebug.render.document import review
from sparsedebug.render.html.bundle import render_bundle_html
from sparsedebug.render.markdown.memo import render_full_report
from sparsedebug.render.memo.formats import render
from sparsedebug.signoff.decide import decide_bundle
from sparsedebug.signoff.memo import build_memo
from sparsedebug.sources.bundle import MANIFEST, load_bundle
from sparsedebug.sources.playbook import default_playbook_path, load_playbook
from tests.conftest import invoke
from tests.sources.replay.model_workloads import bert_pair
from tests.support.opens import Opens, counting

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "h200"


def _assert_once(opens: Opens, out: Path, inputs: list[Path]) -> None:
    """Each input and the playbook opened once (never for writing); each bundle file written once, the manifest
    included; nothing read back from the bundle while it was built."""
    for path in [*inputs, default_playbook_path()]:
        assert opens.reads[path.resolve()] == 1, (path, opens.reads[path.resolve()])
        assert opens.writes[path.resolve()] == 0
    partial = work_dir(out, PARTIAL)
    listed = load_bundle(out).manifest.files.values()
    assert opens.under(partial, opens.writes) == Counter({Path(name): 1 for name in [*listed, MANIFEST]})
    assert opens.under(partial, opens.reads) == Counter()
    assert sorted(p.name for p in out.iterdir()) == sorted([*listed, MANIFEST])


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return bert_pair(tmp_path_factory.mktemp("walk-once"))


def test_a_model_walk_reads_each_input_once_and_writes_each_file_once(models: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    with counting() as opens:
        result = invoke(["playbook", "run", "--baseline", str(models["base"]), "--candidate", str(models["cand"]), "-o", str(out),
                         "--repeats", "3"])
    assert result.exit_code == 0, result.stderr
    assert {"reduce.json", "fixed.workload.yaml", "fixed.run.json", "memo.json"} <= {p.name for p in out.iterdir()}
    _assert_once(opens, out, [models["base"], models["cand"]])


@pytest.mark.slow
@pytest.mark.real_model
def test_the_default_walk_reads_each_input_once_and_writes_each_file_once(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    with counting() as opens:
        result = invoke(["playbook", "run", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    _assert_once(opens, out, [embedded_workload(DEFAULT_BASELINE), embedded_workload(DEFAULT_CANDIDATE)])
    assert "(rendering)" not in (out / "memo.md").read_text()
    verified = invoke(["memo", str(out), "--verify"])  # the default walk's memo.md agrees with its memo.json
    assert verified.exit_code == 0, verified.stdout


def test_a_trace_walk_wrote_what_its_records_decide_and_render_to(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    pair = [H200 / "trace_dense_T2048.json.gz", H200 / "trace_sparse_mlp_T2048.json.gz"]
    with counting() as opens:
        result = invoke(["playbook", "run", "--baseline", str(pair[0]), "--candidate", str(pair[1]), "-o", str(out),
                         "--fixed", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz")])
    assert result.exit_code == 0, result.stderr
    assert opens.under(work_dir(out, PARTIAL), opens.reads) == Counter()
    book = load_playbook()
    bundle = load_bundle(out)
    assert decide_bundle(bundle, book) == bundle.decision
    memo = build_memo(bundle, book)
    assert memo == bundle.memo
    again = bundle.model_copy(update={"memo": memo})
    assert (out / "report.md").read_text() == render_full_report(again, book)
    assert (out / "memo.md").read_text() == render(review(again), "markdown")
    assert (out / "report.html").read_text() == render_bundle_html(again, book)
    assert render(memo, "terminal").splitlines()[0] in result.stdout


def test_a_bundle_file_is_written_once(tmp_path: Path) -> None:
    out = BundleWriter(tmp_path)
    record = FixOutcome(proposed=None, applied=False, how=note("playbook.no_fix"), fixed_source="none")
    stored = out.record("fix", record)
    assert stored == FixOutcome.model_validate_json((tmp_path / "fix.json").read_text()) == record
    assert out.files == {"fix": "fix.json"}
    with pytest.raises(InternalError, match="fix.json written twice"):
        out.record("fix", record)
    with pytest.raises(InternalError, match="fix.json written twice"):
        out.text("fix", "{}")
