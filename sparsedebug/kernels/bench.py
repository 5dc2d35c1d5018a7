"""The kernel benchmark: dense BLAS, the half-K limit, scipy CSR, per-row N:M and blocked V:N:M.

All five variants multiply the same pruned weight by the same activations, timed
interleaved in one process (:func:`sparsedebug.core.timing.measure`), so machine
drift hits them alike; rounds that other processes disturbed are flagged and
re-measured, and a row whose timings stay disturbed is marked ``unstable``. Ratios are baseline time over kernel time from medians
(above 1 means the kernel is faster); p50/p95/p99 are kept per variant.

Variants:

``dense``  numpy/BLAS ``W @ X`` on the dense (pruned) weight.
``limit``  the same BLAS on inner dimension ``K*N/M``: the physical limit of
           skipping the pruned work on this machine.
``csr``    ``scipy.sparse`` CSR of the per-row N:M pruned weight, times ``X``: an anchor from
           outside the package, timed when scipy is installed (``pip install
           'sparsedebug[anchors]'``); without it the row's CSR fields are None.
``nm``     :class:`~sparsedebug.kernels.nm.NMWeight` (per-row N:M).
``vnm``    :class:`~sparsedebug.kernels.vnm.VNMWeight` (blocked V:N:M).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info

from sparsedebug.core.budget import Cost, check_budget
from sparsedebug.core.errors import InternalError, UserError
from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import measure
from sparsedebug.kernels.masks import Pattern, check_block, check_divisible, check_nm
from sparsedebug.kernels.nm import NMWeight
from sparsedebug.kernels.precision import error_bound
from sparsedebug.kernels.vnm import VNMWeight
from sparsedebug.records.bench import KernelBenchRow

# Benchmark variants, in timing order within a round.
VARIANTS: tuple[str, ...] = ("dense", "limit", "csr", "nm", "vnm")

_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")


def parse_shape(text: str) -> tuple[int, int]:
    """Parse ``"OUTxIN"`` (e.g. ``"4096x4096"``) into positive ``(out, in)``."""
    match = _SHAPE_RE.match(text)
    if match is None:
        raise UserError(f"--shape {text!r}: expected OUTxIN, e.g. 4096x4096")
    rows, k = int(match.group(1)), int(match.group(2))
    if rows < 1 or k < 1:
        raise UserError(f"--shape {text!r}: both dimensions must be at least 1")
    return rows, k


def parse_tokens(text: str) -> list[int]:
    """Parse a comma-separated list of positive token counts, e.g. ``"1,16,128,512"``."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        raise UserError(f"--tokens {text!r}: expected a comma-separated list such as 1,16,128")
    tokens: list[int] = []
    for item in items:
        if not item.isdigit() or int(item) < 1:
            raise UserError(f"--tokens {text!r}: {item!r} is not a positive integer")
        tokens.append(int(item))
    return tokens


# Bytes held per weight element: fp32 dense and pruned, fp64 reference copies, CSR values and indices, both kernels.
BENCH_BYTES_PER_WEIGHT = 64
# Bytes per activation and output element of the largest token count: fp32 and fp64 copies, one output per variant.
BENCH_BYTES_PER_ACTIVATION = 48


def bench_cost(shape: tuple[int, int], tokens: Sequence[int], pattern: Pattern, rounds: int, warmup: int = 1) -> Cost:
    """Peak memory and work of ``run_kernel_bench`` (five variants, each round, every token count)."""
    rows, k = shape
    widest = max(tokens)
    held = BENCH_BYTES_PER_WEIGHT * rows * k + BENCH_BYTES_PER_ACTIVATION * (rows + k) * widest
    flops = sum(2.0 * rows * k * t for t in tokens) * len(VARIANTS) * (rounds + warmup + 1)
    calls = float(len(tokens) * len(VARIANTS) * (rounds + warmup + 1))
    return Cost(bytes=float(held), flops=flops, calls=calls, what=f"bench kernel {rows}x{k} at tokens {max(tokens)}, {rounds} rounds")


def blas_description() -> tuple[int, str]:
    """Thread count and a short description of numpy's BLAS (via threadpoolctl)."""
    libs = [lib for lib in threadpool_info() if lib.get("user_api") == "blas"]
    if not libs:
        return 1, "unknown BLAS"
    # scipy may load its own BLAS too; numpy's is the one dense, limit and both kernels use
    numpy_libs = [lib for lib in libs if "numpy" in str(lib.get("filepath", ""))]
    lib = (numpy_libs or libs)[0]
    threads = int(lib.get("num_threads") or 1)
    text = f"{lib.get('internal_api', '?')} {lib.get('version') or '?'} ({lib.get('architecture') or '?'})"
    return threads, text


def _check_request(shape: tuple[int, int], tokens: Sequence[int], pattern: Pattern, block: int, rounds: int, warmup: int) -> None:
    """Refuse a bench request that is malformed or does not fit this machine, before allocating."""
    rows, k = shape
    check_nm(pattern.n, pattern.m)
    check_budget(bench_cost(shape, tokens, pattern, rounds, warmup))
    check_divisible(k, pattern, f"--shape {rows}x{k}")
    if pattern.block is not None:
        check_block(rows, pattern, f"--shape {rows}x{k}")
    if block < 1:
        raise UserError(f"--block {block}: must be at least 1")
    if rounds < 1:
        raise UserError(f"--rounds {rounds}: need at least 1 timed round")
    if not tokens or min(tokens) < 1:
        raise UserError("--tokens: need at least one positive token count")


def run_kernel_bench(
    shape: tuple[int, int],
    tokens: Sequence[int],
    pattern: Pattern,
    block: int,
    rounds: int,
    seed: int = 0,
    warmup: int = 1,
    on_progress: Callable[[str], None] | None = None,
) -> list[KernelBenchRow]:
    """Time the five variants at each token count; one row per token count.

    The weight is standard normal fp32 of ``shape`` (out, in), pruned per row to
    ``pattern`` (CSR and per-row kernel) and per block of ``block`` rows (blocked
    kernel). Before timing, each kernel's product is checked against an fp64
    reference of its own pruned weight; a mismatch is an internal error.
    """
    rows, k = shape
    _check_request(shape, tokens, pattern, block, rounds, warmup)
    note = on_progress or (lambda _msg: None)
    rng = np.random.default_rng(seed)
    note(f"building {rows}x{k} weight, pattern {pattern.n}:{pattern.m}, block {block}")
    weight = rng.standard_normal((rows, k), dtype=np.float32)
    nm = NMWeight.compress(weight, pattern.n, pattern.m)
    vnm = VNMWeight.compress(weight, pattern.n, pattern.m, block)
    pruned = nm.decompress()
    csr = csr_anchor(pruned)
    kept = vnm.values.shape[1]
    limit_weight = np.ascontiguousarray(vnm.values)
    threads, blas = blas_description()
    results: list[KernelBenchRow] = []
    for count in tokens:
        x = rng.standard_normal((k, count), dtype=np.float32)
        x_half = np.ascontiguousarray(x[:kept])
        _verify(nm, vnm, x)
        timed_calls: dict[str, Callable[[], object] | None] = {
            "dense": lambda: pruned @ x,
            "limit": lambda: limit_weight @ x_half,
            "csr": None if csr is None else (lambda: csr @ x),
            "nm": lambda: nm.matmul(x),
            "vnm": lambda: vnm.matmul(x),
        }
        variants = {name: call for name, call in timed_calls.items() if call is not None}
        note(f"timing {count} tokens: {rounds} rounds of {', '.join(variants)}")
        timed = measure(variants, rounds=rounds, warmup=warmup)
        samples = timed.samples
        med = {name: median(values) for name, values in samples.items()}
        results.append(
            KernelBenchRow(
                tokens=count,
                shape=[rows, k],
                pattern=f"{pattern.n}:{pattern.m}",
                block=vnm.block,
                rounds=rounds,
                dense_ms=med["dense"],
                limit_ms=med["limit"],
                csr_ms=med.get("csr"),
                nm_ms=med["nm"],
                vnm_ms=med["vnm"],
                vnm_vs_dense=med["dense"] / med["vnm"],
                vnm_vs_limit=med["limit"] / med["vnm"],
                nm_vs_csr=med["csr"] / med["nm"] if "csr" in med else None,
                nm_vs_dense=med["dense"] / med["nm"],
                csr_vs_dense=med["dense"] / med["csr"] if "csr" in med else None,
                blas_threads=threads,
                blas=blas,
                percentiles_ms={name: percentiles(values) for name, values in samples.items()},
                timing=timed.quality,
            )
        )
    return results


def csr_anchor(pruned: np.ndarray) -> Any | None:
    """``scipy.sparse`` CSR of ``pruned``, or None when scipy (an optional anchor: the ``anchors`` extra) is not installed.

    Imported here, not at module level: importing scipy.sparse costs a quarter second at every CLI start.
    """
    try:
        import scipy.sparse
    except ImportError:
        return None
    return scipy.sparse.csr_matrix(pruned)


def _verify(nm: NMWeight, vnm: VNMWeight, x: np.ndarray) -> None:
    """Both kernels agree with an fp64 reference of their own pruned weight (first rows)."""
    probe = slice(0, min(64, nm.shape[0]))
    x64 = x.astype(np.float64)
    for name, kernel in (("nm", nm), ("vnm", vnm)):
        dense = kernel.decompress()[probe]
        got = kernel.matmul(x)[probe]
        if not (np.abs(got - dense.astype(np.float64) @ x64) <= error_bound(dense, x, "fp32")).all():
            raise InternalError(f"{name} kernel disagrees with the fp64 reference beyond the fp32 bound")
