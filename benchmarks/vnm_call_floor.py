"""How close can one-BLAS-call-per-block get to the half-K limit, even with a free gather?

The blocked V:N:M product makes one BLAS call per block of V rows on that block's
gathered activations. This script separates its two costs by timing, interleaved
in one process (medians), on the same reduced inner dimension ``K*N/M``:

``limit``       one GEMM ``(rows x K*N/M) @ (K*N/M x T)``: the half-K limit;
``calls``       one GEMM per block, each on its own pre-gathered operand (the
                gather done outside the timing: the floor of any per-block design
                that calls BLAS, since BLAS packs every block's operand anew);
``blocked``     the built-in blocked kernel (gather included).

Ratios are limit ms / variant ms (1.0 = as fast as the limit). Usage::

    python benchmarks/vnm_call_floor.py [--shape 4096x4096] [--tokens 128,512] [--block 256] [--rounds 9]
"""

from __future__ import annotations

import argparse

import numpy as np

from sparsedebug.core.stats import median
from sparsedebug.core.timing import interleaved
from sparsedebug.kernels.bench import blas_description, parse_shape, parse_tokens
from sparsedebug.kernels.vnm import VNMWeight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4096x4096")
    parser.add_argument("--tokens", default="128,512")
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows, k = parse_shape(args.shape)
    rng = np.random.default_rng(args.seed)
    weight = rng.standard_normal((rows, k), dtype=np.float32)
    vnm = VNMWeight.compress(weight, 2, 4, args.block)
    values = vnm.values
    bounds = [(b * args.block, min(rows, (b + 1) * args.block)) for b in range(vnm.blocks)]
    threads, blas = blas_description()
    print(f"{rows}x{k} fp32, 2:4, V={args.block} ({vnm.blocks} blocks); BLAS {blas}, {threads} thread(s)")
    print(f"{'tokens':>6} {'limit ms':>9} {'calls ms':>9} {'blocked ms':>10} {'calls/limit':>12} {'blocked/limit':>14}")
    for tokens in parse_tokens(args.tokens):
        x = rng.standard_normal((k, tokens), dtype=np.float32)
        half = np.ascontiguousarray(x[: values.shape[1]])
        gathered = [np.ascontiguousarray(x[vnm.gather[b]]) for b in range(vnm.blocks)]
        out = np.empty((rows, tokens), dtype=np.float32)

        def limit() -> None:
            np.matmul(values, half, out=out)

        def calls() -> None:
            for b, (start, stop) in enumerate(bounds):
                np.matmul(values[start:stop], gathered[b], out=out[start:stop])

        samples = interleaved({"limit": limit, "calls": calls, "blocked": lambda: vnm.matmul(x)}, rounds=args.rounds)
        ms = {name: median(s) for name, s in samples.items()}
        print(
            f"{tokens:>6} {ms['limit']:>9.2f} {ms['calls']:>9.2f} {ms['blocked']:>10.2f} "
            f"{ms['limit'] / ms['calls']:>12.2f} {ms['limit'] / ms['blocked']:>14.2f}"
        )


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
