"""The interpolation surface: exact at measured points, bracketed between them, roofline-shaped outside."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.sources.target.surface import Point, Roofline, Surface, fit_roofline

SHAPES = [(1024, 1024), (4096, 1024), (4096, 4096)]
TOKENS = [1, 16, 256, 2048]
TRUE = Roofline(floor_ms=0.02, bytes_per_ms=3e9, flops_per_ms=6e11, itemsize=2)


def _points(noise: dict[tuple[int, int, int], float] | None = None) -> list[Point]:
    noise = noise or {}
    return [
        Point(o, k, t, TRUE.at(o, k, t) * noise.get((o, k, t), 1.0), f"p{o}x{k}@{t}") for o, k in SHAPES for t in TOKENS
    ]


def test_roofline_fit_recovers_a_synthetic_roofline() -> None:
    fit = fit_roofline(_points(), itemsize=2)
    for o, k in SHAPES:
        for t in (*TOKENS, 8192):
            assert fit.at(o, k, t) == pytest.approx(TRUE.at(o, k, t), rel=1e-3)


factors = st.floats(min_value=0.7, max_value=1.4)


@settings(max_examples=30, deadline=None)
@given(st.lists(factors, min_size=len(SHAPES) * len(TOKENS), max_size=len(SHAPES) * len(TOKENS)))
def test_exact_at_points_and_bracketed_between_them(values: list[float]) -> None:
    keys = [(o, k, t) for o, k in SHAPES for t in TOKENS]
    surface = Surface(_points(dict(zip(keys, values, strict=True))))
    for (o, k, t), point in zip(keys, surface.points, strict=True):
        est = surface.at(o, k, t)
        assert est.exact and not est.extrapolated and est.value == pytest.approx(point.value, rel=1e-9)
        assert est.labels == (point.label,)
    for o, k in SHAPES:
        for lo, hi in zip(TOKENS, TOKENS[1:], strict=False):
            mid = int(math.sqrt(lo * hi))
            est = surface.at(o, k, mid)
            assert not est.exact and not est.extrapolated and len(est.labels) == 2
            # the residual over the roofline lies between the two neighbours' residuals
            assert surface.roofline is not None
            res = [math.log(surface.at(o, k, t).value / surface.roofline.at(o, k, t)) for t in (lo, hi)]
            mine = math.log(est.value / surface.roofline.at(o, k, mid))
            assert min(res) - 1e-9 <= mine <= max(res) + 1e-9


def test_outside_the_measured_range_is_extrapolated_and_follows_the_roofline() -> None:
    surface = Surface(_points())
    beyond = surface.at(4096, 4096, 65536)
    assert beyond.extrapolated and beyond.value == pytest.approx(TRUE.at(4096, 4096, 65536), rel=1e-3)
    smaller = surface.at(256, 256, 16)
    assert smaller.extrapolated
    between = surface.at(2048, 4096, 256)
    assert not between.extrapolated and not between.exact and len(between.labels) >= 2


def test_a_ratio_surface_is_held_constant_outside() -> None:
    ratio = Surface([Point(11008, 4096, 2048, 0.68, "a"), Point(11008, 4096, 8192, 0.72, "b")], roofline=False)
    assert ratio.roofline is None
    assert ratio.at(11008, 4096, 16).value == pytest.approx(0.68) and ratio.at(11008, 4096, 16).extrapolated
    assert ratio.at(11008, 4096, 4096).value == pytest.approx(math.sqrt(0.68 * 0.72))  # midway in log
    assert ratio.at(512, 512, 2048).extrapolated and ratio.at(512, 512, 2048).value == pytest.approx(0.68)
