"""The replay's cost estimate against what replays really hold at their peak (tracemalloc)."""

from __future__ import annotations

import tracemalloc

import pytest

from sparsedebug.sources.replay.cost import replay_cost
from sparsedebug.sources.replay.replay import replay
from sparsedebug.sources.workload.schema import Workload
from tests.support.builders import llama_stack, mlp_chain

VARIANTS = [
    mlp_chain("narrow-many-tokens", [64, 256, 64], sequence=1024, sparsity="2:4", repeats=3, warmup=0),
    mlp_chain("wide-few-tokens", [512, 1024, 512], sequence=8, sparsity="32:2:4", repeats=3, warmup=0, precision="fp16"),
    mlp_chain("deep", [128] * 5, sequence=64, repeats=3, warmup=0, pruning={"method": "wanda"}, sparsity="2:4"),
    llama_stack("attn-long", blocks=1, hidden=32, ffn=64, heads=4, sequence=384, repeats=3, warmup=0, sparsity="2:4"),
    llama_stack("attn-batch", blocks=1, hidden=64, ffn=128, heads=8, kv_heads=2, batch=4, sequence=32, repeats=3, warmup=0),
]


@pytest.mark.parametrize("workload", VARIANTS, ids=lambda w: w.name)
def test_estimate_bounds_the_measured_peak(workload: Workload) -> None:
    cost = replay_cost(workload)
    tracemalloc.start()
    try:
        replay(workload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= cost.bytes, (workload.name, peak, cost.bytes)
    assert cost.bytes <= 6 * peak, (workload.name, peak, cost.bytes)  # an upper bound, not a wild one


def test_work_grows_with_repeats_tokens_and_widths() -> None:
    small = mlp_chain("s", [64, 64], sequence=16)
    assert replay_cost(small, 100).flops > replay_cost(small, 10).flops
    assert replay_cost(mlp_chain("t", [64, 64], sequence=32)).flops == pytest.approx(2 * replay_cost(small).flops)
    assert replay_cost(mlp_chain("w", [128, 64], sequence=16)).bytes > replay_cost(small).bytes
