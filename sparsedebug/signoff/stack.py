"""Would a checkpoint tensor run sparse on a given stack at a given version, and if not, why?

:func:`judge_on_stack` reads one stack profile (``sources/stacks.py``) and one tensor's facts (name,
consumer op, dtype, shape, layout, compliance by value and by bits) and returns a
:class:`~sparsedebug.records.audit.StackVerdict`: ``sparse`` on a named path, ``dense`` with every
reason (a removal at that version, no path in that version, the consumer op or the MLP not lowered
sparse, a dtype without a kernel, K or N off the alignment, ``-0.0`` a bitwise compressor counts as
non-zero, violating groups), or ``unknown`` when the fact that decides it holds for versions no source
states. Each finding cites where the fact comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sparsedebug.core.versions import in_range, same_release
from sparsedebug.kernels.masks import Pattern
from sparsedebug.records.audit import StackFinding, StackRule, StackVerdict
from sparsedebug.records.notes import NoteValue, note
from sparsedebug.records.stacks import ConsumerOp, Limit, Role, SparsePath, StackProfile, VersionRange

Applies = Literal["yes", "no", "unknown"]

# The finding rule a limit kind reports as.
_LIMIT_RULE: dict[str, StackRule] = {"removed": "removed", "not_lowered": "not_lowered", "dtype_without_kernel": "dtype", "tokens": "tokens"}

_EMBEDDING_MARKERS = ("embed", "wte", "wpe", "token_embd")
_CONV_MARKERS = ("conv",)
_MLP_MARKERS = ("mlp.", "ffn", "feed_forward", "intermediate.dense", "output.dense", "fc1", "fc2", "c_fc", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3")
_ATTENTION_MARKERS = ("attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv", "query", "key", "value")
_LM_HEAD_MARKERS = ("lm_head", "output.weight")
# GPT-2 style ``Conv1D`` weights, stored ``[in, out]``: the sparse operand would be column-major.
_TRANSPOSED_MARKERS = (".c_attn.", ".c_fc.", ".c_proj.")


def consumer_op(name: str) -> ConsumerOp:
    """The op that reads a tensor, from its name: embedding tables, convolutions, else a linear."""
    lowered = name.lower()
    if any(marker in lowered for marker in _EMBEDDING_MARKERS):
        return "embedding"
    if any(marker in lowered for marker in _CONV_MARKERS):
        return "conv"
    return "linear"


def linear_role(name: str) -> Role:
    """Where a linear sits in a transformer block, from its name."""
    lowered = name.lower()
    if any(marker in lowered for marker in _LM_HEAD_MARKERS):
        return "lm_head"
    if any(marker in lowered for marker in _ATTENTION_MARKERS):
        return "attention"
    if any(marker in lowered for marker in _MLP_MARKERS):
        return "mlp"
    return "other"


def weight_layout(name: str) -> Literal["row", "col"]:
    """``row`` for a PyTorch ``[out, in]`` weight (K contiguous, the sparse A operand row-major), ``col`` for GPT-2 ``Conv1D``."""
    return "col" if any(marker in f".{name.lower()}" for marker in _TRANSPOSED_MARKERS) else "row"


@dataclass(frozen=True)
class TensorFacts:
    """What the stack rules read about one 2-D tensor."""

    name: str
    dtype: str
    out: int
    k: int
    # compliant, violations, dense (judged once pruned) or shape (K not a multiple of M).
    status: str
    pattern: Pattern
    violating_rows: list[int] = field(default_factory=list)
    negative_zeros: int = 0
    negative_zero_rows: list[int] = field(default_factory=list)
    bitwise_violating_groups: int = 0
    bitwise_violating_rows: list[int] = field(default_factory=list)


def applies(versions: VersionRange, version: str | None) -> Applies:
    """Whether a fact holds at ``version``: unknown when its range is not known or no version was given."""
    if not versions.known:
        return "unknown"
    if version is None:
        return "yes" if versions.since is None and versions.before is None else "unknown"
    return "yes" if in_range(version, versions.since, versions.before) else "no"


def range_values(versions: VersionRange) -> dict[str, NoteValue]:
    """A version range as note values (``render.words.signoff.describe_range`` words them)."""
    return {"known": versions.known, "since": versions.since, "before": versions.before,
            "boundary": versions.boundary, "measured_at": list(versions.measured_at)}


def _limit_matches(limit: Limit, facts: TensorFacts, op: ConsumerOp, role: Role) -> bool:
    if limit.dtypes and facts.dtype not in limit.dtypes:
        return False
    if limit.roles and (op != "linear" or role not in limit.roles):
        return False
    return not (limit.ops and op not in limit.ops)


def _blockers(path: SparsePath, facts: TensorFacts, op: ConsumerOp, layout: str) -> list[StackFinding]:
    """Every reason ``facts`` would not run on ``path`` (empty: it would)."""
    out: list[StackFinding] = []
    cite = path.cite
    pattern = str(facts.pattern)
    if pattern not in path.patterns and f"{facts.pattern.n}:{facts.pattern.m}" not in path.patterns:
        out.append(StackFinding(rule="pattern", facts=note("stack.pattern", path=path.id, patterns=path.patterns, pattern=pattern), cite=cite))
    if op not in path.ops:
        out.append(StackFinding(rule="not_lowered", facts=note("stack.op_not_lowered", op=op, path=path.id, ops=[str(o) for o in path.ops]), cite=cite))
    if facts.dtype not in path.dtypes:
        out.append(StackFinding(rule="dtype", facts=note("stack.no_kernel", dtype=facts.dtype, path=path.id, dtypes=path.dtypes), cite=cite))
    align = path.alignment.get(facts.dtype)
    if align is not None:
        if facts.k % align.multiple_cols or facts.k < align.min_cols:
            out.append(StackFinding(rule="alignment", facts=note(
                "stack.k_alignment", k=facts.k, multiple=align.multiple_cols, min=align.min_cols, dtype=facts.dtype, path=path.id,
            ), cite=cite))  # fmt: skip
        if facts.out % align.multiple_rows or facts.out < align.min_rows:
            out.append(StackFinding(rule="alignment", facts=note(
                "stack.n_alignment", n=facts.out, multiple=align.multiple_rows, min=align.min_rows, dtype=facts.dtype, path=path.id,
            ), cite=cite))  # fmt: skip
    if path.layout is not None and layout == "col" and (not path.layout_dtypes or facts.dtype in path.layout_dtypes):
        out.append(StackFinding(rule="layout", facts=note("stack.layout", path=path.id, layout=path.layout, dtype=facts.dtype), cite=cite))
    if facts.status == "shape":
        out.append(StackFinding(rule="alignment", facts=note("stack.k_not_multiple", k=facts.k, m=facts.pattern.m), cite=cite))
    if facts.status == "violations":
        out.append(StackFinding(rule="pattern", facts=note("stack.groups_break", pattern=pattern), rows=facts.violating_rows, cite=cite))
    if path.zero_test == "bitwise" and facts.bitwise_violating_groups and facts.status != "dense":
        zero_cite = [c for c in cite if "-0.0" in c.says] or cite
        out.append(StackFinding(rule="negative_zero", facts=note(
            "stack.negative_zero", count=facts.negative_zeros, path=path.id, groups=facts.bitwise_violating_groups, pattern=pattern,
        ), rows=facts.bitwise_violating_rows, cite=zero_cite))  # fmt: skip
    return out


def _caveats(path: SparsePath, facts: TensorFacts, version: str | None) -> list[StackFinding]:
    out: list[StackFinding] = []
    if path.epilogue is not None and (not path.epilogue_dtypes or facts.dtype in path.epilogue_dtypes):
        out.append(StackFinding(rule="epilogue", facts=note("stack.epilogue", epilogue=path.epilogue), cite=path.cite))
    if path.selection == "fastest":
        out.append(StackFinding(rule="tactic", facts=note("stack.tactic", profile_note=path.selection_note), cite=path.cite))
    if path.capability is not None:
        out.append(StackFinding(rule="capability", facts=note("stack.capability", capability=path.capability), cite=path.cite))
    measured = path.versions.measured_at
    if measured and (version is None or not any(same_release(version, m) for m in measured)):
        out.append(StackFinding(rule="measured", facts=note("stack.measured", measured_at=list(measured), version=version), cite=path.cite))
    return out


def judge_on_stack(profile: StackProfile, version: str | None, facts: TensorFacts) -> StackVerdict:
    """The verdict of ``profile`` at ``version`` for one tensor, with every finding and caveat cited."""
    op = consumer_op(facts.name)
    role = linear_role(facts.name)
    layout = weight_layout(facts.name)
    findings: list[StackFinding] = []
    caveats: list[StackFinding] = []
    unknown = False
    blocked = False
    for limit in profile.limits:
        if not _limit_matches(limit, facts, op, role):
            continue
        state = applies(limit.versions, version)
        if state == "no":
            continue
        if limit.kind == "tokens":
            caveats.append(StackFinding(rule="tokens", facts=note("stack.limit", profile_note=limit.detail), cite=limit.cite))
            continue
        rule = _LIMIT_RULE[limit.kind]
        if state == "yes":
            removed_in = profile.name if limit.kind == "removed" and limit.versions.since else None
            findings.append(StackFinding(rule=rule, facts=note(
                "stack.limit_applies", profile_note=limit.detail, removed_in=removed_in, **range_values(limit.versions),
            ), cite=limit.cite))  # fmt: skip
            blocked = True
        elif limit.kind == "not_lowered":
            caveats.append(StackFinding(rule=rule, facts=note("stack.limit_range", profile_note=limit.detail, **range_values(limit.versions)), cite=limit.cite))
        else:
            findings.append(StackFinding(rule=rule, facts=note(
                "stack.limit_unknown", profile_note=limit.detail, version=version, **range_values(limit.versions),
            ), cite=limit.cite))  # fmt: skip
            unknown = True
    live: list[SparsePath] = []
    for path in profile.paths:
        state = applies(path.versions, version)
        if state == "no":
            findings.append(StackFinding(
                rule="version", facts=note("stack.version_outside", title=path.title, version=version, **range_values(path.versions)), cite=path.cite,
            ))  # fmt: skip
            continue
        if state == "unknown" and not path.versions.measured_at:
            unknown = True
        live.append(path)
    best: tuple[SparsePath, list[StackFinding]] | None = None
    for path in live:
        reasons = _blockers(path, facts, op, layout)
        if best is None or len(reasons) < len(best[1]):
            best = (path, reasons)
        if not reasons:
            break
    if best is None:
        return StackVerdict(verdict="unknown" if unknown and not blocked else "dense", role=role if op == "linear" else None, consumer=op, findings=findings, caveats=caveats)
    path, reasons = best
    findings.extend(reasons)
    if not reasons and not blocked:
        caveats.extend(_caveats(path, facts, version))
    else:
        caveats = []
    if blocked or reasons:
        verdict: Literal["sparse", "eligible", "dense", "unknown"] = "dense"
    elif unknown:
        verdict = "unknown"
    else:
        verdict = "eligible" if path.selection == "fastest" else "sparse"
    return StackVerdict(verdict=verdict, path=path.id, role=role if op == "linear" else None, consumer=op, findings=findings, caveats=caveats)
