"""The interleaved-rounds timing harness.

Variants are timed round-robin in one process (A B C, then B C A, then C A B
...), so slow drift of the machine (clock changes, other processes, thermal
state) hits every variant alike, and rotating the start of each round keeps any
one variant from always running first (after the caller's own work) or last. Raw samples are returned; summarise
them with medians and tails (:mod:`sparsedebug.core.stats`), never a mean.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from sparsedebug.core.errors import UserError


def interleaved(variants: Mapping[str, Callable[[], object]], rounds: int, warmup: int = 1) -> dict[str, list[float]]:
    """Time each variant once per round for ``rounds`` rounds; samples in ms.

    Round ``r`` starts at variant ``r mod len(variants)`` and goes on in the given
    order, so every variant takes every position equally often.

    ``warmup`` untimed rounds run first (caches, lazy allocation, BLAS thread
    start-up). Returns ``{name: [ms per round]}`` with ``rounds`` samples each,
    measured with ``time.perf_counter``.
    """
    if rounds < 1:
        raise UserError(f"rounds={rounds}: need at least 1 timed round")
    if warmup < 0:
        raise UserError(f"warmup={warmup}: cannot be negative")
    if not variants:
        raise UserError("nothing to time: no variants given")
    items = list(variants.items())
    for _ in range(warmup):
        for _, func in items:
            func()
    samples: dict[str, list[float]] = {name: [] for name, _ in items}
    clock = time.perf_counter
    for round_index in range(rounds):
        shift = round_index % len(items)
        for name, func in items[shift:] + items[:shift]:
            start = clock()
            func()
            samples[name].append((clock() - start) * 1000.0)
    return samples
