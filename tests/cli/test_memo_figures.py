"""Figures that say what they measure, on the shared eager H200 pair and on generated pairs of its shape (more
iterations, more layers): the host wait per iteration and within the forward, the bisect's effect size named as one,
one count per set of layers, no placeholder, each run's tags from its own trace beside the analysing machine's, and
no mechanism repeated; no claim withheld on the shared fixture."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from sparsedebug.records.memo import Memo
from tests.conftest import invoke
from tests.support.tracegen import TraceSpec, write_trace

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "h200"


def _walk(base: Path, cand: Path, out: Path) -> tuple[str, str, Memo, dict[str, object]]:
    result = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "--no-reduce", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    memo = Memo.model_validate_json((out / "memo.json").read_text())
    run = json.loads((out / "candidate.run.json").read_text())
    return (out / "memo.md").read_text(), (out / "report.md").read_text(), memo, run


def _generated(tmp_path: Path, iterations: int, layers: int) -> tuple[Path, Path]:
    """An eager pair like the shared one: two of every three linears sparse, each with host time per call."""
    base = TraceSpec(layers=layers, iterations=iterations, backward=False, optimizer=False, nccl=False, streams=1, name="dense")
    cand = replace(base, sparse_layers=frozenset(i for i in range(layers) if i % 3 != 2), sparse_host_us=400.0, seed=1, name="sparse")
    write_trace(tmp_path / "base.json.gz", base)
    write_trace(tmp_path / "cand.json.gz", cand)
    return tmp_path / "base.json.gz", tmp_path / "cand.json.gz"


def _line(text: str, field: str) -> str:
    """A memo field: its line and the lines nested under it."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"- **{field}**"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return "\n".join(lines[start:end])


def _check(memo_md: str, report_md: str, memo: Memo, run: dict[str, object]) -> None:
    schedule = run["schedule"]
    assert isinstance(schedule, dict)
    p50 = float(re.search(r"p50 [\d.]+ ms baseline, ([\d.]+) ms candidate", memo_md).group(1))  # type: ignore[union-attr]
    # 1. the wait on the host per iteration, within the forward; never the sum over the iterations
    # (the memo states the host-idle change once, as the scheduling mechanism's share; a wait it prints is per iteration)
    wait = re.search(r"the device waits on the host ([\d.]+) ms per iteration", memo_md)
    per_iteration = schedule["host_wait_ms"] / len(schedule["span_samples_ms"])
    if wait is not None:
        assert float(wait.group(1)) == pytest.approx(per_iteration, abs=6e-4) and float(wait.group(1)) <= p50
    assert f"{schedule['host_wait_ms']:.3f}" not in memo_md + report_md
    # 2. the bisect's effect is named by what it measures: a layer group's per-call ratio is no latency ratio
    stage = _line(memo_md, "First failing layer or stage")
    if "largest layer effect" in stage:
        assert "latency ratio" not in stage
        assert re.search(r"largest layer effect: (GPU idle before each call plus its kernel time|kernel time per call), ratio [\d.]+ on `[^`]+`", stage)
    # 3. one count per set of layers: the memo's count of the first stage's layers is the report's
    counted = re.search(r"\((\d+) layers in all\)", stage) or re.search(r" on (\d+) layers?(?::|$)", stage, re.M)
    waits_before = re.search(r"the device waits before (\d+) layer\(s\)", report_md)
    if counted is not None and waits_before is not None:
        assert counted.group(1) == waits_before.group(1)
    # 4. no template placeholder in any text
    assert "{i}" not in memo_md and "{i}" not in report_md
    # 5. each run's tags from its own trace; the analysing machine's labelled as such, never the run's
    tags = _line(memo_md, "Build and runtime tags")
    run_part, machine_part = tags.split("analysing machine (not the runs')")
    assert re.search(r"candidate (and baseline )?runs? \(tags from a PyTorch trace\): device `NVIDIA H200`", run_part)
    assert "CUDA runtime" in run_part
    assert "python" not in run_part and "gpu `none`" not in run_part and "python `CPython" in machine_part
    # 6. no repeated item
    named = re.search(r"nothing in these inputs confirms (.+?) beyond the timings", _line(memo_md, "Missing evidence"))
    missing = re.split(r", | and ", named.group(1)) if named else []
    assert missing and len(missing) == len(set(missing))
    # no claim withheld on an honest pair
    assert [c.withheld for c in memo.claims() if c.withheld] == []


def test_the_shared_eager_pair_states_what_each_figure_measures(tmp_path: Path) -> None:
    memo_md, report_md, memo, run = _walk(H200 / "trace_dense_T2048.json.gz", H200 / "trace_sparse_mlp_T2048.json.gz", tmp_path / "b")
    _check(memo_md, report_md, memo, run)
    stage = _line(memo_md, "First failing layer or stage")
    assert "`layers.[0-3].mlp.gate_proj`" in stage and re.search(r" on 16 layers:", stage)
    # one host-idle figure per meaning: the mechanism's share of the change, and the projection says what it removes
    assert "the device waits on the host" not in memo_md and "6.902" not in memo_md
    assert "scheduling**, which carries 6.940 ms of the +6.075 ms change" in memo_md
    assert "less its GPU idle beyond the baseline's (median span minus busy)" in memo_md


@pytest.mark.parametrize(("iterations", "layers"), [(4, 36), (5, 48), (8, 24)])
def test_a_generated_pair_of_its_shape_states_what_each_figure_measures(tmp_path: Path, iterations: int, layers: int) -> None:
    _check(*_walk(*_generated(tmp_path, iterations, layers), tmp_path / "b"))


TRACES = H200.parent / "traces"


@pytest.mark.parametrize(("base", "cand", "extra"), [
    (H200 / "trace_dense_T2048_cudagraph.json.gz", H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz", ["--smi", str(H200 / "nvidia_smi_short.csv")]),
    (TRACES / "h200_dense_unannotated.json.gz", TRACES / "h200_sparse_mlp_unannotated.json.gz", []),
    (TRACES / "h200_dense_sdpa_math_fp32.json.gz", TRACES / "h200_dense_sdpa_efficient_noncontig.json.gz", []),
])
def test_no_claim_is_withheld_on_a_shared_pair(tmp_path: Path, base: Path, cand: Path, extra: list[str]) -> None:
    result = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), *extra, "--no-reduce", "-o", str(tmp_path / "b")])
    assert result.exit_code == 0, result.stderr
    memo = Memo.model_validate_json((tmp_path / "b" / "memo.json").read_text())
    assert [(c.kind, c.withheld) for c in memo.claims() if c.withheld] == []
    text = (tmp_path / "b" / "memo.md").read_text() + (tmp_path / "b" / "report.md").read_text()
    assert "{i}" not in text and "withheld" not in text
    assert "analysing machine (not the runs')" in text and "device `NVIDIA H200`" in text
