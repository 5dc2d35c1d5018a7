"""What the stage tests share: layer roles and pooling, per-iteration counts, the stage status, formatting.

Identical layers (same role in every block, same op, shape, dtype and path in both runs)
are pooled when one alone has too few samples: their samples are exchangeable when
nothing changed. The per-layer tests of one stage hold the family at ``alpha`` with
Holm's step-down over the ``m`` layers or groups tested (:func:`holm_levels`), so testing
many layers on a noisy machine does not manufacture a finding.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from sparsedebug.core.judgement import judge
from sparsedebug.core.paired import enough_pairs
from sparsedebug.core.stats import SampleComparison, enough_samples, median
from sparsedebug.locate.reference import samples_block, session_block
from sparsedebug.records.findings import LayerFinding, MetricFinding, StageStatus
from sparsedebug.records.notes import NoteValue
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import DEFAULT_MIN_SAMPLES, JudgementRule


def finding_signature(finding: LayerFinding) -> str:
    """What makes two findings "the same divergence": kind, plus the fallback reason or the layer role."""
    if finding.kind == "fallback":
        return f"fallback:{finding.reason}"
    if finding.kind in ("slower", "precision", "idle_grew"):
        return f"{finding.kind}:{group_key(finding.layer)}"
    return finding.kind


_CALL_ORDINAL = re.compile(r"#\d+(?=\s|$)")


def group_key(name: str) -> str:
    """Role of a layer across blocks: numeric path parts become ``{i}`` (``layers.3.mlp.up_proj`` -> ``layers.{i}.mlp.up_proj``).

    So do the call ordinals that name layers of unannotated traces
    (``linear#3 [11008x4096]`` -> ``linear#{i} [11008x4096]``: every call of that op
    with that shape in an iteration).
    """
    dotted = ".".join("{i}" if part.isdigit() else part for part in name.split("."))
    return _CALL_ORDINAL.sub("#{i}", dotted)


def iteration_count(run: RunRecord) -> int:
    """How many forward iterations a run recorded (at least 1)."""
    return max(len(run.outcome.latency_samples_ms), len(run.schedule.span_samples_ms), 1)


def calls_per_iteration(samples: Sequence[float], iterations: int) -> int:
    """How many calls per iteration a layer's samples hold (1 when fewer samples than iterations)."""
    if len(samples) >= iterations and iterations > 0:
        return max(1, round(len(samples) / iterations))
    return 1


def ms_per_iteration(samples: Sequence[float], run: RunRecord) -> float:
    """A layer's kernel time in one iteration of ``run``: its median per-call time times its calls per iteration."""
    return median(samples) * calls_per_iteration(samples, iteration_count(run)) if samples else 0.0


def positive(values: Iterable[float], floor: float = 1e-9) -> list[float]:
    """The values clamped to ``floor``: ratio tests need positive samples."""
    return [max(float(v), floor) for v in values]


def cmp_values(c: SampleComparison) -> dict[str, NoteValue]:
    """A comparison's figures as note values: median ratio, its interval, medians and sample counts."""
    return {
        "ratio": c.ratio, "ci_low": c.ci_low, "ci_high": c.ci_high, "base_p50": c.base_median, "cand_p50": c.cand_median,
        "n_base": c.n_base, "n_cand": c.n_cand,
    }


def cmp_lists(labels: Sequence[str], comps: Sequence[SampleComparison]) -> dict[str, NoteValue]:
    """Several labelled comparisons as note values: ``layers`` and their ``ratio``; ``with_ci`` names those that have an
    interval, ``ci_low`` and ``ci_high`` are theirs, in that order."""
    known = [(label, c) for label, c in zip(labels, comps, strict=True) if c.ci_low is not None and c.ci_high is not None]
    return {
        "layers": list(labels),
        "ratio": [c.ratio for c in comps],
        "with_ci": [label for label, _ in known],
        "ci_low": [float(c.ci_low or 0.0) for _, c in known],
        "ci_high": [float(c.ci_high or 0.0) for _, c in known],
    }


def undecided_regression(c: SampleComparison) -> bool:
    """Too few samples for a rank test, but the ratio already looks like a regression."""
    return not c.enough_samples and c.ratio >= c.min_effect


def undecided_improvement(c: SampleComparison) -> bool:
    """Too few samples for a rank test, but the ratio already looks like an improvement."""
    return not c.enough_samples and c.ratio <= 1.0 / c.min_effect


def stage_status(layers: list[LayerFinding], metrics: list[MetricFinding], *, intended_any: bool = False) -> StageStatus:
    """A statistical stage's status from its findings and metrics: divergent, improved, undecided, expected or same."""
    if any(f.regression for f in layers) or any(m.comparison.direction == "slower" and m.comparison.persistent for m in metrics):
        return "divergent"
    improved = any(f.kind in ("faster", "idle_shrank") and f.comparison is not None and f.comparison.persistent for f in layers)
    if improved or any(m.comparison.direction == "faster" and m.comparison.persistent for m in metrics):
        return "improved"
    if any(undecided_regression(m.comparison) for m in metrics):
        return "undecided"
    if intended_any:
        return "expected"
    return "same"


def _pooled_groups(names: Iterable[str]) -> dict[str, list[str]]:
    """Layer names by role (``group_key``)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name in names:
        groups[group_key(name)].append(name)
    return groups


def _same_structure(names: list[str], base: RunRecord, cand: RunRecord) -> bool:
    """Pooling is legitimate only across layers doing identical work on the same path in both runs."""
    for run in (base, cand):
        graph = {layer.name: layer for layer in run.graph.layers}
        lower = {layer.name: layer for layer in run.lower.layers}
        signatures = set()
        for name in names:
            g, lo = graph.get(name), lower.get(name)
            signatures.add(
                (
                    None if g is None else (g.op, tuple(g.weight_shape or ()), tuple(g.input_shape or ()), g.dtype, g.intended),
                    None if lo is None else (lo.path, lo.kernel_class),
                )
            )
        if len(signatures) != 1:
            return False
    return True


def compare_layers(
    base_samples: dict[str, list[float]],
    cand_samples: dict[str, list[float]],
    base: RunRecord,
    cand: RunRecord,
    alpha: float,
    min_effect: float,
    transform_offset: dict[str, float] | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
) -> list[tuple[str, list[str], SampleComparison]]:
    """Compare per layer; pool identical layers of one role when a layer alone has too few samples.

    Two runs of one interleaved session (:func:`sparsedebug.locate.reference.session_block`)
    are compared by balanced blocks of rounds wherever each member has the same whole
    number of samples per round on both sides (:func:`sparsedebug.core.paired.compare_timings`),
    else as two samples.

    Many layers are tested at once, so the family of ``m`` comparisons is held at
    ``alpha`` by Holm's step-down (:func:`holm_levels`): the comparison with the
    ``i``-th smallest p-value is tested at ``alpha / (m - i + 1)`` while every smaller
    one was rejected; the chance that any layer of an unchanged run is flagged stays
    below ``alpha``. Each comparison's ``alpha`` is the level it was tested at, and its
    reason says so.
    """
    common = [name for name in cand_samples if name in base_samples and base_samples[name] and cand_samples[name]]
    offset = transform_offset or {}
    session = session_block(base, cand)
    rounds = iteration_count(base)

    def values(samples: Sequence[float], name: str) -> list[float]:
        return positive(v + offset.get(name, 0.0) for v in samples)

    def block_of(members: list[str]) -> int | None:
        """Samples per balanced block when every member is paired round for round on both sides (the same calls per round)."""
        blocks = {samples_block(session, base_samples[m], rounds) for m in members}
        blocks |= {samples_block(session, cand_samples[m], rounds) for m in members}
        lengths_match = all(len(base_samples[m]) == len(cand_samples[m]) for m in members)
        return next(iter(blocks)) if len(blocks) == 1 and lengths_match else None

    def can_reach(members: list[str], level: float) -> bool:
        block = block_of(members)
        if block is not None:
            return enough_pairs(sum(len(cand_samples[m]) // block for m in members), level)
        return enough_samples(sum(len(base_samples[m]) for m in members), sum(len(cand_samples[m]) for m in members), level)

    # Which units to test: a layer alone when its samples can reach the family level, else its pooled role.
    family = alpha / max(len(common), 1)
    units: list[tuple[str, list[str]]] = []
    pending: list[str] = []
    for name in common:
        if can_reach([name], family):
            units.append((name, [name]))
        else:
            pending.append(name)
    for key, members in _pooled_groups(pending).items():
        if len(members) > 1 and _same_structure(members, base, cand):
            units.append((key, members))
        else:
            units.extend((name, [name]) for name in members)

    def compare(members: list[str], level: float) -> SampleComparison:
        pooled_b = [v for m in members for v in values(base_samples[m], m)]
        pooled_c = [v for m in members for v in values(cand_samples[m], m)]
        segments = [len(base_samples[m]) for m in members]
        rule = JudgementRule(alpha=level, factor=min_effect, min_samples=min_samples)
        return judge(pooled_b, pooled_c, rule, block=block_of(members), segments=segments)

    first = [compare(members, alpha / max(len(units), 1)) for _, members in units]
    levels = holm_levels([c.p_value for c in first], alpha)
    out: list[tuple[str, list[str], SampleComparison]] = []
    for (label, members), comp, level in zip(units, first, levels, strict=True):
        if level != comp.alpha:
            comp = compare(members, level)
        if len(units) > 1:
            comp = comp.model_copy(update={"holm_level": level, "holm_tests": len(units)})
        out.append((label, members, comp))
    return out


def holm_levels(p_values: Sequence[float | None], alpha: float) -> list[float]:
    """Holm's step-down: the level each of ``m`` tests is judged at so that the family holds ``alpha``.

    Sorted by p-value (a test that could not run counts as p = 1), the ``i``-th smallest
    (1-based) gets ``alpha / (m - i + 1)`` as long as every smaller p was within its own
    level; from the first that is not, every later test keeps that stopping level (none
    of them can be rejected). Uniformly more powerful than Bonferroni's ``alpha / m``, with
    the same family-wise error bound.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: 1.0 if p_values[i] is None else float(p_values[i] or 0.0))
    levels = [alpha / max(m, 1)] * m
    stopped: float | None = None
    for rank, index in enumerate(order):
        level = alpha / (m - rank)
        if stopped is None:
            p = p_values[index]
            levels[index] = level
            if p is None or p > level:
                stopped = level
        else:
            levels[index] = stopped
    return levels
