"""The quality study: dense against every method x pattern x layer selection, on real text.

A decoder is scored by perplexity over the evaluation windows; an encoder by
how closely the pruned model's sentence embeddings agree with the dense ones
(mean and minimum cosine, nearest-neighbour agreement). Every pruned layer's
output error is measured on the evaluation inputs it sees in the pruned model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern
from sparsedebug.kernels.pruning import DEFAULT_BLOCK, DEFAULT_DAMPING, Method
from sparsedebug.quality.save import check_save_target, save_pruned
from sparsedebug.records.quality import (
    LayerError,
    Metrics,
    ModelInfo,
    PruningBlock,
    QualityRow,
    QualityStudy,
    TextInfo,
)
from sparsedebug.sources.models.base import Array, Batch, Hook, Linear
from sparsedebug.sources.models.bert import BertEncoder
from sparsedebug.sources.models.data import StudyData, prepare_data
from sparsedebug.sources.models.llama import LlamaDecoder
from sparsedebug.sources.models.load import LoadedModel
from sparsedebug.sources.models.metrics import LayerErrorMeter, embedding_agreement, perplexity
from sparsedebug.sources.models.prune import prune_model
from sparsedebug.sources.models.select import check_pattern_fits, select_layers
from sparsedebug.sources.models.text import Corpus, python_version

# Called with (row label, steps done, steps total).
Progress = Callable[[str, int, int], None]

# Most tokens per evaluation forward pass (bounds memory).
_EVAL_CHUNK = {"decoder": 4096, "encoder": 8192}


@dataclass(frozen=True)
class StudyRequest:
    """What to compare; sizes of None take the architecture's defaults."""

    methods: Sequence[Method]
    patterns: Sequence[Pattern]
    selections: Sequence[str] = ("all",)
    eval_tokens: int | None = None
    calibration_tokens: int | None = None
    damping: float = DEFAULT_DAMPING
    block_size: int = DEFAULT_BLOCK
    save_dir: Path | None = None
    save_dtype: str = "fp32"


@dataclass
class _Dense:
    metrics: Metrics
    nll: npt.NDArray[np.float64] | None = None
    embeddings: Array | None = None
    seconds: float = 0.0


@dataclass
class _Evaluation:
    metrics: Metrics
    errors: dict[str, float] = field(default_factory=dict)


def run_study(loaded: LoadedModel, corpus: Corpus, request: StudyRequest, progress: Progress | None = None) -> QualityStudy:
    """Measure the dense model, then every method x pattern x selection, on ``corpus``."""
    if not request.methods or not request.patterns:
        raise UserError("quality: give at least one --method and one --pattern")
    if request.save_dir is not None:
        check_save_target(request.save_dir, request.save_dtype)
    selections = {sel: select_layers(sel, loaded.model.linears.values()) for sel in request.selections}
    for layers in selections.values():
        for pattern in request.patterns:
            check_pattern_fits(layers, pattern)
    data = prepare_data(loaded, corpus, request.eval_tokens, request.calibration_tokens)
    report = progress or (lambda label, done, total: None)
    dense = _dense(loaded, data, report)
    rows = [QualityRow(label="dense", metrics=dense.metrics, delta=_delta(dense.metrics, dense.metrics), seconds=dense.seconds)]
    for selection, layers in selections.items():
        for pattern in request.patterns:
            for method in request.methods:
                rows.append(_variant(loaded, data, dense, request, method, pattern, selection, layers, report))
    return QualityStudy(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        model=_model_info(loaded),
        text=TextInfo(source=corpus.source, sha256=corpus.sha256, chars=len(corpus.text), python_version=python_version()),
        split=data.split,
        metric="perplexity" if loaded.model.kind == "decoder" else "cosine_mean",
        rows=rows,
    )


def _variant(
    loaded: LoadedModel,
    data: StudyData,
    dense: _Dense,
    request: StudyRequest,
    method: Method,
    pattern: Pattern,
    selection: str,
    layers: Sequence[Linear],
    report: Progress,
) -> QualityRow:
    model = loaded.model
    label = f"{method} {pattern} {selection}"
    calibrated = method != "magnitude"
    steps = (model.blocks if calibrated else 0) + len(data.evaluation.split(_EVAL_CHUNK[model.kind]))
    start = time.perf_counter()
    pruned = prune_model(
        model,
        layers,
        pattern,
        method,
        data.calibration if calibrated else None,
        damping=request.damping,
        block_size=request.block_size,
        progress=lambda done, total: report(label, done, steps),
    )
    calibration_seconds = time.perf_counter() - start
    offset = model.blocks if calibrated else 0
    result = _evaluate(loaded, data.evaluation, dense, pruned, lambda done: report(label, offset + done, steps))
    seconds = time.perf_counter() - start
    block = PruningBlock(
        method=method,
        pattern=str(pattern),
        layers=selection,
        calibration_text=data.source if calibrated else None,
        calibration_unit=data.split.unit if calibrated else None,
        calibration_units=data.split.calibration_units if calibrated else 0,
        calibration_tokens=data.split.calibration_tokens if calibrated else 0,
        damping=request.damping if method == "sparsegpt" else None,
        block_size=request.block_size if method == "sparsegpt" else None,
    )
    row = QualityRow(
        label=label,
        pruning=block,
        pruned_layers=len(layers),
        sparsity=_sparsity(loaded, pruned),
        metrics=result.metrics,
        delta=_delta(result.metrics, dense.metrics),
        seconds=seconds,
        calibration_seconds=calibration_seconds,
        layer_errors=[
            LayerError(name=layer.name, role=layer.role, relative_error=result.errors.get(layer.name, 0.0)) for layer in layers
        ],
    )
    if request.save_dir is not None:
        path = save_pruned(request.save_dir, loaded, row, pruned, request.save_dtype)
        row = row.model_copy(update={"saved": str(path)})
    return row


def _dense(loaded: LoadedModel, data: StudyData, report: Progress) -> _Dense:
    start = time.perf_counter()
    chunks = len(data.evaluation.split(_EVAL_CHUNK[loaded.model.kind]))
    out = _forward(loaded, data.evaluation, None, None, lambda done: report("dense", done, chunks))
    seconds = time.perf_counter() - start
    if isinstance(out, tuple):
        nll, _ = out
        return _Dense(Metrics(perplexity=perplexity(nll)), nll=nll, seconds=seconds)
    return _Dense(Metrics(cosine_mean=1.0, cosine_min=1.0, neighbour_agreement=1.0), embeddings=out, seconds=seconds)


def _evaluate(
    loaded: LoadedModel, batch: Batch, dense: _Dense, pruned: Mapping[str, Array], step: Callable[[int], None]
) -> _Evaluation:
    deltas = {name: weight - loaded.model.weight(name) for name, weight in pruned.items()}
    meter = LayerErrorMeter(deltas)
    out = _forward(loaded, batch, pruned, meter, step)
    if isinstance(out, tuple):
        nll, _ = out
        metrics = Metrics(perplexity=perplexity(nll))
    else:
        assert dense.embeddings is not None
        agreement = embedding_agreement(dense.embeddings, out)
        metrics = Metrics(
            cosine_mean=agreement.cosine_mean, cosine_min=agreement.cosine_min, neighbour_agreement=agreement.neighbour_agreement
        )
    return _Evaluation(metrics, meter.relative_errors())


def _forward(
    loaded: LoadedModel, batch: Batch, overrides: Mapping[str, Array] | None, hook: Hook | None, step: Callable[[int], None]
) -> tuple[npt.NDArray[np.float64], None] | Array:
    """Decoder: (next-token NLL, None); encoder: sentence embeddings. Runs in chunks of whole sequences."""
    model = loaded.model
    parts: list[npt.NDArray[np.float64]] = []
    embeddings: list[Array] = []
    for index, chunk in enumerate(batch.split(_EVAL_CHUNK[model.kind])):
        h = model.hidden(chunk, overrides, hook)
        if isinstance(model, LlamaDecoder):
            parts.append(model.token_nll(h, chunk))
        elif isinstance(model, BertEncoder):
            embeddings.append(model.sentence_embeddings(h, chunk))
        step(index + 1)
    if isinstance(model, LlamaDecoder):
        return np.concatenate(parts), None
    return np.concatenate(embeddings)


def _delta(metrics: Metrics, dense: Metrics) -> Metrics:
    values: dict[str, float | None] = {}
    for name in Metrics.model_fields:
        mine, base = getattr(metrics, name), getattr(dense, name)
        values[name] = None if mine is None or base is None else mine - base
    return Metrics(**values)


def _sparsity(loaded: LoadedModel, pruned: Mapping[str, Array]) -> float:
    total, zeros = 0, 0
    for name in loaded.model.linears:
        weight = pruned.get(name, loaded.model.weight(name))
        total += weight.size
        zeros += int(weight.size - np.count_nonzero(weight))
    return zeros / total if total else 0.0


def _model_info(loaded: LoadedModel) -> ModelInfo:
    model = loaded.model
    return ModelInfo(
        name=loaded.name,
        source=loaded.source,
        architecture=loaded.architecture,
        kind=model.kind,
        weights=loaded.weights,
        parameters=model.parameters,
        blocks=model.blocks,
        linear_layers=len(model.linears),
    )
