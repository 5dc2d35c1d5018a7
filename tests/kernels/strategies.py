"""Hypothesis strategies shared by the kernel tests: patterns, shapes, seeded weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

PRECISIONS = ["fp64", "fp32", "fp16", "bf16"]


@dataclass(frozen=True)
class Case:
    """A random weight/activation pair for one pattern."""

    n: int
    m: int
    rows: int
    groups: int
    tokens: int
    seed: int
    zeros: bool

    @property
    def k(self) -> int:
        return self.groups * self.m

    def weight(self, dtype: type[np.floating] = np.float32) -> np.ndarray:
        """Values in +-[1e-3, 10], with some exact zeros and ties when ``zeros``."""
        rng = np.random.default_rng(self.seed)
        mag = 10.0 ** rng.uniform(-3, 1, size=(self.rows, self.k))
        w = mag * rng.choice([-1.0, 1.0], size=mag.shape)
        if self.zeros:
            w[rng.random(w.shape) < 0.3] = 0.0
            w[rng.random(w.shape) < 0.1] = 1.5  # ties
        return w.astype(dtype)

    def x(self, dtype: type[np.floating] = np.float32) -> np.ndarray:
        rng = np.random.default_rng(self.seed + 1)
        return rng.uniform(-4.0, 4.0, size=(self.k, self.tokens)).astype(dtype)


@st.composite
def nm_patterns(draw: st.DrawFn) -> tuple[int, int]:
    """(n, m) with 1 <= n < m <= 16, biased toward the common ones."""
    common = st.sampled_from([(1, 2), (2, 4), (1, 4), (4, 8), (2, 8)])
    m = st.integers(2, 16).flatmap(lambda m: st.tuples(st.integers(1, m - 1), st.just(m)))
    return draw(st.one_of(common, m))


@st.composite
def cases(draw: st.DrawFn, max_rows: int = 24) -> Case:
    n, m = draw(nm_patterns())
    return Case(
        n=n,
        m=m,
        rows=draw(st.integers(1, max_rows)),
        groups=draw(st.integers(1, 6)),
        tokens=draw(st.integers(1, 5)),
        seed=draw(st.integers(0, 2**31)),
        zeros=draw(st.booleans()),
    )
