"""Fuzz every loader through the CLI: workloads, run records, gate policies, bundles, fingerprints and playbooks."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.core.io import save_record
from sparsedebug.sources.playbook import default_playbook_path
from tests.conftest import FIXTURES, invoke
from tests.fuzz.conftest import FUZZ
from tests.fuzz.harness import check_cli
from tests.fuzz.mutations import damaged_bytes, damaged_document
from tests.support.synth import dense_run, sparse_run

WORKLOAD = yaml.safe_load((FIXTURES / "workloads" / "planted" / "base.yaml").read_text())
POLICY = yaml.safe_load((Path(__file__).resolve().parents[2] / "playbooks" / "gate-default.yaml").read_text())
PLAYBOOK = yaml.safe_load(default_playbook_path().read_text())
H200 = FIXTURES / "h200"


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="fuzz-"))


def _dump(path: Path, doc: Any) -> Path:
    if path.suffix == ".json":
        path.write_text(json.dumps(doc, allow_nan=True))
    else:
        path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("runs")
    base, cand = folder / "base.json", folder / "cand.json"
    save_record(dense_run(5.0, n=12), base)
    save_record(sparse_run(3.5, n=12), cand)
    return base, cand


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "b"
    result = invoke([
        "playbook", "run", "--baseline", str(H200 / "trace_dense_T2048.json.gz"), "--candidate", str(H200 / "trace_sparse_mlp_T2048.json.gz"),
        "--fixed", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"), "-o", str(out),
    ])
    assert result.exit_code == 0, result.stderr
    return out


@FUZZ
@given(doc=damaged_document(WORKLOAD), suffix=st.sampled_from([".yaml", ".json"]))
def test_workload(doc: Any, suffix: str) -> None:
    """`lower` checks, prunes and lowers (no timing): every damaged workload is refused or lowered."""
    check_cli(["lower", str(_dump(_folder() / f"w{suffix}", doc))], ok=(0, 2))


@FUZZ
@given(data=damaged_bytes(yaml.safe_dump(WORKLOAD).encode()))
def test_workload_bytes(data: bytes) -> None:
    path = _folder() / "w.yaml"
    path.write_bytes(data)
    check_cli(["lower", str(path)], ok=(0, 2))


@FUZZ
@given(data=st.data())
def test_run_record(runs: tuple[Path, Path], data: st.DataObject) -> None:
    """A damaged run record as the candidate of bisect (and of fallbacks)."""
    doc = data.draw(damaged_document(json.loads(runs[1].read_text())))
    path = _dump(_folder() / "cand.json", doc)
    check_cli(["bisect", str(runs[0]), str(path)], ok=(0, 2))
    check_cli(["fallbacks", str(runs[0]), str(path)], ok=(0, 2))


@FUZZ
@given(doc=damaged_document(POLICY))
def test_policy(runs: tuple[Path, Path], doc: Any) -> None:
    check_cli(["gate", str(runs[0]), str(runs[1]), "--policy", str(_dump(_folder() / "p.yaml", doc))])


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_bundle(bundle: Path, data: st.DataObject) -> None:
    """One damaged record (or a byte-damaged one) in a bundle: `memo` re-renders or refuses it."""
    names = sorted(p.name for p in bundle.glob("*.json"))
    name = data.draw(st.sampled_from(names))
    folder = _folder() / "b"
    shutil.copytree(bundle, folder)
    if data.draw(st.booleans()):
        _dump(folder / name, data.draw(damaged_document(json.loads((bundle / name).read_text()))))
    else:
        (folder / name).write_bytes(data.draw(damaged_bytes((bundle / name).read_bytes())))
    check_cli(["memo", str(folder)], ok=(0, 2))


@FUZZ
@given(data=st.data())
def test_fingerprint(bundle: Path, data: st.DataObject) -> None:
    doc = data.draw(damaged_document(json.loads((bundle / "fingerprint.json").read_text())))
    check_cli(["freeze", "--check", str(_dump(_folder() / "fp.json", doc))])


@pytest.mark.slow
@FUZZ
@given(doc=damaged_document(PLAYBOOK))
def test_playbook(doc: Any) -> None:
    check_cli(["playbook", "show", "--playbook", str(_dump(_folder() / "book.yaml", doc))], ok=(0, 2))
