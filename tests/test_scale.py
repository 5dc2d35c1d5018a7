"""Bisect, classify, gate and the playbook on generated training traces with hundreds of calls per layer.

Sizes are moderate (about 10k-30k events per trace) so the file stays within a
few seconds of CI time; the 200k-event figures are in ``benchmarks/trace_scale.py``
and ``benchmarks/corpus.py``. No timing assertions: these check that the answers
hold at scale (no overflow, no false finding, the planted cause found).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sparsedebug.core.stats import MAX_TEST_SAMPLES
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.sources.detect import load_run
from tests.conftest import invoke
from tests.support.tracegen import TraceSpec, write_trace

BASE = TraceSpec(layers=9, calls=2, iterations=12, streams=2, seed=1)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline, a re-run of it (new seed), a 2:4 candidate with per-call host cost, and a many-call pair."""
    root = tmp_path_factory.mktemp("scale")
    many = TraceSpec(layers=3, calls=60, iterations=11, backward=False, optimizer=False, hidden=512, tokens=512, seed=7)
    specs = {
        "base": BASE,
        "rerun": replace(BASE, seed=2),
        "sparse": replace(BASE, sparse_layers=frozenset({0, 1, 3, 4, 6, 7}), sparse_host_us=400.0, seed=3),
        "many_a": many,
        "many_b": replace(many, kernel_scale=1.3, seed=8),
    }
    paths = {}
    for name, spec in specs.items():
        paths[name] = root / f"{name}.json.gz"
        write_trace(paths[name], spec)
    return paths


def _json(args: list[str], code: int = 0) -> dict[str, object]:
    result = invoke([*args, "--json"])
    assert result.exit_code == code, (result.exit_code, result.stderr, result.exception)
    assert "Traceback" not in result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


@pytest.mark.slow
def test_many_calls_per_layer_bisect_finds_the_slower_kernels(traces: dict[str, Path]) -> None:
    # 660 calls per layer per run: 2 / C(1320, 660) overflowed a float before (issue 14).
    out = _json(["bisect", str(traces["many_a"]), str(traces["many_b"])])
    assert out["first_stage"] == "kernel"
    kernel = next(s for s in out["stages"] if s["stage"] == "kernel")  # type: ignore[attr-defined]
    slower = [f for f in kernel["layers"] if f["kind"] == "slower"]
    assert {f["layer"] for f in slower} >= {"layers.0.mlp.gate_proj", "layers.0.mlp.up_proj", "layers.0.mlp.down_proj"}
    for finding in slower:
        cmp = finding["comparison"]
        assert cmp["n_base"] >= 660 and 1.2 < cmp["ratio"] < 1.4
        assert 0.0 <= cmp["p_value"] <= 1.0


def test_a_rerun_with_new_noise_is_not_a_finding(traces: dict[str, Path]) -> None:
    out = _json(["bisect", str(traces["base"]), str(traces["rerun"])])
    assert out["first_stage"] is None, out["verdict"]
    assert not any(f["regression"] for s in out["stages"] for f in s["layers"])  # type: ignore[attr-defined]


@pytest.mark.slow
def test_training_pair_with_host_cost_is_a_schedule_divergence_classed_scheduling(traces: dict[str, Path]) -> None:
    base, cand = str(traces["base"]), str(traces["sparse"])
    assert _json(["bisect", base, cand])["first_stage"] == "schedule"
    assert _json(["classify", cand, "--baseline", base])["winner"] == "scheduling"
    gate = invoke(["gate", base, cand])
    assert gate.exit_code in (0, 1) and "Traceback" not in gate.stderr
    fallbacks = invoke(["fallbacks", base, cand])
    assert fallbacks.exit_code == 0, fallbacks.stderr


@pytest.mark.slow
def test_playbook_runs_end_to_end_on_generated_traces(traces: dict[str, Path], tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    out = _json(["playbook", "run", "--baseline", str(traces["base"]), "--candidate", str(traces["sparse"]), "-o", str(bundle)])
    assert out["kind"] == "bundle"
    memo = (bundle / "memo.md").read_text(encoding="utf-8")
    assert "schedule" in memo and "scheduling" in memo
    assert json.loads((bundle / "bisect.json").read_text(encoding="utf-8"))["first_stage"] == "schedule"


@pytest.mark.slow
def test_bisect_past_the_sample_cap_subsamples_and_says_so(traces: dict[str, Path]) -> None:
    # Inflate one layer to more samples than the cap on each side (as a long trace would give).
    base, cand = load_run(traces["many_a"]), load_run(traces["many_b"])
    rng = np.random.default_rng(0)
    name = "layers.0.mlp.up_proj"

    def inflate(run: object, scale: float) -> object:
        layers = [
            layer.model_copy(update={"samples_ms": list(rng.lognormal(np.log(0.02 * scale), 0.05, MAX_TEST_SAMPLES + 2_500))}) if layer.name == name else layer
            for layer in run.kernel.layers  # type: ignore[attr-defined]
        ]
        return run.model_copy(update={"kernel": run.kernel.model_copy(update={"layers": layers})})  # type: ignore[attr-defined]

    result = bisect_runs(inflate(base, 1.0), inflate(cand, 1.5))  # type: ignore[arg-type]
    kernel = result.stage("kernel")
    finding = next(f for f in kernel.layers if f.layer == name)
    assert finding.comparison is not None
    assert finding.comparison.subsampled_from == [MAX_TEST_SAMPLES + 2_500] * 2
    assert finding.comparison.n_base == MAX_TEST_SAMPLES and finding.kind == "slower"
    assert finding.comparison.subsampled_from is not None
