"""`sparsedebug audit`: N:M compliance of every tensor of a checkpoint, and what the backend would run sparse."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import EXIT_CHECK_FAILED, JsonOption, console, emit_json, handle_errors, note_block_pattern


@handle_errors
def audit(
    checkpoint: Annotated[Path, typer.Argument(help="Checkpoint: .safetensors, .npz or .gguf (tensors dequantized to fp32).")],
    pattern: Annotated[str, typer.Option("--pattern", help="N:M or V:N:M pattern to check against.")] = "2:4",
    backend: Annotated[
        str, typer.Option("--backend", help="Backend profile whose lowering rules decide sparse or dense (see `sparsedebug lower`).")
    ] = "h200-cusparselt",
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            help="Stack and version, NAME==VERSION (pytorch, torchao, vllm, tensorrt): per tensor whether it would run sparse there and why not, each fact cited.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Exit 1 when a tensor meant to be sparse (>= 90% of groups compliant) has violating groups, or (with --stack) would not run sparse on the stack.",
        ),
    ] = False,
    wide: Annotated[bool, typer.Option("--wide", help="List every tensor, vectors included.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Audit a checkpoint: per tensor its shape, dtype, N:M compliance and the backend's decision.

    A tensor with at least 90% of its groups compliant is taken as meant to be
    sparse; any violating group in it is a finding (named with its first
    violating rows), and --check exits 1 on it. A dense checkpoint audits as
    dense, not as violations; its matrices are judged as if pruned, so the
    backend column says whether pruning them would run sparse at all and, if
    not, why (shape, dtype, op). Elements stored as -0.0 are counted per
    tensor, with the groups they break for a compressor that tests bits.

    With --stack NAME==VERSION (e.g. vllm==0.19.1, pytorch==2.11.0) each
    matrix also gets that stack's verdict at that version: sparse on a named
    path, dense with every reason (a feature removed in that version, the
    consumer op not lowered sparse, a dtype or layout without a kernel, K or N
    off the alignment, -0.0, violating groups), or unknown where the deciding
    fact holds for versions no source states; each reason cites its source.
    The profiles are data: fixtures/stacks/*.yaml. Exit codes: 0 ok, 1 --check
    found violations (or tensors the stack would not run sparse), 2 bad input.
    """
    from sparsedebug.render.terminal.audit import audit_view
    from sparsedebug.signoff.audit import audit_checkpoint

    note_block_pattern(pattern)
    result = audit_checkpoint(checkpoint, pattern=pattern, backend=backend, stack=stack)
    if json_out:
        emit_json(result)
    else:
        console().print(audit_view(result, wide=wide))
    if check and (result.failing or result.stack_failing):
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add `audit` to the app."""
    app.command("audit")(audit)
