"""Block size sweep for the blocked V:N:M kernel: speed versus pruning error.

For each block size V, times dense BLAS, the half-K limit and the blocked kernel
interleaved in one process (medians), and reports how much of the weight's
energy the V:N:M mask drops compared with per-row N:M (the quality side of the
trade). Usage::

    python benchmarks/kernel_block_sweep.py [--shape 4096x4096] [--tokens 128] \
        [--pattern 2:4] [--blocks 16,64,256,1024,4096] [--rounds 7]
"""

from __future__ import annotations

import argparse

import numpy as np

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.bench import blas_description, parse_shape, parse_tokens
from sparsedebug.kernels.masks import nm_mask, parse_pattern
from sparsedebug.kernels.vnm import VNMWeight

LIMIT_SLACK = 1.05
"""A blocked kernel more than this much faster than the half-K limit shows that measurement is no limit there."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4096x4096")
    parser.add_argument("--tokens", default="128")
    parser.add_argument("--pattern", default="2:4")
    parser.add_argument("--blocks", default="16,64,256,1024,4096")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows, k = parse_shape(args.shape)
    pattern = parse_pattern(args.pattern)
    blocks = parse_tokens(args.blocks)
    rng = np.random.default_rng(args.seed)
    weight = rng.standard_normal((rows, k), dtype=np.float32)
    energy = float(np.square(weight, dtype=np.float64).sum())
    per_row_kept = float(np.square(weight[nm_mask(weight, pattern.n, pattern.m)], dtype=np.float64).sum())
    kernels = {v: VNMWeight.compress(weight, pattern.n, pattern.m, v) for v in blocks}
    threads, blas = blas_description()
    print(f"{rows}x{k} fp32, pattern {pattern}, BLAS {blas} x{threads}, {args.rounds} interleaved rounds (medians)")
    print(f"per-row {pattern}: drops {1 - per_row_kept / energy:.4f} of the weight energy")
    print(f"{'tokens':>6} {'V':>6} {'dense ms':>9} {'limit ms':>9} {'vnm ms':>8} {'vs dense':>9} {'vs limit':>9} {'energy dropped':>15}")
    notes: list[str] = []
    for tokens in parse_tokens(args.tokens):
        x = rng.standard_normal((k, tokens), dtype=np.float32)
        half = np.ascontiguousarray(kernels[blocks[0]].values)
        x_half = np.ascontiguousarray(x[: half.shape[1]])
        variants = {"dense": lambda: weight @ x, "limit": lambda: half @ x_half}
        for v, kernel in kernels.items():
            variants[f"vnm{v}"] = lambda kernel=kernel: kernel.matmul(x)  # type: ignore[misc]
        med = {name: median(s) for name, s in interleaved(variants, rounds=args.rounds).items()}
        for v, kernel in kernels.items():
            kept = float(np.square(kernel.values, dtype=np.float64).sum())
            vnm = med[f"vnm{v}"]
            # the limit is one BLAS call on the half-K operand: a kernel doing the same work cannot beat it by more than
            # noise; when one does, that measurement of the limit is no bound at this size and is not tabulated as one
            beaten = med["limit"] / vnm > LIMIT_SLACK
            versus = f"{'no bound':>9}" if beaten else f"{med['limit'] / vnm:>8.2f}x"
            limit = f"{'-':>9}" if beaten else f"{med['limit']:>9.2f}"
            notes += [f"{tokens} tokens, V={kernel.block}: the blocked kernel ({vnm:.2f} ms) beat the half-K GEMM "
                      f"({med['limit']:.2f} ms) by {med['limit'] / vnm:.2f}x, so that GEMM is no limit at this size"] if beaten else []
            print(
                f"{tokens:>6} {kernel.block:>6} {med['dense']:>9.2f} {limit} {vnm:>8.2f} "
                f"{med['dense'] / vnm:>8.2f}x {versus} {1 - kept / energy:>15.4f}"
            )
    for note in notes:
        print(f"note: {note}")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
