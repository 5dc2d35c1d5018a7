"""The checkpoint audit's record: per tensor its N:M compliance and whether the backend would run it sparse."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import SCHEMA_VERSION, Record
from sparsedebug.records.fingerprint import FileDigest

TensorStatus = Literal["compliant", "violations", "dense", "shape", "not_a_matrix"]
"""compliant: every group fits the pattern; violations: mostly compliant (meant sparse) but some groups
break it; dense: most groups break it (never pruned); shape: in-features not a multiple of M;
not_a_matrix: a vector or a higher-rank tensor (norms, biases, convolutions)."""


class TensorAudit(Record):
    """One tensor of the checkpoint."""

    name: str
    shape: list[int]
    dtype: str = Field(description="As the file declares it (canonical short name).")
    status: TensorStatus
    zero_fraction: float | None = Field(None, description="Share of exact zeros.")
    groups: int | None = None
    violating_groups: int | None = None
    violating_fraction: float | None = Field(None, description="Share of groups with more than N non-zeros among M.")
    first_violating_rows: list[int] = Field(default_factory=list, description="Up to five rows holding a violating group.")
    backend_path: Literal["sparse", "dense"] | None = Field(None, description="What the backend profile would run.")
    backend_reason: str | None = Field(None, description="Why dense, when dense.")
    backend_detail: str | None = None
    backend_judged: Literal["as_stored", "once_pruned"] | None = Field(
        None, description="as_stored: the weights as they are; once_pruned: a dense tensor, judged as if pruned to the pattern."
    )


class CheckpointAudit(Record):
    """Every tensor of one checkpoint against one N:M pattern and one backend profile."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["checkpoint_audit"] = "checkpoint_audit"
    file: FileDigest
    pattern: str
    backend: str
    meant_sparse_threshold: float = Field(description="A tensor with at least this share of compliant groups is taken as meant to be sparse.")
    tensors: list[TensorAudit]
    counts: dict[str, int] = Field(description="Tensors by status.")
    failing: list[str] = Field(description="Tensors meant to be sparse that have violating groups (what --check fails on).")
