"""Two run sets compared rank to rank: the straggler, and whether a change is uniform or confined.

**Straggler.** Collectives end together on every rank (a rank cannot leave an all-reduce before
the last one arrives), so the compute time from the end of a rank's previous collective to the
start of its next one says when it arrived, on its own clock: no cross-host clock alignment is
needed. Per instance of the dominant collective, each rank's lateness is its arrival minus the
median rank's; the straggler is the rank with the largest median lateness, when it is last in at
least ``STRAGGLER_LAST_SHARE`` of the instances and its median lateness is more than
``STRAGGLER_MIN_LATE`` of the median compute time between collectives. Any NCCL kernel naming
counts (``ncclKernel_*``, ``ncclDevKernel_*``): the importer classes them as communication.

**Confined or uniform.** Each rank's compute time per iteration is compared with its own baseline
rank. A rank whose ratio exceeds the median ratio of the ranks by more than ``CONFINED_MARGIN``
(or whose layers changed path while no other rank's did) holds a confined change; when no rank
does and every ratio is within the margin of the median, the change is uniform.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sparsedebug.core.errors import UserError
from sparsedebug.core.stats import median
from sparsedebug.records.notes import Note, note
from sparsedebug.records.ranks import RankChange, RankComparison, RankSet, RankSummary, Straggler

if TYPE_CHECKING:
    from sparsedebug.sources.runset.parse import OnRank

# Share of collective instances a rank must arrive last at to be named the straggler.
STRAGGLER_LAST_SHARE = 2 / 3

# Its median lateness, as a share of the median compute time between collectives.
STRAGGLER_MIN_LATE = 0.10

# Fewest collective instances (after the first, which has no predecessor) to name a straggler.
MIN_INSTANCES = 3

# How far above the ranks' median compute ratio a rank's own ratio must be to hold a confined change.
CONFINED_MARGIN = 0.10

# A layer whose kernel p50 grew by more than this on a rank counts among that rank's slowest layers.
GROWTH = 1.10


def straggler(rank_set: RankSet) -> Straggler | None:
    """The rank that arrives last at the dominant collective (see the module docstring); None when none does."""
    names = {r.dominant_collective for r in rank_set.ranks if r.dominant_collective is not None}
    if len(rank_set.ranks) < 2 or len(names) != 1:
        return None
    name = names.pop()
    arrivals = {r.rank: [c.since_previous_ms for c in r.collectives if c.since_previous_ms is not None] for r in rank_set.ranks}
    count = min(len(a) for a in arrivals.values())
    if count < MIN_INSTANCES:
        return None
    late: dict[int, list[float]] = {rank: [] for rank in arrivals}
    last: dict[int, int] = {rank: 0 for rank in arrivals}
    gaps: list[float] = []
    for k in range(count):
        at = {rank: values[k] for rank, values in arrivals.items()}
        middle = median(list(at.values()))
        gaps.append(middle)
        for rank, value in at.items():
            late[rank].append(value - middle)
        last[max(at, key=lambda rank: (at[rank], -rank))] += 1
    worst = max(late, key=lambda rank: (median(late[rank]), -rank))
    late_ms, share, typical = median(late[worst]), last[worst] / count, median(gaps)
    if share < STRAGGLER_LAST_SHARE or typical <= 0 or late_ms <= STRAGGLER_MIN_LATE * typical:
        return None
    return Straggler(rank=worst, collective=name, late_ms=late_ms, last_share=share, instances=count)


def _ratio(cand: float, base: float) -> float | None:
    return cand / base if base > 0 else None


def _rank_change(base: RankSummary, cand: RankSummary) -> RankChange:
    before = {layer.name: layer for layer in base.layers}
    changed = [layer.name for layer in cand.layers if layer.name in before and before[layer.name].path != layer.path]
    growth = sorted(
        ((layer.p50_ms / before[layer.name].p50_ms, layer.name) for layer in cand.layers
         if layer.name in before and before[layer.name].p50_ms > 0),
        reverse=True,
    )
    step = _ratio(median(cand.step_samples_ms), median(base.step_samples_ms)) if base.step_samples_ms and cand.step_samples_ms else None
    return RankChange(
        rank=cand.rank,
        step_ratio=step,
        compute_ratio=_ratio(cand.compute_ms, base.compute_ms),
        communication_ratio=_ratio(cand.communication_ms, base.communication_ms),
        path_changes=changed,
        slowest_layers=[name for ratio, name in growth[:3] if ratio > GROWTH],
    )


def _confined(changes: list[RankChange]) -> tuple[list[int], bool]:
    ratios = [c.compute_ratio for c in changes if c.compute_ratio is not None]
    if not ratios:
        return [], False
    middle = median(ratios)
    high = {c.rank for c in changes if c.compute_ratio is not None and c.compute_ratio > middle * (1.0 + CONFINED_MARGIN)}
    moved = {c.rank for c in changes if c.path_changes}
    if moved and len(moved) < len(changes):
        high |= moved
    uniform = not high and all(abs(r - middle) <= CONFINED_MARGIN * middle for r in ratios)
    return sorted(high), uniform


def _findings(comparison: RankComparison) -> list[Note]:
    out: list[Note] = []
    for side, found in (("baseline", comparison.baseline_straggler), ("candidate", comparison.candidate_straggler)):
        if found is not None:
            out.append(note("locate.ranks.straggler", side=side, rank=found.rank, collective=found.collective,
                            share=found.last_share, instances=found.instances, late_ms=found.late_ms))
    by_rank = {c.rank: c for c in comparison.changes}
    if comparison.confined_to:
        others = [c.compute_ratio for c in comparison.changes if c.rank not in comparison.confined_to and c.compute_ratio is not None]
        elsewhere = median(others) if others else None
        for rank in comparison.confined_to:
            c = by_rank[rank]
            out.append(note("locate.ranks.confined", rank=rank, ratio=c.compute_ratio, elsewhere=elsewhere,
                            path_changes=c.path_changes[:5], slowest=c.slowest_layers))
        waits = [c.communication_ratio for c in comparison.changes if c.rank not in comparison.confined_to and c.communication_ratio is not None]
        if waits and median(waits) > GROWTH:
            out.append(note("locate.ranks.waiting", ratio=median(waits), rank=comparison.confined_to[0]))
    elif comparison.uniform:
        ratios = [c.compute_ratio for c in comparison.changes if c.compute_ratio is not None]
        if ratios:
            out.append(note("locate.ranks.uniform", ranks=len(comparison.changes), ratio=median(ratios)))
    return out


def compare_rank_sets(base: RankSet, cand: RankSet) -> RankComparison:
    """Rank i of the candidate against rank i of the baseline; ``UserError`` when the sets hold different ranks."""
    base_ranks = {r.rank: r for r in base.ranks}
    cand_ranks = {r.rank: r for r in cand.ranks}
    if set(base_ranks) != set(cand_ranks):
        only_b = sorted(set(base_ranks) - set(cand_ranks))
        only_c = sorted(set(cand_ranks) - set(base_ranks))
        raise UserError(
            f"{cand.source}: the run sets hold different ranks ({len(base_ranks)} vs {len(cand_ranks)}; "
            f"only in the baseline: {only_b or '-'}, only in the candidate: {only_c or '-'})"
        )
    changes = [_rank_change(base_ranks[rank], cand_ranks[rank]) for rank in sorted(base_ranks)]
    confined, uniform = _confined(changes)
    late = straggler(cand)
    ratio = {c.rank: c.compute_ratio or 0.0 for c in changes}
    walked = max(confined, key=lambda rank: (ratio[rank], -rank)) if confined else (late.rank if late is not None else min(base_ranks))
    comparison = RankComparison(
        baseline=base.source, candidate=cand.source, ranks=len(changes), changes=changes,
        baseline_straggler=straggler(base), candidate_straggler=late, confined_to=confined, uniform=uniform, walked_rank=walked,
    )
    return comparison.model_copy(update={"findings": _findings(comparison)})


def walk_pair(baseline: str, candidate: str, *, executor: str = "local", on_rank: OnRank | None = None) -> tuple[RankComparison, Path, Path]:
    """Two run sets parsed and compared, with the trace files of the rank pair a single-run analysis should take
    (``walked_rank``); ``UserError`` unless both arguments are run sets."""
    from sparsedebug.sources.detect import load_run_set
    from sparsedebug.sources.runset.discover import is_run_set

    if not (is_run_set(baseline) and is_run_set(candidate)):
        raise UserError("give a run set (directory or glob of per-rank traces) on both sides, or on neither")
    base = load_run_set(baseline, executor=executor, on_rank=on_rank)
    cand = load_run_set(candidate, executor=executor, on_rank=on_rank)
    comparison = compare_rank_sets(base, cand)
    files = {r.rank: Path(r.file) for r in base.ranks}, {r.rank: Path(r.file) for r in cand.ranks}
    return comparison, files[0][comparison.walked_rank], files[1][comparison.walked_rank]
