"""Stack profiles: what a serving or compile stack runs sparse, for which versions, and where each fact comes from.

One YAML file per stack (``fixtures/stacks/*.yaml``, shipped as ``sparsedebug/_data/stacks``), validated
by :class:`StackProfile`. A profile lists its sparse *paths* (the kernels a 2:4 weight can reach, with the
dtype, layout, alignment, epilogue and shape conditions each needs) and its *limits* (a feature removed
from a version on, an op the stack does not lower sparse, a kernel that is only picked when it wins).
Every fact carries the version range it holds for and at least one citation: a release note, an issue
or pull request, or a shared H200 measurement (``fixtures/h200/...``). A bound nobody stated is left
``null``, never guessed; a fact whose range is not known is reported as a caveat, not as a verdict.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from sparsedebug.records.base import SCHEMA_VERSION, Record

# How a path's compressor tells a zero: ``bitwise`` counts any set bit (``-0.0`` is non-zero), ``value`` compares with
# 0.
ZeroTest = Literal["bitwise", "value"]

# The op that reads a checkpoint tensor, as the audit infers it from the tensor name.
ConsumerOp = Literal["linear", "embedding", "conv", "attention_score"]

# Where in a transformer block a linear sits, from its name (``mlp.up_proj``, ``self_attn.q_proj``...).
Role = Literal["mlp", "attention", "lm_head", "other"]


class Citation(Record):
    """Where a fact comes from."""

    source: str = Field(min_length=1, description="'vllm-project/vllm PR #36799', 'NVIDIA/TensorRT issue #3849', 'fixtures/h200/results.json support'.")
    says: str = Field(min_length=1, description="What the source states, in a sentence.")

    @field_validator("source")
    @classmethod
    def _traceable(cls, value: str) -> str:
        if not (re.search(r"#\d+", value) or value.startswith("fixtures/") or "release note" in value.lower()):
            raise ValueError(f"{value!r}: name an issue or PR number (#N), a release note, or a shared measurement (fixtures/...)")
        return value


class VersionRange(Record):
    """Versions a fact holds for: ``since`` inclusive, ``before`` exclusive; ``null`` where no source states a bound."""

    since: str | None = None
    before: str | None = None
    known: bool = Field(
        True,
        description="False when the sources do not say which versions the fact holds for (the audit reports it as a caveat).",
    )
    boundary: str | None = Field(None, description="What marks the bound when no version number is stated (a merge date).")
    measured_at: list[str] = Field(default_factory=list, description="Versions the fact was measured on (shared H200 artifacts).")


class Alignment(Record):
    """Shape conditions of one dtype on a path: both weight dimensions a multiple of ``multiple`` and at least ``min_rows`` x ``min_cols``."""

    multiple_rows: int = Field(ge=1, description="N (out features, weight rows) must be a multiple of this.")
    multiple_cols: int = Field(ge=1, description="K (in features, weight columns) must be a multiple of this.")
    min_rows: int = Field(1, ge=1)
    min_cols: int = Field(1, ge=1)


class SparsePath(Record):
    """One way a 2:4 weight runs sparse on the stack, and every condition it needs."""

    id: str = Field(min_length=1)
    title: str
    versions: VersionRange
    patterns: list[str] = Field(description="Sparsity patterns the kernels take ('2:4').")
    ops: list[ConsumerOp] = Field(description="Consumer ops the stack lowers onto this path.")
    dtypes: list[str] = Field(description="Weight dtypes (canonical short names) with a sparse kernel on this path.")
    alignment: dict[str, Alignment] = Field(
        default_factory=dict,
        description="Per dtype (conversion rules, also for a dtype that converts but has no matmul); a dtype absent here has no stated alignment.",
    )
    layout: str | None = Field(None, description="Operand layout the kernels need, e.g. 'A row-major sparse x B column-major dense'.")
    layout_dtypes: list[str] = Field(default_factory=list, description="Dtypes the layout condition applies to (all when empty).")
    epilogue: str | None = Field(None, description="Epilogue or output condition (e.g. 'INT8 output') the sparse tactic needs.")
    epilogue_dtypes: list[str] = Field(default_factory=list, description="Dtypes the epilogue condition applies to.")
    capability: str | None = Field(None, description="GPU compute capability the kernels run on, when a source says ('8.x').")
    selection: Literal["always", "fastest"] = Field(
        "always", description="always: an eligible weight runs sparse; fastest: the builder times sparse against dense and keeps the faster."
    )
    selection_note: str | None = Field(None, description="When the sparse tactic tends to win or lose (shape, tokens).")
    zero_test: ZeroTest | None = Field(None, description="How the compressor tells a zero; null when no source says.")
    trace_backends: list[str] = Field(
        default_factory=list, description="Backends a profiler trace shows for this path (the importer's dispatch backend: cusparselt, cutlass_sparse)."
    )
    cite: list[Citation] = Field(min_length=1)


class Limit(Record):
    """A fact that keeps weights off the sparse paths: a removal, an op not lowered, a shape with no sparse kernel."""

    id: str = Field(min_length=1)
    kind: Literal["removed", "not_lowered", "dtype_without_kernel", "tokens"]
    versions: VersionRange
    detail: str = Field(min_length=1, description="What happens, in the words of the source where possible.")
    dtypes: list[str] = Field(default_factory=list, description="Dtypes the limit applies to (all when empty).")
    roles: list[Role] = Field(default_factory=list, description="not_lowered: the linears it applies to (all when empty).")
    ops: list[ConsumerOp] = Field(default_factory=list, description="not_lowered: the consumer ops it applies to.")
    paths: list[str] = Field(default_factory=list, description="Paths (by id) it applies to (all when empty).")
    cite: list[Citation] = Field(min_length=1)


class StackProfile(Record):
    """One serving or compile stack, its sparse paths and its limits, each with versions and citations."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["stack_profile"] = "stack_profile"
    name: str = Field(min_length=1, description="What `--stack NAME==VERSION` names.")
    aliases: list[str] = Field(default_factory=list)
    title: str
    package: str | None = Field(None, description="The Python package or tool whose version is meant (torch, vllm, tensorrt).")
    paths: list[SparsePath] = Field(min_length=1)
    limits: list[Limit] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_paths(self) -> StackProfile:
        ids = [p.id for p in self.paths]
        if len(set(ids)) != len(ids):
            raise ValueError(f"path ids repeat: {ids}")
        for limit in self.limits:
            unknown = [p for p in limit.paths if p not in ids]
            if unknown:
                raise ValueError(f"limit {limit.id!r} names unknown path(s) {unknown}; known: {ids}")
        return self
