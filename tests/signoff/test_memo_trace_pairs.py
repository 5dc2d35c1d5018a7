"""What the memo of a trace pair tells a lead that the readers of round 4 found contradicted:

- a CUDA-graph fix changes the launch mode, so the compatibility risk names that change (it read "no knob changed");
- a CUDA-graph trace names kernels, not layers, so its count is not set beside the candidate's count of layers;
- a fix that states the time it removes also projects the latency it expects (it read "not projected");
- a p-value says how many samples it rests on (a reader doubted p=7.4e-07 on "3 iterations": it is 12 calls a side).
"""

from __future__ import annotations

import json
from pathlib import Path

from sparsedebug.records.memo import Memo
from tests.conftest import FIXTURES, invoke

H200 = FIXTURES / "h200"


def _walk(tmp: Path, *args: str) -> tuple[str, Memo]:
    result = invoke(["playbook", "run", *args, "--no-reduce", "-o", str(tmp / "b")])
    assert result.exit_code == 0, result.stdout + result.stderr
    return (tmp / "b" / "memo.md").read_text(), Memo.model_validate_json((tmp / "b" / "memo.json").read_text())


def test_a_cuda_graph_fixed_trace_names_its_launch_change_and_counts_no_layers(tmp_path: Path) -> None:
    md, memo = _walk(tmp_path, "--baseline", str(H200 / "trace_dense_T2048.json.gz"),
                     "--candidate", str(H200 / "trace_sparse_mlp_T2048.json.gz"),
                     "--fixed", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"))
    compat = next(r for r in memo.action.risks if r.code == "compatibility")
    assert compat.items == ["launch=eager->cuda_graph"]
    assert "the fixed run changes `launch=eager->cuda_graph`" in md and "no knob" not in md
    fixed_cell = next(c for row in memo.results for c in row.cells if c.code == "fallback" and c.terms["role"] == "fixed")
    assert fixed_cell.terms["state"] == "kernel_named" and fixed_cell.figure("meant_sparse") is None
    assert "not counted per layer: a CUDA-graph trace names kernels" in md
    assert "0 of 2" not in md  # the kernel count is no longer read as 2 of the model's layers
    assert memo.signoff.artifact.figure("meant_sparse") is None and "rows (kernel names: a CUDA-graph trace)" in md
    bisect = json.loads((tmp_path / "b" / "bisect.json").read_text())
    calls = memo.symptom.first_stage.figure("effect_samples", "candidate")
    assert calls is not None and calls.value == bisect["effect"]["n_cand"] and calls.basis == "per_call"
    assert f" over {bisect['effect']['n_cand']} calls a side within 3 forwards, so not independent)" in md


def test_a_fix_that_states_what_it_removes_projects_the_latency_without_a_re_run(tmp_path: Path) -> None:
    md, memo = _walk(tmp_path, "--baseline", str(H200 / "trace_dense_T2048.json.gz"),
                     "--candidate", str(FIXTURES / "traces" / "h200_dense_sdpa_efficient_noncontig.json.gz"))
    removes = next(f for f in memo.action.change.figures if f.quantity == "removes_ms")
    expected = memo.action.expected
    assert expected.code == "projected"
    before, after = expected.figure("latency_p50_ms", "candidate"), expected.figure("latency_p50_ms", "expected")
    assert before is not None and after is not None
    assert abs((before.value - after.value) - removes.value) < 1e-9
    assert "not projected" not in md and "removing the changed layers' kernel-time change" in md
    assert memo.action.measured is None  # no re-run: nothing measured is claimed
