"""Survivor choice and SparseGPT: the current kernels against the former ones, side by side.

Interleaved rounds in one process (``core.timing.interleaved``), medians; ratios are former
ms / current ms (above 1: the current kernel is faster). Each pair is first checked to give
the same result (identical masks). One BLAS thread, as the quality study runs.

``nm_mask 2:4``      per-row 2:4 mask of a 4096x4096 weight: comparison network vs stable argsort
``nm_mask 4:8``      per-row 4:8 mask, same weight
``vnm_mask 64:2:4``  blocked mask (block sums, then the choice)
``sparsegpt solve``  SparseGPT's column walk on a 384x1536 weight (MiniLM's FFN down projection), 2:4,
                     given the factor of the 1536x1536 inverse Hessian: group-wise propagation on W^T
                     vs the column-by-column update
``sparsegpt total``  the same with the factorisation (one Cholesky and one triangular inverse, shared
                     and unchanged: the floor both walks stand on)

Usage: python benchmarks/prune_kernels.py [ROUNDS]
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.masks import Pattern, choice_to_mask, nm_mask, vnm_mask
from sparsedebug.kernels.pruning import _inverse_hessian_factor, sparsegpt_prune, sparsegpt_solve
from tests.support.reference_kernels import argsort_group_choice, columnwise_solve, columnwise_sparsegpt


def _former_nm(weight: np.ndarray, n: int, m: int) -> np.ndarray:
    rows, k = weight.shape
    return choice_to_mask(argsort_group_choice(np.abs(weight).reshape(rows, k // m, m), n), m, rows)


def _former_vnm(weight: np.ndarray, n: int, m: int, block: int) -> np.ndarray:
    rows, k = weight.shape
    sums = np.add.reduceat(np.abs(weight).astype(np.float64), np.arange(0, rows, block), axis=0)
    return choice_to_mask(argsort_group_choice(sums.reshape(len(sums), k // m, m), n), m, rows, block=block)


def pairs() -> dict[str, tuple[Callable[[], np.ndarray], Callable[[], np.ndarray]]]:
    """Name -> (current, former), on seeded inputs."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((4096, 4096)).astype(np.float32)
    small = rng.standard_normal((384, 1536))
    x = rng.standard_normal((4096, 1536)) @ (np.eye(1536) + 0.05 * rng.standard_normal((1536, 1536)))
    gram = x.T @ x
    p24 = Pattern(n=2, m=4)
    upper, dead = _inverse_hessian_factor(gram, 0.01)
    return {
        "nm_mask 2:4": (lambda: nm_mask(weight, 2, 4), lambda: _former_nm(weight, 2, 4)),
        "nm_mask 4:8": (lambda: nm_mask(weight, 4, 8), lambda: _former_nm(weight, 4, 8)),
        "vnm_mask 64:2:4": (lambda: vnm_mask(weight, 2, 4, 64), lambda: _former_vnm(weight, 2, 4, 64)),
        "sparsegpt solve": (lambda: sparsegpt_solve(small, p24, upper, dead), lambda: columnwise_solve(small, p24, upper, dead)),
        "sparsegpt total": (lambda: sparsegpt_prune(small, p24, gram), lambda: columnwise_sparsegpt(small, p24, gram)),
    }


def main() -> None:
    """Check each pair agrees, time them interleaved, print medians and ratios."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"{'kernel':<18} {'current ms':>11} {'former ms':>10} {'speedup':>8}  same result")
    with threadpool_limits(1):
        for name, (current, former) in pairs().items():
            a, b = current(), former()
            same = bool(np.array_equal(a != 0, b != 0)) if name.startswith("sparsegpt") else bool(np.array_equal(a, b))
            samples = interleaved({"current": current, "former": former}, rounds)
            now, before = median(samples["current"]), median(samples["former"])
            print(f"{name:<18} {now:11.2f} {before:10.2f} {before / now:7.2f}x  {'yes' if same else 'NO'}")
    print(f"{rounds} interleaved rounds, medians, 1 BLAS thread")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
