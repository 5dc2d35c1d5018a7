"""The walk reads each input once and writes each bundle file once (counted with an audit hook on ``open``), and what
it wrote is what the bundle re-renders to from disk."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np
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
from sparsedebug.sources.models.base import Array, Batch, Transformer
from sparsedebug.sources.playbook import default_playbook_path, load_playbook
from sparsedebug.sources.replay.checkpoint import source as checkpoint_source
from sparsedebug.sources.replay.checkpoint.kernels import ModelKernels
from sparsedebug.sources.replay.checkpoint.prune import ModelCache
from sparsedebug.sources.replay.checkpoint.quality import Outputs, evaluate
from tests.conftest import invoke
from tests.sources.replay.model_workloads import bert_pair
from tests.support.opens import Opens, counting
from tests.support.pairing import plant_drift

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


REFERENCE: tuple[tuple[object, ...], ...] = (("reference",),)


def _variant(overrides: object) -> tuple[tuple[object, ...], ...]:
    """What a quality evaluation computes, by content: every linear's weight bytes, precision, pattern and conversion."""
    if not isinstance(overrides, ModelKernels):
        return REFERENCE
    return tuple(sorted(
        (name, hashlib.sha1(np.ascontiguousarray(k.weight).tobytes()).hexdigest(), k.precision, str(k.pattern), k.per_call)
        for name, k in overrides.kernels.items()
    ))  # fmt: skip


def test_a_model_walk_evaluates_each_variants_quality_once(models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 57: the candidate replayed again beside the fixed run (the machine drifted, planted), the baseline, whose
    kernels are the dense model's (as step 0 of the equal-latency narrowing and the reproducer's pair are), and each
    narrowed model: every variant's quality is evaluated once in the walk, the candidate's included."""
    monkeypatch.setattr(checkpoint_source, "_QUALITY", ModelCache(keep=64))
    decided = plant_drift(monkeypatch, drifted=True)
    evaluated: Counter[tuple[tuple[object, ...], ...]] = Counter()

    def counting(model: Transformer, batch: Batch, overrides: Mapping[str, Array] | None = None) -> Outputs:
        evaluated[_variant(overrides)] += 1
        return evaluate(model, batch, overrides)

    monkeypatch.setattr(checkpoint_source, "evaluate", counting)
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(models["base"]), "--candidate", str(models["cand"]), "-o", str(out),
                     "--repeats", "3"])
    assert result.exit_code == 0, result.stderr
    assert [p.candidate for p in decided] == ["fresh"]  # the candidate was replayed twice
    assert (out / "reduce.json").exists()
    per_call = [variant for variant in evaluated if variant != REFERENCE and any(spec[-1] is True for spec in variant)]
    assert len(per_call) == 1, "the candidate (the one variant converting per call) evaluated under one key"
    assert max(evaluated.values()) == 1, [n for n in evaluated.values() if n > 1]


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
