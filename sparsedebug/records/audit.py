"""The checkpoint audit's record: per tensor its N:M compliance and whether the backend would run it sparse."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sparsedebug.records.base import FACTS_SCHEMA_VERSION, Record
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.notes import Note
from sparsedebug.records.stacks import Citation

# compliant: every group fits the pattern; violations: mostly compliant (meant sparse) but some groups break it;
# dense: most groups break it (never pruned); shape: in-features not a multiple of M; not_a_matrix: a vector or a
# higher-rank tensor (norms, biases, convolutions).
TensorStatus = Literal["compliant", "violations", "dense", "shape", "not_a_matrix"]


# What a stack finding is about: a feature removed at the version, no sparse path in that version, the consumer op not
# lowered sparse, a dtype or layout without a sparse kernel, K or N off the required alignment, -0.0 that a bitwise
# compressor counts as non-zero, groups that break the pattern, and the caveats (epilogue, tactic selection, token
# count, compute capability, a version other than the one measured).
StackRule = Literal[
    "removed", "version", "not_lowered", "dtype", "layout", "alignment", "negative_zero", "pattern", "epilogue",
    "tactic", "tokens", "capability", "measured",
]


class StackFinding(Record):
    """One reason a tensor would not run sparse on a stack (or a caveat on its sparse path), with its source."""

    rule: StackRule
    # The finding's figures and names (``stack.*`` notes; render.words.signoff words them).
    facts: Note
    rows: list[int] = Field(default_factory=list, description="Up to five weight rows concerned, when the rule is about rows.")
    cite: list[Citation] = Field(default_factory=list)


class StackVerdict(Record):
    """Whether one tensor would run sparse on the stack at the version given, and why not."""

    verdict: Literal["sparse", "eligible", "dense", "unknown"] = Field(
        description="eligible: the stack may run it sparse, but keeps a sparse tactic only when it times faster; "
        "unknown: a fact that decides it holds for versions the sources do not state."
    )
    path: str | None = Field(None, description="The stack path (profile path id) it would run on, or the closest one.")
    role: str | None = Field(None, description="Where the linear sits (mlp, attention, lm_head, other), from its name.")
    consumer: str = Field(description="The op that reads the tensor, from its name: linear, embedding, conv.")
    findings: list[StackFinding] = Field(default_factory=list, description="What keeps it dense (or leaves it unknown).")
    caveats: list[StackFinding] = Field(default_factory=list, description="Conditions on a sparse path the checkpoint cannot settle.")


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
    # Why the backend runs it dense, as a coded fact (text in files written before issue 39).
    backend_detail: Note | None = None
    backend_judged: Literal["as_stored", "once_pruned"] | None = Field(
        None, description="as_stored: the weights as they are; once_pruned: a dense tensor, judged as if pruned to the pattern."
    )
    negative_zeros: int = Field(0, description="Elements stored as -0.0 (sign bit set, every other bit clear; 0x80 for fp8).")
    negative_zero_rows: list[int] = Field(default_factory=list, description="Up to five rows holding a -0.0.")
    bitwise_violating_groups: int | None = Field(
        None, description="Groups that comply by value but break the pattern once -0.0 counts as non-zero (a bitwise compressor)."
    )
    bitwise_violating_rows: list[int] = Field(default_factory=list, description="Up to five rows holding such a group.")
    stack: StackVerdict | None = Field(None, description="Set with --stack: the verdict of that stack at that version.")


class CheckpointAudit(Record):
    """Every tensor of one checkpoint against one N:M pattern and one backend profile."""

    # 2: stack findings hold notes, not sentences.
    schema_version: int = FACTS_SCHEMA_VERSION
    oldest_readable: ClassVar[int] = FACTS_SCHEMA_VERSION
    kind: Literal["checkpoint_audit"] = "checkpoint_audit"
    file: FileDigest
    pattern: str
    backend: str
    meant_sparse_threshold: float = Field(description="A tensor with at least this share of compliant groups is taken as meant to be sparse.")
    tensors: list[TensorAudit]
    counts: dict[str, int] = Field(description="Tensors by status.")
    failing: list[str] = Field(description="Tensors meant to be sparse that have violating groups (what --check fails on).")
    negative_zero_tensors: list[str] = Field(default_factory=list, description="Tensors holding -0.0.")
    stack: str | None = Field(None, description="--stack as given, NAME==VERSION.")
    stack_title: str | None = None
    stack_file: FileDigest | None = Field(None, description="The stack profile file the verdicts come from.")
    stack_counts: dict[str, int] = Field(default_factory=dict, description="Matrices by stack verdict.")
    stack_failing: list[str] = Field(
        default_factory=list, description="Tensors meant to be sparse that the stack would not run sparse (what --check also fails on with --stack)."
    )
