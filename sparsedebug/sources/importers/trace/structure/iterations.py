"""Where the iterations (forwards, training steps) of a trace begin and end, on the host clock.

In order of preference:

1. ``ProfilerStep#N`` ranges (``torch.profiler.schedule`` + ``prof.step()``).
2. The period of the repeating sequence of top-level calls (layer annotations,
   module calls and ops outside them) that launched GPU work, on the thread that
   launched the most: the shortest unit the sequence tiles into
   (at least 95% of ops match the op one unit later, at least two units). A model
   made of identical blocks (no embedding or head) tiles into blocks, not
   forwards: units are then grouped ``m`` to an iteration when the host gaps
   before the group boundaries are all longer than every gap between units inside
   a group (the Python loop between forwards costs host time). Under the null
   hypothesis that gaps are exchangeable this happens by chance with probability
   ``1 / C(units - 1, boundaries)`` for one grouping; summed (union bound) over
   the groupings tried that are at least as extreme, a grouping is taken when
   that is at most 0.05, else each unit is an iteration.
3. With layer annotations whose sequence does not repeat exactly: each call of
   the first annotated layer starts one.
4. ``cudaGraphLaunch`` calls (CUDA-graph replays).
5. The period of the sequence of kernel names, for traces without CPU ops.
6. Otherwise the whole trace is one iteration.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from sparsedebug.records.notes import Note, note
from sparsedebug.sources.importers.trace.read.events import GpuOp, HostRange, TraceEvents

# Share of ops that must equal the op one unit later for a unit to be the sequence's period.
MATCH_FRACTION = 0.95

# Largest chance probability at which host gaps group repeated units into one iteration.
GROUPING_ALPHA = 0.05

_MAX_CANDIDATES = 64


@dataclass
class Iterations:
    """Iteration windows (host start, host end), where they came from, and which ones are incomplete."""

    source: str
    windows: list[tuple[float, float]]
    detail: Note | None = None
    partial: set[int] = field(default_factory=set)
    _starts: list[float] = field(default_factory=list, init=False, repr=False, compare=False)
    _starts_of: object = field(default=None, init=False, repr=False, compare=False)

    def index_of(self, t: float) -> int:
        """The iteration a host time falls in (-1 before the first)."""
        if self._starts_of is not self.windows:  # the starts of these windows, listed once
            self._starts, self._starts_of = [w[0] for w in self.windows], self.windows
        return bisect.bisect_right(self._starts, t) - 1


def smallest_period(seq: Sequence[Hashable]) -> int | None:
    """Shortest unit length ``p`` (at least two units) such that ``seq[i] == seq[i + p]`` for 95% of ``i``.

    Candidate lengths are the distances of the rarest repeated items from their
    first occurrence (an item seen r times per unit recurs at the unit length),
    so the check is O(n) per candidate, not O(n^2) over all lengths.
    """
    n = len(seq)
    if n < 2:
        return None
    interned: dict[Hashable, int] = {}
    ids = [interned.setdefault(item, len(interned)) for item in seq]
    counts = Counter(ids)
    rare = sorted((c, i) for i, c in counts.items() if c >= 2)
    candidates: set[int] = set()
    for _count, item in rare[:8]:
        positions = [k for k, v in enumerate(ids) if v == item][:_MAX_CANDIDATES + 1]
        candidates.update(k - positions[0] for k in positions[1:])  # an item seen r times per unit recurs at +unit
    allowed = (1.0 - MATCH_FRACTION) * n
    for p in sorted(candidates):
        if n // p < 2:
            break
        mismatches = 0
        for i in range(n - p):
            if ids[i] != ids[i + p]:
                mismatches += 1
                if mismatches > allowed:
                    break
        if mismatches <= (1.0 - MATCH_FRACTION) * (n - p):
            return p
    return None


def group_by_gaps(gaps: Sequence[float]) -> tuple[int, float] | None:
    """Units per iteration ``m`` from the host gaps between ``k = len(gaps) + 1`` consecutive units, with its chance probability.

    ``m`` must divide ``k`` into at least two groups, and every gap at a group
    boundary must exceed every gap inside a group. For one ``m`` that happens by
    chance with probability ``1 / C(k - 1, boundaries)``; several ``m`` are tried,
    so the probability reported is the union bound over every ``m`` at least as
    extreme as the one taken (the smallest).
    """
    k = len(gaps) + 1
    found: list[tuple[float, int]] = []
    for m in range(2, k // 2 + 1):
        if k % m:
            continue
        boundary = [g for j, g in enumerate(gaps, start=1) if j % m == 0]
        inside = [g for j, g in enumerate(gaps, start=1) if j % m != 0]
        if boundary and inside and min(boundary) > max(inside):
            found.append((1.0 / math.comb(k - 1, len(boundary)), m))
    if not found:
        return None
    best, m = min(found)
    chance = sum(1.0 / math.comb(k - 1, (k // q) - 1) for q in range(2, k // 2 + 1) if k % q == 0 and 1.0 / math.comb(k - 1, (k // q) - 1) <= best)
    return (m, chance) if chance <= GROUPING_ALPHA else None


def _tiles(count: int, unit: int) -> list[tuple[int, int]]:
    """(first, last + 1) index ranges of consecutive units; a trailing remainder is its own (partial) unit."""
    bounds = [(i, min(i + unit, count)) for i in range(0, count, unit)]
    return bounds


def period_iterations(top: list[HostRange], signatures: list[str]) -> Iterations | None:
    """Iterations from the period of a thread's top-level op sequence (ops sorted by start)."""
    unit = smallest_period(signatures)
    if unit is None:
        return None
    units = _tiles(len(top), unit)
    full = [u for u in units if u[1] - u[0] == unit]
    gaps = [top[b[0]].ts - top[a[1] - 1].end for a, b in itertools.pairwise(full)]
    grouping = group_by_gaps(gaps)
    per = grouping[0] if grouping is not None else 1
    groups = [(full[i][0], full[i + per - 1][1]) for i in range(0, len(full), per)]
    if len(units) > len(full):
        groups.append(units[-1])
    windows = [(top[a].ts, max(r.end for r in top[a:b])) for a, b in groups]
    detail = note("sources.iterations.repeating_calls", unit=unit, units=len(full),
                  units_per_iteration=per if grouping is not None else None, p=grouping[1] if grouping is not None else None)
    partial = {len(groups) - 1} if len(units) > len(full) else set()
    return Iterations("repeating call sequence", windows, detail, partial)


def step_iterations(trace: TraceEvents) -> Iterations | None:
    """Iterations from ``ProfilerStep#N`` ranges."""
    if not trace.steps:
        return None
    steps = sorted(trace.steps, key=lambda r: r.ts)
    return Iterations("ProfilerStep", [(s.ts, s.end) for s in steps], note("sources.iterations.profiler_steps", count=len(steps)))


def annotation_iterations(first: str, annotations: list[HostRange]) -> Iterations | None:
    """Each call of the first annotated layer starts an iteration; its host end is the last annotation end before the next."""
    starts = sorted(a.ts for a in annotations if a.name == first)
    if not starts:
        return None
    ordered = sorted(annotations, key=lambda a: a.ts)
    windows: list[tuple[float, float]] = []
    j = 0
    for i, start in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else float("inf")
        host_end = start
        while j < len(ordered) and ordered[j].ts < nxt:
            if ordered[j].ts >= start:
                host_end = max(host_end, ordered[j].end)
            j += 1
        windows.append((start, host_end))
    return Iterations(f"annotation:{first}", windows, note("sources.iterations.annotation", layer=first))


def graph_launch_iterations(trace: TraceEvents) -> Iterations | None:
    """One iteration per ``cudaGraphLaunch`` call."""
    launches = sorted(ts for ts, _thread, name in trace.launches.values() if name.startswith("cudaGraphLaunch"))
    if not launches:
        return None
    return Iterations("cudaGraphLaunch", [(ts, ts) for ts in launches], note("sources.iterations.graph_launches", count=len(launches)))


def kernel_period_iterations(ops: list[GpuOp]) -> Iterations | None:
    """Iterations from the period of the kernel-name sequence (traces without CPU ops)."""
    ordered = sorted(ops, key=lambda op: (op.ts, op.end))
    unit = smallest_period([op.name for op in ordered])
    if unit is None:
        return None
    units = _tiles(len(ordered), unit)
    windows = [(_host_time(ordered[a]), _host_time(ordered[a])) for a, _b in units]
    partial = {len(units) - 1} if units[-1][1] - units[-1][0] < unit else set()
    return Iterations("kernel-sequence period", windows, note("sources.iterations.kernel_period", unit=unit), partial)


def _host_time(op: GpuOp) -> float:
    return op.launch_ts if op.launch_ts is not None else op.ts


def whole_trace(ops: list[GpuOp], ranges: Sequence[HostRange] = ()) -> Iterations:
    """The whole trace as one iteration, from its first launch, GPU op or host range."""
    start = min(op.launch_ts if op.launch_ts is not None else op.ts for op in ops)
    start = min([start, *(r.ts for r in ranges)])
    return Iterations("whole trace", [(start, start)], note("sources.iterations.whole_trace"))


def assign(ops: list[GpuOp], iterations: Iterations) -> list[list[GpuOp]]:
    """GPU ops per iteration, by launch time (op start when the launch is unknown); ops before the first are dropped."""
    starts = [w[0] for w in iterations.windows]
    groups: list[list[GpuOp]] = [[] for _ in starts]
    for op in ops:
        t = op.launch_ts if op.launch_ts is not None else op.ts
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0:
            groups[i].append(op)
    return groups
