"""Intervals of the target clock and the 2:4 kernel model: exact on synthetic data, monotone where they must be."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.sources.target.interval import Z90, Distance, Spread, distance, per_decade_from, repeat_sigma
from sparsedebug.sources.target.sparse import SparseKernelModel, SparsePoint, Tile, merge_points, sparse_bytes

TILE = Tile(128, 256, 64, 132, "synthetic tile")
NS_PER_K = 8e-6  # ms per reduction element per wave, the synthetic truth


def test_distance_splits_tokens_and_shape_and_finds_the_nearest() -> None:
    measured = [(4096, 4096, 2048), (11008, 4096, 8192)]
    here = distance((4096, 4096, 2048), measured)
    assert here.total == 0.0 and here.nearest == (4096, 4096, 2048)
    tokens = distance((4096, 4096, 20), measured)
    assert tokens.tokens == pytest.approx(math.log10(2048 / 20)) and tokens.shape == 0.0
    shape = distance((40960, 4096, 2048), measured[:1])
    assert shape.tokens == 0.0 and shape.shape == pytest.approx(1.0)
    assert math.isinf(distance((1, 1, 1), []).total)


@settings(max_examples=60, deadline=None)
@given(
    sigma=st.floats(0.0, 0.5),
    per_tokens=st.floats(0.0, 1.0),
    per_shape=st.floats(0.0, 1.0),
    near=st.floats(0.0, 3.0),
    extra=st.floats(0.0, 3.0),
)
def test_intervals_contain_the_value_and_widen_with_distance(sigma: float, per_tokens: float, per_shape: float, near: float, extra: float) -> None:
    spread = Spread(sigma, per_tokens, per_shape)
    lo, hi = spread.bounds(2.0, Distance(near, near / 2, None))
    lo2, hi2 = spread.bounds(2.0, Distance(near + extra, (near + extra) / 2, None))
    assert lo <= 2.0 <= hi and lo2 <= lo and hi2 >= hi
    assert math.log(hi / 2.0) == pytest.approx(Z90 * spread.at(Distance(near, near / 2, None)), abs=1e-9)


def test_per_decade_recovers_the_growth_of_held_out_errors() -> None:
    sigma, per_tokens, per_shape = 0.05, 0.2, 0.5
    errors = []
    for dt, ds in [(0.5, 0.0), (1.0, 0.0), (2.0, 0.0), (0.0, 0.3), (0.0, 0.6), (1.0, 0.4)]:
        d = Distance(dt, ds, None)
        errors.append((Spread(sigma, per_tokens, per_shape).at(d), d, sigma))
    assert per_decade_from(errors) == pytest.approx((per_tokens, per_shape), rel=1e-6)
    assert per_decade_from([(0.0, Distance(1.0, 0.0, None), 0.1)]) == (0.0, 0.0)  # never below zero
    assert per_decade_from([]) == (0.0, 0.0)


def test_repeat_sigma_pools_only_repeated_points() -> None:
    assert repeat_sigma([[1.0], [2.0, 2.0]]) == 0.0
    assert repeat_sigma([[1.0, math.e]]) == pytest.approx(math.sqrt(0.5))


def _truth(out: int, k: int, tokens: int) -> float:
    tiles = math.ceil(out / TILE.m) * math.ceil(tokens / TILE.n)
    return max(1.0, tiles / TILE.ctas) * k * NS_PER_K


def test_the_kernel_model_recovers_a_synthetic_rate_and_keeps_one_wave_minimum() -> None:
    points = [SparsePoint(o, k, t, "float16", _truth(o, k, t), f"p{o}x{k}@{t}") for o, k, t in [(11008, 4096, 2048), (4096, 11008, 8192)]]
    model = SparseKernelModel(points, TILE, bytes_per_ms=3.3e9)
    assert model.ms_per_k == pytest.approx(NS_PER_K) and model.sigma() == pytest.approx(0.0, abs=1e-12)
    assert model.at(11008, 4096, 1).ms == model.at(11008, 4096, 256).ms  # one wave of tiles, however few tokens
    assert model.at(11008, 4096, 16).efficiency == pytest.approx(11008 * 16 / (132 * 128 * 256))
    tiny = model.at(64, 64, 1)
    assert tiny.memory_bound is False and tiny.ms == pytest.approx(64 * NS_PER_K)
    wide = model.at(64, 1_000_000, 1)  # a long reduction over one tile: the memory floor can bind
    assert wide.ms >= sparse_bytes(64, 1_000_000, 1, 2) / 3.3e9


@settings(max_examples=60, deadline=None)
@given(out=st.integers(16, 65536), k=st.integers(16, 65536), tokens=st.integers(1, 65536), more=st.integers(0, 65536))
def test_kernel_time_never_falls_with_more_tokens(out: int, k: int, tokens: int, more: int) -> None:
    model = SparseKernelModel([SparsePoint(4096, 4096, 2048, "float16", _truth(4096, 4096, 2048), "p")], TILE, bytes_per_ms=3.3e9)
    assert model.at(out, k, tokens + more).ms >= model.at(out, k, tokens).ms
    assert 0.0 < model.at(out, k, tokens).efficiency <= 1.0


def test_merge_points_takes_the_median_of_repeats() -> None:
    raw = [SparsePoint(1, 2, 3, "float16", v, f"r{v}") for v in (1.0, 2.0, 10.0)]
    (merged,) = merge_points(raw)
    assert merged.ms == 2.0 and merged.label == "r1.0; r2.0; r10.0"
