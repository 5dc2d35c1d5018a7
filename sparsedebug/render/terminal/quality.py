"""Render the quality study and the model registry as rich tables (pure functions of records)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.table import Table

from sparsedebug.records.quality import QualityRow, QualityStudy
from sparsedebug.render.words.targets import SPLIT_RULES


def _signed(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def _plain(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(number: int, unit: str) -> str:
    return f"{number} {unit}" if number == 1 else f"{number} {unit}s"


def _max_error(row: QualityRow) -> str:
    if not row.layer_errors:
        return "-"
    return f"{max(err.relative_error for err in row.layer_errors):.3f}"


def quality_table(study: QualityStudy) -> Table:
    """Dense first, then one row per variant: zeros, the metric and its delta against dense, worst layer error, time."""
    model, text, split = study.model, study.text, study.split
    table = Table(title=f"quality {model.name} ({model.source}) on {text.source}")
    table.add_column("variant", overflow="fold")
    table.add_column("zeros", justify="right")
    decoder = study.metric == "perplexity"
    names = ("perplexity", "vs dense") if decoder else ("cos mean", "vs dense", "cos min", "NN agree")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("max err", justify="right")
    table.add_column("time s", justify="right")
    for row in study.rows:
        m, d = row.metrics, row.delta
        first = row.pruning is None
        if decoder:
            cells = [_plain(m.perplexity, 2), "-" if first else _signed(d.perplexity, 2)]
        else:
            cells = [
                _plain(m.cosine_mean, 4),
                "-" if first else _signed(d.cosine_mean, 4),
                _plain(m.cosine_min, 4),
                _plain(m.neighbour_agreement, 3),
            ]
        table.add_row(row.label, f"{row.sparsity:.0%}", *cells, _max_error(row), f"{row.seconds:.1f}")
    table.caption = (
        f"Python {text.python_version}, text sha256 {text.sha256[:12]} ({text.chars} chars); "
        f"evaluation {_count(split.evaluation_units, split.unit)} ({split.evaluation_tokens} tokens), "
        f"calibration {_count(split.calibration_units, split.unit)} ({split.calibration_tokens} tokens); "
        f"split: {SPLIT_RULES.get(split.rule, split.rule)}; zeros: share of all linear weights; max err: largest per-layer relative output error; "
        "time: calibration + pruning + evaluation on this machine"
    )
    return table


def worst_layers_table(study: QualityStudy, top: int = 3) -> Table | None:
    """The ``top`` layers with the largest relative output error of every pruned variant (None when nothing was pruned)."""
    rows = [row for row in study.rows if row.layer_errors]
    if not rows:
        return None
    table = Table(title=f"largest layer output errors (top {top} per variant)")
    table.add_column("variant", overflow="fold")
    table.add_column("layer", overflow="fold")
    table.add_column("role")
    table.add_column("rel. error", justify="right")
    for row in rows:
        ranked = sorted(row.layer_errors, key=lambda err: err.relative_error, reverse=True)[:top]
        for index, err in enumerate(ranked):
            table.add_row(row.label if index == 0 else "", err.name, err.role, f"{err.relative_error:.3f}")
    return table


class ModelFacts(Protocol):
    """What the models table prints of a registry entry (``sources.models.registry.ModelSpec``)."""

    @property
    def name(self) -> str: ...
    @property
    def requirement(self) -> str: ...
    @property
    def architecture(self) -> str: ...
    @property
    def description(self) -> str: ...


def models_table(specs: Sequence[ModelFacts], cached: dict[str, str | None]) -> Table:
    """The registry: name, pinned package, architecture, what it is, and where the cache holds it."""
    table = Table(title="models")
    table.add_column("name")
    table.add_column("package")
    table.add_column("arch")
    table.add_column("description", overflow="fold")
    table.add_column("cached", overflow="fold")
    for spec in specs:
        where = cached.get(spec.name)
        table.add_row(spec.name, spec.requirement, spec.architecture, spec.description, where or "no (fetched on first use)")
    return table
