"""`sparsedebug bench kernel`: time the built-in kernels side by side with dense BLAS and CSR."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from sparsedebug.cli.common import JsonOption, WideOption, console, emit_json, err_console, handle_errors, note_block_pattern
from sparsedebug.core.errors import UserError
from sparsedebug.records.defaults import MAX_REPEATS

bench_app = typer.Typer(help="Benchmarks that print ratios against a baseline timed in the same process.", no_args_is_help=True)

@bench_app.command("kernel")
@handle_errors
def kernel(
    shape: Annotated[str, typer.Option(help="Weight shape OUTxIN (rows x reduction K).")] = "4096x4096",
    tokens: Annotated[str, typer.Option(help="Comma-separated token counts (columns of X).")] = "1,16,128,512",
    pattern: Annotated[str, typer.Option(help="Sparsity pattern N:M, or V:N:M to set the block too.")] = "2:4",
    block: Annotated[int | None, typer.Option(help="Rows per block V of the blocked kernel (default 256, or V from --pattern V:N:M).")] = None,
    rounds: Annotated[int, typer.Option(help="Timed interleaved rounds per token count (1 to 10,000).", max=MAX_REPEATS)] = 7,
    seed: Annotated[int, typer.Option(help="Seed for the random weight and activations.", min=0)] = 0,
    tails: Annotated[bool, typer.Option("--tails", help="Also print p50/p95/p99 per variant.")] = False,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Time dense BLAS, the half-K limit, scipy CSR and both built-in N:M kernels.

    Variants, timed interleaved in one process (A B C ... A B C ...) with the
    median per variant: `dense` (BLAS W @ X), `limit` (the same BLAS on an inner
    dimension of K*N/M: the physical limit of skipping pruned work here), `csr`
    (scipy CSR of the same pruned matrix, when scipy is installed: the
    `anchors` extra), `nm` (per-row N:M kernel) and `vnm`
    (blocked V:N:M kernel). Ratios are baseline ms / kernel ms, so above 1 means
    the kernel is faster. Weights and activations are random fp32; each kernel is
    checked against an fp64 reference before it is timed. Rounds that other
    processes disturbed (wall far above CPU time, preemption, delays in whole
    scheduler ticks, outliers) are flagged and re-measured up to a bound; a row
    whose timings stay disturbed shows its ratios as `unstable`: rerun when quiet.
    Progress goes to stderr.
    """
    from sparsedebug.kernels.bench import parse_shape, parse_tokens, run_kernel_bench
    from sparsedebug.kernels.masks import check_block, parse_pattern
    from sparsedebug.render.terminal.bench import kernel_bench_table, tails_table

    rows_k = parse_shape(shape)
    counts = parse_tokens(tokens)
    parsed = parse_pattern(pattern)
    if parsed.block is not None and block is not None and parsed.block != block:
        raise UserError(f"--pattern {pattern} sets block {parsed.block} but --block says {block}")
    if block is not None:
        check_block(rows_k[0], parsed.model_copy(update={"block": block}), f"--block {block}")
    chosen_block = block if block is not None else (parsed.block if parsed.block is not None else 256)
    note_block_pattern(pattern)
    status = err_console()
    results = run_kernel_bench(
        rows_k,
        counts,
        parsed,
        chosen_block,
        rounds,
        seed=seed,
        on_progress=lambda msg: status.print(Text(msg, style="dim")),
    )
    if json_out:
        emit_json(results)
        return
    out = console(wide)
    out.print(kernel_bench_table(results))
    if tails:
        out.print(tails_table(results))


def register(app: typer.Typer) -> None:
    """Add `bench` (with `kernel`) to the app."""
    app.add_typer(bench_app, name="bench")
