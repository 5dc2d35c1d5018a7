"""The quality study's record: model, text, split, and one row per pruned variant against dense."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.fingerprint import FileDigest


class ModelInfo(Record):
    """Which model, from where, pinned by the sha256 of its weights file."""

    name: str
    source: str = Field(description="package==version for a registered model, else the path given.")
    architecture: str
    kind: Literal["encoder", "decoder"]
    weights: FileDigest
    parameters: int
    blocks: int
    linear_layers: int


class TextInfo(Record):
    """The text every figure was measured on; the default text changes with the Python version."""

    source: str = Field(description="'pydoc_data.topics' or the --text path.")
    sha256: str
    chars: int
    python_version: str


class SplitInfo(Record):
    """How the text was cut into disjoint evaluation and calibration parts, and how much of each was used."""

    unit: Literal["window", "sentence"]
    window_tokens: int = Field(description="Tokens per window (decoder) or most tokens per sentence (encoder).")
    rule: str = Field(description="How the text was split, by id (windows_even_odd, sentences_sha256_parity).")
    evaluation_available: int = Field(description="Windows or sentences in the evaluation part.")
    calibration_available: int = Field(description="Windows or sentences in the calibration part.")
    evaluation_units: int
    evaluation_tokens: int
    calibration_units: int
    calibration_tokens: int


class Metrics(Record):
    """Quality figures: perplexity for a decoder; embedding agreement with dense for an encoder."""

    perplexity: float | None = Field(None, description="exp(mean next-token NLL) over the evaluation windows.")
    cosine_mean: float | None = Field(None, description="Mean cosine of each sentence's embedding to its dense one.")
    cosine_min: float | None = Field(None, description="Smallest such cosine.")
    neighbour_agreement: float | None = Field(
        None, description="Share of sentences whose nearest other sentence is the same as under the dense model."
    )


class LayerError(Record):
    """One pruned layer's output error on the evaluation inputs it saw in the pruned model."""

    name: str
    role: Literal["attention", "mlp"]
    relative_error: float = Field(description="||x (W_p - W)^T||_F / ||x W^T + b||_F over the evaluation tokens.")


class PruningBlock(Record):
    """How a variant was pruned: what a workload's pruning block records."""

    method: Literal["magnitude", "wanda", "sparsegpt"]
    pattern: str
    layers: str = Field(description="The selection: all, mlp, attention, or comma-separated name globs.")
    schedule: Literal["one-shot"] = "one-shot"
    calibration_text: str | None = Field(None, description="The text calibration ran on, as TextInfo.source names it (None for magnitude).")
    calibration_unit: Literal["window", "sentence"] | None = Field(None, description="What the calibration text was split into.")
    calibration_units: int = 0
    calibration_tokens: int = 0
    damping: float | None = Field(None, description="SparseGPT: fraction of the mean Hessian diagonal added.")
    block_size: int | None = Field(None, description="SparseGPT: columns per lazy-update block.")


class QualityRow(Record):
    """The dense baseline or one pruned variant."""

    label: str
    pruning: PruningBlock | None = Field(None, description="None for the dense baseline.")
    pruned_layers: int = 0
    sparsity: float = Field(0.0, description="Share of zero weights over every linear layer of the model.")
    metrics: Metrics
    delta: Metrics = Field(description="metrics minus the dense row's.")
    seconds: float = Field(description="Wall time of the variant: calibration, pruning and evaluation.")
    calibration_seconds: float = 0.0
    layer_errors: list[LayerError] = Field(default_factory=list)
    saved: str | None = Field(None, description="Path of the pruned safetensors written by --save.")


class QualityStudy(Record):
    """`sparsedebug quality`: quality of pruned variants against the dense model on real text."""

    # 2: the split rule is an id, not a sentence.
    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["quality_study"] = "quality_study"
    created_at: str
    model: ModelInfo
    text: TextInfo
    split: SplitInfo
    metric: Literal["perplexity", "cosine_mean"] = Field(description="The headline figure of the table.")
    rows: list[QualityRow] = Field(description="Dense first, then one row per method x pattern x selection.")
