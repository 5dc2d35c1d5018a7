"""`sparsedebug classify`: step 3, the dominant mechanism of a run's symptom, with its evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import (
    AllowDifferentOption,
    ExecutorOption,
    JsonOption,
    SmiUtcOffsetOption,
    WideOption,
    allowed_dimensions,
    console,
    emit_json,
    err_console,
    handle_errors,
    rank_pair,
    say_comparability,
)
from sparsedebug.core.errors import UserError


@handle_errors
def classify(
    run: Annotated[Path, typer.Argument(help="The candidate: a run record (.json/.yaml), a workload YAML (replayed) or a PyTorch trace (imported).")],
    baseline: Annotated[
        Path | None, typer.Option("--baseline", "-b", help="The baseline run (same kinds of file as RUN); enables the comparison rules.")
    ] = None,
    ncu: Annotated[Path | None, typer.Option("--ncu", help="Nsight Compute --csv report of the run's kernels.")] = None,
    smi: Annotated[Path | None, typer.Option("--smi", help="nvidia-smi --query-gpu=... --format=csv log captured during the run.")] = None,
    smi_utc_offset: SmiUtcOffsetOption = None,
    fingerprint: Annotated[
        Path | None,
        typer.Option("--fingerprint", "-f", help="Fingerprint from `freeze` (with --calibrate for the replay machine's roofline; core count)."),
    ] = None,
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="GPU name for the peak-figure roofline of an imported run (e.g. 'NVIDIA H200').")
    ] = None,
    executor: ExecutorOption = "local",
    allow_different: AllowDifferentOption = None,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Classify the dominant mechanism: compute, memory, scheduling, precision or thermal.

    Scores all five with the rule table (see docs/steps/classify.md, or `sparsedebug.classify.rules`),
    ranks them, and prints every evidence line with its number and where it came
    from (stage and metric, or the imported artifact). The winner comes with the
    artifact that proves it and the smallest reversible change that would test
    it (a workload knob, a layer to pad or exclude, a block size, or advice for
    imported runs). Evidence that is missing is not scored as absent: the output
    names the artifact that would settle it. With --baseline the two runs must be
    comparable (same model by layer shapes, device, phase, tokens, dtype; see
    --allow-different); two workload YAMLs are replayed in one interleaved session, as bisect and
    gate replay them. Exit 0 whenever a classification was made, 2 on bad input.

    RUN and --baseline may be run sets (a directory or quoted glob of per-rank traces): every
    rank is compared with the same rank of the other set (printed first), then the rank the
    change is confined to (else the straggler, else the lowest rank) is classified.
    """
    ranks = None
    if baseline is not None:
        baseline, run, ranks = rank_pair(baseline, run, executor, json_out=json_out, wide=wide)
    from sparsedebug.classify.score import classify_run
    from sparsedebug.core.gpus import GPU_PEAKS, find_gpu_peak
    from sparsedebug.core.io import load_record
    from sparsedebug.records.fingerprint import Fingerprint
    from sparsedebug.sources.detect import load_pair, load_run
    from sparsedebug.sources.evidence import EvidencePaths, load_evidence

    quiet = json_out
    say = err_console()
    if not quiet:
        say.print(f"reading {run}" if baseline is None else f"reading baseline {baseline} and {run}")
    base = None
    if baseline is None:
        record = load_run(run)
    else:
        base, record = load_pair(baseline, run)  # two workloads: replayed in one interleaved session, as bisect and gate do
        from sparsedebug.locate.comparable import require_comparable

        pair = require_comparable(base, record, allowed_dimensions(allow_different))
        base, record = pair.base, pair.cand
        if not quiet:
            say_comparability(pair.check, say)
    evidence = load_evidence(EvidencePaths(ncu=ncu, smi=smi, smi_utc_offset_h=smi_utc_offset))
    if gpu is not None and find_gpu_peak(gpu) is None:
        known = ", ".join(peak.name for peak in GPU_PEAKS)
        raise UserError(f"--gpu {gpu!r}: not in the peak-figure table (known: {known})")
    fp = load_record(fingerprint, Fingerprint) if fingerprint is not None else None
    result = classify_run(
        record, baseline=base, evidence=evidence, fingerprint=fp, gpu=gpu, run_path=str(run)
    )
    if json_out:
        emit_json(result if ranks is None else {"ranks": ranks, "classification": result})
        return
    from sparsedebug.render.terminal.classify import classification_view

    console(wide).print(classification_view(result))


def register(app: typer.Typer) -> None:
    """Add `classify` to the app."""
    app.command("classify")(classify)
