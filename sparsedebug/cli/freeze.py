"""`sparsedebug freeze`: step 1, pin seed, model revision and environment; `--check` for drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from sparsedebug.cli.common import (
    EXIT_CHECK_FAILED,
    JsonOption,
    OutputOption,
    WideOption,
    console,
    emit_json,
    handle_errors,
)
from sparsedebug.core.errors import UserError


@handle_errors
def freeze(
    output: OutputOption = None,
    seed: Annotated[int | None, typer.Option(help="Workload seed to pin (a non-negative integer, as in a workload).", min=0)] = None,
    workload: Annotated[Path | None, typer.Option(help="Workload file to pin by sha256.")] = None,
    model: Annotated[Path | None, typer.Option(help="Model/weights file to pin by sha256 (the model revision).")] = None,
    calibrate: Annotated[
        bool, typer.Option("--calibrate", help="Also measure this machine's GEMM GFLOP/s and copy GB/s (the roofline).")
    ] = False,
    check: Annotated[
        Path | None,
        typer.Option("--check", help="Compare the current environment with this frozen fingerprint; exit 1 on drift that can change results."),
    ] = None,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Freeze the workload seed, model revision and execution environment.

    Records Python, platform, CPU model and ISA flags, numpy and its BLAS (version,
    threads), thread environment variables, torch/CUDA when installed, GPUs through
    nvidia-smi when present, and the git revision. With --check, re-probes and
    reports which fields drifted: exit 1 when one that can change results did.

    With -o, the workload and model paths are stored relative to the fingerprint
    file; --check resolves them from the fingerprint file's folder, so the check
    runs the same from any working directory.
    """
    from sparsedebug.core.io import load_record, save_record
    from sparsedebug.freeze import fingerprint
    from sparsedebug.records.fingerprint import Fingerprint
    from sparsedebug.render.terminal.fingerprint import drift_table, fingerprint_table

    if check is not None:
        frozen = load_record(check, Fingerprint)
        try:
            _, drifts = fingerprint.check(frozen, seed=seed, workload=workload, model=model, base_dir=check.parent)
        except UserError as exc:
            raise UserError(f"{check}: {exc}") from None
        failing = [d for d in drifts if d.affects_results]
        if json_out:
            emit_json({"frozen": str(check), "ok": not failing, "drifts": drifts})
        else:
            out = console(wide)
            if drifts:
                out.print(drift_table(drifts))
            if failing:
                out.print(Text(f"drift in {len(failing)} field(s) that can change results", style="red"))
            else:
                out.print(Text(f"no result-affecting drift against {check}", style="green"))
        if failing:
            raise typer.Exit(EXIT_CHECK_FAILED)
        return

    if workload is not None:  # pin only a file the replay would read: a binary or malformed one is refused here
        from sparsedebug.sources.detect import load_workload

        load_workload(workload)
    record = fingerprint.collect(seed=seed, workload=workload, model=model, calibrate_machine=calibrate)
    if output is not None:
        record = fingerprint.relative_to(record, output.parent)
        save_record(record, output)
    if json_out:
        emit_json(record)
        return
    out = console(wide)
    out.print(fingerprint_table(record))
    if output is not None:
        out.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add `freeze` to the app."""
    app.command("freeze")(freeze)
