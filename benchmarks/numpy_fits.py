"""scipy's routines against their numpy replacements (issue 57): the import each costs at start, and each call.

The package no longer imports scipy: Spearman's test (classify/thermal), the target model's
NNLS and roofline fit (sources/target) and SparseGPT's inverse-Hessian factor (kernels/pruning)
run in numpy. Two tables:

1. importing what each path needs, in fresh processes, interleaved rounds (the order rotating):
   ``import numpy`` alone (the floor), scipy's modules (the old path), the numpy modules that
   replace them; p50/p95/p99 and each median's ratio to the floor;
2. one call of each, old against new, timed in one process by the project's harness
   (``core.timing.measure``: interleaved rounds, disturbed rounds re-measured; samples of at
   least ``MIN_SAMPLE_MS``): p50/p95/p99 and the ratio new / old of the medians.

The inputs are the ones these paths see: a 300-iteration latency series with timer ties, the
per-decade NNLS (106 x 2) and a 20-point roofline fit of the shipped H200 target, SparseGPT's
factor of a 384- and a 1536-input Gram matrix. Usage::

    python benchmarks/numpy_fits.py [--rounds 15] [--import-rounds 9]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from side_by_side import Variant, load_line, python, run_rounds, table
from threadpoolctl import threadpool_limits

from sparsedebug.core.correlation import spearman
from sparsedebug.core.fit import levenberg_marquardt, nnls
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import measure
from sparsedebug.kernels.pruning import _inverse_hessian_factor
from sparsedebug.records.defaults import MIN_SAMPLE_MS

IMPORTS = {
    "import numpy (floor)": "import numpy",
    "old: scipy.stats": "import numpy, scipy.stats",
    "new: core.correlation": "import numpy, sparsedebug.core.correlation",
    "old: scipy.optimize (nnls, least_squares)": "import numpy; from scipy.optimize import nnls, least_squares",
    "new: core.fit": "import numpy, sparsedebug.core.fit",
    "old: scipy.linalg.lapack": "import numpy; from scipy.linalg import lapack",
}


def _roofline_problem() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 20-point float16 dense surface of the shipped H200 target: bytes moved, FLOPs, times."""
    from sparsedebug.sources.target.model import target_model

    model = target_model("h200-cusparselt")
    assert model is not None
    points = model.dense_surfaces()["float16"].points
    moved = np.array([2 * (p.out * p.k + p.k * p.tokens + p.out * p.tokens) for p in points], dtype=np.float64)
    flops = np.array([2.0 * p.out * p.k * p.tokens for p in points], dtype=np.float64)
    return moved, flops, np.array([p.value for p in points], dtype=np.float64)


def _calls() -> list[tuple[str, dict[str, object]]]:
    """(name, {"old": call, "new": call}) of every routine replaced."""
    from scipy import stats
    from scipy.linalg import lapack
    from scipy.optimize import least_squares
    from scipy.optimize import nnls as scipy_nnls

    rng = np.random.default_rng(0)
    series = np.round(5.0 + 0.001 * np.arange(300) + rng.gamma(2.0, 0.05, 300), 2)
    order = np.arange(300)
    a, b = np.abs(rng.normal(size=(106, 2))), rng.normal(size=106)
    moved, flops, times = _roofline_problem()
    start = np.log([times.min(), np.median(moved / times), np.median(flops / times)])

    def residual(params: np.ndarray) -> np.ndarray:
        floor, bw, fl = np.exp(np.clip(params, -700.0, 700.0))
        out: np.ndarray = np.log(np.maximum(floor, np.maximum(moved / bw, flops / fl))) - np.log(times)
        return out

    def scipy_factor(gram: np.ndarray) -> np.ndarray:
        """The old factor: scipy's dpotrf and dtrtri on one BLAS thread, as kernels/pruning ran them."""
        flipped = gram[::-1, ::-1] + np.eye(len(gram)) * (0.01 * float(np.mean(np.diag(gram))))
        with threadpool_limits(1):
            lower, _ = lapack.dpotrf(flipped, lower=1, clean=1)
            inverse, _ = lapack.dtrtri(lower, lower=1)
        return np.ascontiguousarray(inverse[::-1, ::-1])

    grams = {}
    for n in (384, 1536):
        x = rng.normal(size=(2 * n, n)) @ (np.eye(n) + 0.1 * rng.normal(size=(n, n)))
        grams[n] = x.T @ x
    calls: list[tuple[str, dict[str, object]]] = [
        ("spearman, 300 samples with ties", {"old": lambda: stats.spearmanr(order, series), "new": lambda: spearman(order, series)}),
        ("nnls, 106 x 2 (per-decade error)", {"old": lambda: scipy_nnls(a, b), "new": lambda: nnls(a, b)}),
        ("roofline fit, 20 points (LM)", {"old": lambda: least_squares(residual, start, method="lm"),
                                          "new": lambda: levenberg_marquardt(residual, start)}),
    ]
    factors: list[tuple[str, dict[str, object]]] = [
        (f"SparseGPT factor, {n} inputs",
         {"old": lambda g=g: scipy_factor(g), "new": lambda g=g: _inverse_hessian_factor(g, 0.01)})
        for n, g in grams.items()
    ]
    return calls + factors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--import-rounds", type=int, default=9)
    args = parser.parse_args()
    variants = [Variant(name, [python(), "-c", code]) for name, code in IMPORTS.items()]
    loads = run_rounds(variants, args.import_rounds)
    print(f"1. imports, fresh process each, {args.import_rounds} interleaved rounds")
    print(table(variants, "import numpy (floor)"))
    print(load_line(loads))
    print()
    print(f"2. one call, old (scipy) against new (numpy), {args.rounds} interleaved rounds in one process, "
          f"samples of at least {MIN_SAMPLE_MS:g} ms")
    print(f"{'routine':<34} {'old p50 ms':>10} {'new p50 ms':>10} {'new p95':>8} {'new p99':>8} {'new/old':>8}  timing")
    for name, pair in _calls():
        timed = measure(pair, rounds=args.rounds, min_sample_ms=MIN_SAMPLE_MS)  # type: ignore[arg-type]
        old, new = percentiles(timed.samples["old"]), percentiles(timed.samples["new"])
        ratio = median(timed.samples["new"]) / median(timed.samples["old"])
        print(f"{name:<34} {old.p50:10.4f} {new.p50:10.4f} {new.p95:8.4f} {new.p99:8.4f} {ratio:7.2f}x  {timed.quality.status}")
    print(f"load average (1 min) now {__import__('os').getloadavg()[0]:.2f}; Python {sys.version.split()[0]}")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
