"""Memo and report name the clock of every latency they quote; the report lists sparsity that costs time."""

from __future__ import annotations

import pytest

from sparsedebug.records.run import RunRecord
from sparsedebug.render.clocks import label_latencies, measured_clock, quotes_unlabelled_latency
from sparsedebug.render.markdown.deployment import render_report
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.signoff.report import run_figures
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.playbook import load_playbook
from sparsedebug.sources.replay.replay import replay
from tests.support.builders import llama_stack
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run


def _replayed(sparsity: str, name: str) -> RunRecord:
    workload = llama_stack(
        name, blocks=1, hidden=64, ffn=96, heads=4, sequence=16, repeats=3, warmup=1, sparsity=sparsity,
        backend="h200-cusparselt", precision="fp16",
    )
    return replay(workload)


@pytest.fixture(scope="module")
def bundle() -> LoadedBundle:
    return make_bundle(_replayed("dense", "dense"), _replayed("2:4", "sparse"))


def test_every_latency_in_the_memo_names_its_clock(bundle: LoadedBundle) -> None:
    text = render_memo_detail(bundle, load_playbook())
    unlabelled = [line for line in text.splitlines() if quotes_unlabelled_latency(line)]
    assert unlabelled == []
    assert "this machine, measured" in text
    assert "On the target clock: h200-cusparselt (NVIDIA H200 SXM), eager, projected" in text
    assert "7 sparse layer(s) projected slower than dense there" in text
    # the equal-latency budget is on the target clock (a sentence of its own when dense is already as fast there)
    assert "target clock, projected)" in text and ("has cosine" in text or "nothing to narrow" in text)
    assert "cross-check on this machine" in text


def test_report_labels_clocks_and_lists_sparsity_that_costs_time(bundle: LoadedBundle) -> None:
    text = render_report(bundle)
    assert [line for line in text.splitlines() if quotes_unlabelled_latency(line)] == []
    assert "| kernel p50 ms (this machine, measured) | dense p50 ms (this machine, measured) | target ms (projected) |" in text
    assert "| candidate (target) | `sparse` |" in text
    section = text.split("## Sparsity that costs time on the target (candidate)", 1)[1].split("\n## ", 1)[0]
    assert "7 sparse layer(s) projected slower than dense (lowering flag `slower_than_dense`)" in section
    flagged = [line for line in section.splitlines() if line.startswith("  - `layers.0.")]
    assert len(flagged) == 7 and all("sparse " in line and " vs dense " in line for line in flagged)


def test_runs_without_a_target_say_so_and_traces_are_labelled_traced() -> None:
    text = render_report(make_bundle(dense_run(5.0), sparse_run(3.5)))
    assert "no target clock in this run" in text
    traced = sparse_run().model_copy(update={"source": sparse_run().source.model_copy(update={"kind": "torch_trace"})})
    traced.lower.backend = "cuda:NVIDIA H200"
    assert measured_clock(run_figures("candidate", traced)) == "cuda:NVIDIA H200, traced"


def test_label_latencies_only_touches_unlabelled_prose() -> None:
    lines = ["p50 1.2 ms", "p50 1.2 ms (this machine, measured)", "| 1.2 ms |", "no latency here", "1796.2 us each"]
    assert label_latencies(lines, "X") == ["p50 1.2 ms (X)", lines[1], lines[2], lines[3], "1796.2 us each (X)"]
