"""`sparsedebug quality`: pruned against dense on real text, for a real model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sparsedebug.cli.common import (
    JsonOption,
    OutputOption,
    console,
    emit_json,
    err_console,
    handle_errors,
    note_block_pattern,
)
from sparsedebug.core.errors import UserError
from sparsedebug.records.defaults import (
    DEFAULT_BLOCK,
    DEFAULT_DAMPING,
    MAX_TEXT_TOKENS,
    METHODS,
    MODEL_NAMES,
    STUDY_SIZES,
    Method,
)

if TYPE_CHECKING:
    from sparsedebug.kernels.masks import Pattern
    from sparsedebug.quality.study import StudyRequest
    from sparsedebug.records.quality import QualityStudy
    from sparsedebug.sources.models.load import LoadedModel
    from sparsedebug.sources.models.text import Corpus

_LLAMA, _BERT = STUDY_SIZES["llama"], STUDY_SIZES["bert"]


def _finite(value: float) -> float:
    """A float option's value when finite (``core.bounds.in_bounds``): an infinity is no damping at all."""
    from sparsedebug.core.bounds import in_bounds

    if not in_bounds(value, -float("inf"), float("inf")):
        raise typer.BadParameter(f"{value}: expected a finite number")
    return value


@handle_errors
def quality(
    model: Annotated[
        str, typer.Argument(help=f"{' or '.join(MODEL_NAMES)} (fetched on first use), a Llama .gguf file, or a BERT folder.")
    ],
    method: Annotated[
        list[str] | None, typer.Option("--method", "-m", help=f"Pruning method, repeatable: {', '.join(METHODS)} (default: all three).")
    ] = None,
    pattern: Annotated[list[str] | None, typer.Option("--pattern", "-p", help="N:M or V:N:M pattern, repeatable (default 2:4).")] = None,
    layers: Annotated[
        list[str] | None,
        typer.Option(help="Layers to prune, repeatable: all, mlp, attention, or comma-separated name globs (blk.*.ffn_down)."),
    ] = None,
    tokens: Annotated[int | None, typer.Option(help=f"Evaluation tokens (default {_LLAMA['eval_tokens']} decoder, {_BERT['eval_tokens']} "
                                               f"encoder; at most {MAX_TEXT_TOKENS:,}).", min=1, max=MAX_TEXT_TOKENS)] = None,
    calibration_tokens: Annotated[
        int | None,
        typer.Option(
            help=(
                f"Calibration tokens for wanda/sparsegpt (default {_LLAMA['calibration_tokens']} decoder, cap {_LLAMA['calibration_cap']}; "
                f"{_BERT['calibration_tokens']} encoder, cap {_BERT['calibration_cap']})."
            ),
            min=1,
        ),
    ] = None,
    text: Annotated[Path | None, typer.Option(help="UTF-8 text file to calibrate and evaluate on (default: pydoc_data.topics).")] = None,
    save: Annotated[Path | None, typer.Option(help="Write every pruned model here as safetensors, and the study as quality.json.")] = None,
    save_dtype: Annotated[str, typer.Option(help="dtype of saved weights: fp32 or fp16 (zeros stay exact in both).")] = "fp32",
    damping: Annotated[float, typer.Option(help="SparseGPT damping: fraction of the mean Hessian diagonal.", min=1e-9, callback=_finite)] = DEFAULT_DAMPING,
    block_size: Annotated[int, typer.Option(help="SparseGPT columns per lazy-update block.", min=1)] = DEFAULT_BLOCK,
    layer_errors: Annotated[bool, typer.Option("--layer-errors", help="Also list the layers with the largest output error.")] = False,
    output: OutputOption = None,
    json_out: JsonOption = False,
) -> None:
    """Prune a real model by each method, pattern and layer selection, and compare it with dense.

    The decoder (smollm2-135m) is scored by perplexity over windows of 512 tokens;
    the encoder (minilm-l6) by how its sentence embeddings agree with the dense
    model's: mean and minimum cosine, and the share of sentences whose nearest
    neighbour is unchanged. The default text, Python's pydoc_data.topics, is split
    into disjoint evaluation and calibration parts (even/odd windows for the
    decoder; sentences by sha256 for the encoder); the Python version and the
    text's sha256 are recorded with every figure. Wanda scales |w| by the input
    feature norms and SparseGPT reconstructs with the calibration Hessian, both
    calibrated block by block. Each pruned layer's output error is measured on the
    evaluation inputs. One table: dense first, then a row per method x pattern x
    selection, with its time on this machine. Progress goes to stderr.
    """
    from sparsedebug.core.io import save_record
    from sparsedebug.quality.save import make_save_dir
    from sparsedebug.quality.study import StudyRequest
    from sparsedebug.sources.models.load import load_model
    from sparsedebug.sources.models.text import default_corpus, file_corpus

    methods = _methods(method)
    patterns = _patterns(pattern)
    _check_outputs(save, save_dtype, output)
    corpus = file_corpus(text) if text is not None else default_corpus()
    loaded = load_model(model, _log)
    request = StudyRequest(
        methods=methods, patterns=patterns, selections=tuple(layers or ["all"]), eval_tokens=tokens,
        calibration_tokens=calibration_tokens, damping=damping, block_size=block_size, save_dir=save, save_dtype=save_dtype,
    )
    study = _run_with_progress(loaded, corpus, request, quiet=json_out)
    _note_short_text(study, tokens or loaded.defaults.eval_tokens, calibration_tokens or loaded.defaults.calibration_tokens)
    if save is not None:
        make_save_dir(save)
        save_record(study, save / "quality.json")
    if output is not None:
        save_record(study, output)
    if json_out:
        emit_json(study)
        return
    _print_study(study, layer_errors=layer_errors, output=output)


def _print_study(study: QualityStudy, *, layer_errors: bool, output: Path | None) -> None:
    """The study's table (and the worst layers), and what was written, for people."""
    from sparsedebug.render.terminal.quality import quality_table, worst_layers_table

    out = console()
    out.print(quality_table(study))
    worst = worst_layers_table(study)
    if worst is not None and layer_errors:
        out.print(worst)
    for row in study.rows:
        if row.saved:
            out.print(f"wrote {row.saved}")
    if output is not None:
        out.print(f"wrote {output}")


def _patterns(given: list[str] | None) -> list[Pattern]:
    """The patterns asked (default 2:4); a V:N:M one is said in words on stderr."""
    from sparsedebug.kernels.masks import parse_pattern
    for item in given or []:
        note_block_pattern(item)
    return [parse_pattern(item) for item in (given or ["2:4"])]


def _check_outputs(save: Path | None, save_dtype: str, output: Path | None) -> None:
    """Refuse an unusable --save folder, --save-dtype or -o path before any work."""
    from sparsedebug.core.io import check_output
    from sparsedebug.quality.save import check_save_target
    if save is not None:
        check_save_target(save, save_dtype)
    if output is not None:
        check_output(output, "-o")


def _methods(given: list[str] | None) -> list[Method]:
    chosen: list[Method] = []
    for name in given or list(METHODS):
        known = [method for method in METHODS if method == name]
        if not known:
            raise UserError(f"--method {name!r}: expected one of {', '.join(METHODS)}")
        if known[0] not in chosen:
            chosen.append(known[0])
    return chosen


def _note_short_text(study: QualityStudy, evaluation: int, calibration: int) -> None:
    """Say on stderr when the text held fewer tokens than asked (the record has what was used)."""
    split = study.split
    for part, used, asked in (("evaluation", split.evaluation_tokens, evaluation), ("calibration", split.calibration_tokens, calibration)):
        if used < asked:
            _log(f"note: {study.text.source} gave {used} {part} tokens, fewer than the {asked} asked; all of them were used")


def _log(message: str) -> None:
    err_console().print(message, markup=False, highlight=False)


def _run_with_progress(loaded: LoadedModel, corpus: Corpus, request: StudyRequest, *, quiet: bool) -> QualityStudy:
    """The study with one progress bar per row on a terminal's stderr, else one line per row started."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from sparsedebug.quality.study import run_study

    stderr = err_console()
    live = stderr.is_terminal and not quiet
    with Progress(
        TextColumn("{task.description:<28}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr, disable=not live,
    ) as bars:  # fmt: skip
        tasks: dict[str, TaskID] = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bars.add_task(label, total=total)
                if not live and not quiet:
                    _log(f"quality: {label}")
            bars.update(tasks[label], completed=done, total=total)

        return run_study(loaded, corpus, request, progress)


def register(app: typer.Typer) -> None:
    """Add `quality` to the app."""
    app.command("quality")(quality)
