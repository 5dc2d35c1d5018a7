"""`sparsedebug predict`: will 2:4 pay off for these shapes on that GPU? Projected, with provenance."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from sparsedebug.cli.common import JsonOption, console, emit_json, handle_errors
from sparsedebug.core.errors import UserError


@handle_errors
def predict(
    workload: Annotated[
        str | None, typer.Argument(help="Workload YAML file or embedded name; its linear layers, lowered on --backend.")
    ] = None,
    shape: Annotated[
        list[str] | None,
        typer.Option("--shape", help="A linear weight OUTxIN to project (repeatable); :dense keeps it dense, sparse by default."),
    ] = None,
    tokens: Annotated[str, typer.Option(help="Comma-separated token counts per forward, e.g. 16,2048,8192.")] = "",
    backend: Annotated[
        str | None, typer.Option(help="GPU backend profile (default: the workload's, else h200-cusparselt).")
    ] = None,
    launch: Annotated[
        str | None, typer.Option(help="eager (one host call per op) or cuda_graph (default: the workload's, else eager).")
    ] = None,
    dtype: Annotated[str, typer.Option(help="Dtype of the --shape layers (fp16, bf16, ...).")] = "fp16",
    all_layers: Annotated[bool, typer.Option("--all", help="Also list non-linear layers (estimated from bytes).")] = False,
    json_out: JsonOption = False,
) -> None:
    """Project dense and 2:4 sparse latency onto the target GPU, per layer and in total.

    Nothing is timed here: every figure is on the target clock, projected from
    measurements of that GPU (for the H200 profiles: the results.json GEMM rows,
    the profiler traces and the Nsight Compute file in fixtures/h200). Per layer:
    dense and sparse time per call, host and GPU time apart, the speedup, and the
    provenance (the measured rows and traces it came from, or `extrapolated`
    outside the measured range, or `estimate` for non-linear ops). Per shape:
    the token count from which 2:4 pays off. Eager launch pays a host cost per
    call (about 0.5 to 1 ms for a cuSPARSELt call on the H200); a CUDA graph does not.
    """
    from sparsedebug.kernels.bench import parse_tokens
    from sparsedebug.render.terminal.predict import predict_tables
    from sparsedebug.sources.detect import load_workload, resolve_workload
    from sparsedebug.sources.target.project import parse_shape_spec
    from sparsedebug.sources.target.project import predict as run_predict

    if not tokens:
        raise UserError("--tokens: required, e.g. --tokens 16,2048,8192")
    counts = parse_tokens(tokens)
    if launch is not None and launch not in ("eager", "cuda_graph"):
        raise UserError(f"--launch {launch!r}: expected eager or cuda_graph")
    chosen_launch: Literal["eager", "cuda_graph"] | None = launch  # type: ignore[assignment]
    path = resolve_workload(workload) if workload is not None else None
    spec = load_workload(path) if path is not None else None
    if spec is not None and backend is not None and backend != spec.backend:
        spec = spec.model_copy(update={"backend": backend})
    chosen_backend = backend or (spec.backend if spec is not None else "h200-cusparselt")
    shapes = [parse_shape_spec(text) for text in shape or []]
    calls_at = None
    if spec is not None:
        from sparsedebug.sources.replay.sources import graph_source

        source = graph_source(spec, path.parent if path is not None else None)
        calls_at = lambda count: source.target_calls(tokens=count)  # noqa: E731
    report = run_predict(
        backend=chosen_backend, tokens=counts, workload=spec, shapes=shapes, dtype=dtype, launch=chosen_launch, calls_at=calls_at
    )
    if json_out:
        emit_json(report)
        return
    out = console()
    for item in predict_tables(report, all_layers=all_layers):
        out.print(item)


def register(app: typer.Typer) -> None:
    """Add `predict` to the app."""
    app.command("predict")(predict)
