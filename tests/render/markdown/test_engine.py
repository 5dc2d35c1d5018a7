"""The one-line answer to "were the sparse kernels used?" for TensorRT engines."""

from __future__ import annotations

from pathlib import Path

from sparsedebug.locate.lower import sparse_use
from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.engine import sparse_kernels_line
from sparsedebug.sources.importers.tensorrt_engine import import_engine
from tests.support.engines import build_engine_pair
from tests.support.synth import L, make_run


def _line(base: RunRecord, cand: RunRecord) -> str | None:
    return sparse_kernels_line(base, cand, sparse_use(base), sparse_use(cand))


def test_a_build_with_sparsity_disabled_names_the_flag(tmp_path: Path) -> None:
    pair = build_engine_pair(tmp_path, sparse_layers=2, picked=1, inferences=5)
    dense = import_engine(pair.dense)
    line = _line(dense, dense)
    assert line is not None and line.startswith("- **Sparse kernels used**: no: `dense` was built with sparsity disabled")
    assert "trtexec --sparsity=enable or BuilderFlag.SPARSE_WEIGHTS" in line and "(+0%)" not in line


def test_the_pair_line_names_not_picked_layers_and_the_change(tmp_path: Path) -> None:
    pair = build_engine_pair(tmp_path, sparse_layers=3, picked=2, inferences=5, speedup=0.5)
    line = _line(import_engine(pair.dense), import_engine(pair.sparse))
    assert line is not None and "ran a sparse tactic on 2 of 3 layers with 2:4 weights" in line
    assert f"`{pair.not_picked[0]}`" in line and line.count("(-50%)") == 2


def test_runs_without_engine_facts_have_no_line() -> None:
    run = make_run("r", [L("fc")], 1.0)
    assert _line(run, run) is None
