"""Turn a corpus into the study's evaluation and calibration batches, for the model's tokenizer."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsedebug.core.budget import MAX_TEXT_TOKENS
from sparsedebug.core.errors import UserError
from sparsedebug.records.quality import SplitInfo
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.load import LoadedModel
from sparsedebug.sources.models.text import (
    Corpus,
    sentences,
    split_sentences,
    split_windows,
    spread,
)

# How the text is split into evaluation and calibration parts, by id (render.words.targets.SPLIT_RULES says it in words):
# decoders take consecutive token windows, even-numbered for evaluation; encoders take prose sentences by the parity
# of their sha256's first byte.
WINDOW_RULE = "windows_even_odd"
SENTENCE_RULE = "sentences_sha256_parity"


@dataclass(frozen=True)
class StudyData:
    """Packed evaluation and calibration batches and how they were cut."""

    evaluation: Batch
    calibration: Batch
    split: SplitInfo
    source: str


def prepare_data(loaded: LoadedModel, corpus: Corpus, eval_tokens: int | None, calibration_tokens: int | None) -> StudyData:
    """Evaluation and calibration batches of about the requested sizes (architecture defaults when None).

    Calibration above the architecture's cap is refused: it would break the
    study's time target. A text too short for one evaluation and one
    calibration part is a ``UserError``.
    """
    defaults = loaded.defaults
    evaluation = defaults.eval_tokens if eval_tokens is None else eval_tokens
    calibration = defaults.calibration_tokens if calibration_tokens is None else calibration_tokens
    if evaluation < 1 or calibration < 1:
        raise UserError("quality: --tokens and --calibration-tokens must be at least 1")
    if evaluation > MAX_TEXT_TOKENS:
        raise UserError(f"evaluation tokens {evaluation:,} (--tokens, model.eval_tokens): above the limit of {MAX_TEXT_TOKENS:,}")
    if calibration > defaults.calibration_cap:
        raise UserError(
            f"--calibration-tokens {calibration}: above the cap of {defaults.calibration_cap} for {loaded.architecture} models"
        )
    if loaded.model.kind == "decoder":
        return _windows(loaded, corpus, evaluation, calibration)
    return _sentences(loaded, corpus, evaluation, calibration)


def _windows(loaded: LoadedModel, corpus: Corpus, evaluation: int, calibration: int) -> StudyData:
    window = loaded.defaults.window
    ids = loaded.tokenizer.encode(corpus.text).ids
    split = split_windows(ids, window)
    if not split.evaluation or not split.calibration:
        raise UserError(
            f"{corpus.source}: {len(ids)} tokens make fewer than two windows of {window}; "
            "need one for evaluation and one for calibration"
        )
    eval_windows = spread(split.evaluation, math.ceil(evaluation / window))
    cal_windows = spread(split.calibration, math.ceil(calibration / window))
    info = SplitInfo(
        unit="window",
        window_tokens=window,
        rule=WINDOW_RULE,
        evaluation_available=len(split.evaluation),
        calibration_available=len(split.calibration),
        evaluation_units=len(eval_windows),
        evaluation_tokens=len(eval_windows) * window,
        calibration_units=len(cal_windows),
        calibration_tokens=len(cal_windows) * window,
    )
    return StudyData(Batch.of(eval_windows), Batch.of(cal_windows), info, corpus.source)


def _sentences(loaded: LoadedModel, corpus: Corpus, evaluation: int, calibration: int) -> StudyData:
    eval_part, cal_part = split_sentences(sentences(corpus.text))
    eval_ids = _take(loaded, eval_part, evaluation)
    cal_ids = _take(loaded, cal_part, calibration)
    if len(eval_ids) < 3 or not cal_ids:
        raise UserError(
            f"{corpus.source}: {len(eval_part)} evaluation and {len(cal_part)} calibration sentences; "
            "need at least 3 and 1 (prose sentences of 5-60 words)"
        )
    truncation = loaded.tokenizer.truncation
    info = SplitInfo(
        unit="sentence",
        window_tokens=int(truncation["max_length"]) if truncation else loaded.defaults.window,
        rule=SENTENCE_RULE,
        evaluation_available=len(eval_part),
        calibration_available=len(cal_part),
        evaluation_units=len(eval_ids),
        evaluation_tokens=sum(map(len, eval_ids)),
        calibration_units=len(cal_ids),
        calibration_tokens=sum(map(len, cal_ids)),
    )
    return StudyData(Batch.of(eval_ids), Batch.of(cal_ids), info, corpus.source)


def _take(loaded: LoadedModel, part: list[str], budget: int) -> list[list[int]]:
    """Sentences in order until their tokens reach ``budget``."""
    out: list[list[int]] = []
    total = 0
    for start in range(0, len(part), 256):
        for encoding in loaded.tokenizer.encode_batch(part[start : start + 256]):
            if total >= budget:
                return out
            out.append(list(encoding.ids))
            total += len(encoding.ids)
    return out
