"""Layer identity without annotations: an annotated pair and its stripped copy, with the candidate's ops reordered,
reach the same verdicts (issue 42: layers matched by position once renamed a reordered op into an 'added' layer).

Built with ``tests/support/tracegen``: a dense baseline; a candidate with two declared-sparse MLP projections, one
projection moved to an fp32 GEMM (an unintended lowering change) and every GELU run before its linear instead of
after it: the same ops, in another order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import invoke
from tests.support.tracegen import TraceSpec, generate, layer_name, move_to_fp32, reorder_host_ops, strip, write_doc

SPEC: dict[str, Any] = {"layers": 6, "iterations": 3, "backward": False, "optimizer": False, "nccl": False, "attention": "math"}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("identity")
    base, _ = generate(TraceSpec(**SPEC))
    cand, _ = generate(TraceSpec(**SPEC, sparse_layers=frozenset({1, 4}), slow_layers=frozenset({2}), slow_factor=3.0, seed=1))
    cand = reorder_host_ops(move_to_fp32(cand, layer_name(2)), "aten::linear", "aten::gelu")
    docs = {"base": base, "cand": cand, "base_stripped": strip(base, "no_annotations"), "cand_stripped": strip(cand, "no_annotations")}
    paths = {}
    for name, doc in docs.items():
        paths[name] = folder / f"{name}.json"
        write_doc(paths[name], doc)
    return paths


def _bisect(base: Path, cand: Path) -> dict[str, Any]:
    result = invoke(["bisect", str(base), str(cand), "--json"])
    assert result.exit_code == 0, (result.stderr, result.exception)
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


def test_the_reorder_is_real(traces: dict[str, Path]) -> None:
    def order(path: Path) -> list[str]:
        doc = json.loads(path.read_text())
        ops = sorted((e for e in doc["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] in ("aten::linear", "aten::gelu")),
                     key=lambda e: e["ts"])
        return [e["name"] for e in ops[:2]]

    assert order(traces["base_stripped"]) == ["aten::linear", "aten::gelu"]
    assert order(traces["cand_stripped"]) == ["aten::gelu", "aten::linear"]


def test_stripped_and_reordered_pair_reaches_the_annotated_pairs_verdicts(traces: dict[str, Path]) -> None:
    annotated = _bisect(traces["base"], traces["cand"])
    stripped = _bisect(traces["base_stripped"], traces["cand_stripped"])
    assert annotated["first_stage"] == stripped["first_stage"] is not None
    status = {s["stage"]: s["status"] for s in stripped["stages"]}
    assert status["graph"] == {s["stage"]: s["status"] for s in annotated["stages"]}["graph"] == "expected"
    graph = next(s for s in stripped["stages"] if s["stage"] == "graph")
    assert not [f for f in graph.get("findings", []) if f.get("kind") in ("added", "removed")], graph
    checks = [invoke(["fallbacks", str(traces[b]), str(traces[c]), "--check"]) for b, c in (("base", "cand"), ("base_stripped", "cand_stripped"))]
    assert [r.exit_code for r in checks] == [1, 1], [(r.exit_code, r.stdout[-600:]) for r in checks]
    for result in checks:
        assert "UNINTENDED" in result.stdout and "fp32_gemm" in result.stdout
