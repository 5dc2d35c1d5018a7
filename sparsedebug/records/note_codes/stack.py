"""Note codes ``stack.*``: a backend stack's limits on a checkpoint: the values each carries (``records.note_codes``)."""

from __future__ import annotations

from sparsedebug.records.note_codes.facts import NoteFacts, Versions


class StackCapability(NoteFacts):
    """``stack.capability``."""

    CODES = ("stack.capability",)
    capability: str


class StackEpilogue(NoteFacts):
    """``stack.epilogue``."""

    CODES = ("stack.epilogue",)
    epilogue: str


class StackGroupsBreak(NoteFacts):
    """``stack.groups_break``."""

    CODES = ("stack.groups_break",)
    pattern: str


class StackKAlignment(NoteFacts):
    """``stack.k_alignment``."""

    CODES = ("stack.k_alignment",)
    dtype: str
    k: int
    min: int
    multiple: int
    path: str


class StackKNotMultiple(NoteFacts):
    """``stack.k_not_multiple``."""

    CODES = ("stack.k_not_multiple",)
    k: int
    m: int


class StackLayout(NoteFacts):
    """``stack.layout``."""

    CODES = ("stack.layout",)
    dtype: str
    layout: str
    path: str


class StackLimit(NoteFacts):
    """``stack.limit``."""

    CODES = ("stack.limit",)
    profile_note: str


class StackLimitApplies(Versions):
    """``stack.limit_applies``."""

    CODES = ("stack.limit_applies",)
    profile_note: str
    removed_in: str | None


class StackLimitRange(Versions):
    """``stack.limit_range``."""

    CODES = ("stack.limit_range",)
    profile_note: str


class StackLimitUnknown(Versions):
    """``stack.limit_unknown``."""

    CODES = ("stack.limit_unknown",)
    profile_note: str
    version: str | None


class StackMeasured(NoteFacts):
    """``stack.measured``."""

    CODES = ("stack.measured",)
    measured_at: list[str]
    version: str | None


class StackNAlignment(NoteFacts):
    """``stack.n_alignment``."""

    CODES = ("stack.n_alignment",)
    dtype: str
    min: int
    multiple: int
    n: int
    path: str


class StackNegativeZero(NoteFacts):
    """``stack.negative_zero``."""

    CODES = ("stack.negative_zero",)
    count: int
    groups: int | None
    path: str
    pattern: str


class StackNoKernel(NoteFacts):
    """``stack.no_kernel``."""

    CODES = ("stack.no_kernel",)
    dtype: str
    dtypes: list[str]
    path: str


class StackOpNotLowered(NoteFacts):
    """``stack.op_not_lowered``."""

    CODES = ("stack.op_not_lowered",)
    op: str
    ops: list[str]
    path: str


class StackPattern(NoteFacts):
    """``stack.pattern``."""

    CODES = ("stack.pattern",)
    path: str
    pattern: str
    patterns: list[str]


class StackTactic(NoteFacts):
    """``stack.tactic``."""

    CODES = ("stack.tactic",)
    profile_note: str | None


class StackVersionOutside(Versions):
    """``stack.version_outside``."""

    CODES = ("stack.version_outside",)
    title: str
    version: str | None
