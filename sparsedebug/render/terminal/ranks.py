"""Rich tables of a run set (one row per rank) and of two sets compared rank to rank."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from sparsedebug.records.ranks import RankComparison, RankSet, Straggler
from sparsedebug.render.words.notes import say


def _ms(value: float) -> str:
    return f"{value:.3f}"


def straggler_line(found: Straggler | None) -> str:
    """One line naming the straggler, or saying that no rank is one."""
    if found is None:
        return "straggler: none (no rank arrives last at the dominant collective consistently)"
    return (
        f"straggler: rank {found.rank}, last at {found.collective} in {found.last_share:.0%} of {found.instances} instances, "
        f"a median {found.late_ms:.3f} ms after the median rank"
    )


def rank_set_table(rank_set: RankSet) -> Table:
    """Per rank: where its number came from, iterations, step time, busy / compute / communication / overlap / idle."""
    table = Table(title=f"run set {rank_set.source}: {len(rank_set.ranks)} ranks ({rank_set.executor})", caption="ms per iteration, traced")
    for header in ("rank", "from", "steps", "step p50", "busy", "compute", "comm", "overlap", "idle", "collectives"):
        table.add_column(header, justify="right" if header not in ("from",) else "left", overflow="fold")
    for r in rank_set.ranks:
        step = r.step_p50_ms
        table.add_row(
            str(r.rank), r.rank_source, str(r.steps), "-" if step is None else _ms(step), _ms(r.busy_ms), _ms(r.compute_ms),
            _ms(r.communication_ms), _ms(r.overlap_ms), _ms(r.idle_ms), str(len(r.collectives)),
        )
    return table


def rank_comparison_view(comparison: RankComparison) -> Group:
    """Per rank: candidate over baseline step, compute and communication time; then the findings."""
    table = Table(title=f"ranks: {comparison.baseline} -> {comparison.candidate}", caption="candidate / baseline, per iteration")
    for header in ("rank", "step", "compute", "comm", "path changes", "slowest layers"):
        table.add_column(header, overflow="fold")
    for c in comparison.changes:
        table.add_row(
            str(c.rank),
            "-" if c.step_ratio is None else f"x{c.step_ratio:.3f}",
            "-" if c.compute_ratio is None else f"x{c.compute_ratio:.3f}",
            "-" if c.communication_ratio is None else f"x{c.communication_ratio:.3f}",
            str(len(c.path_changes)),
            ", ".join(c.slowest_layers) or "-",
        )
    lines = [f"- {say(finding)}" for finding in comparison.findings] or ["- no rank stands out: no straggler, no confined change"]
    lines.append(f"- the pair analysed below is rank {comparison.walked_rank} against its baseline rank")
    return Group(table, "\n".join(lines))
