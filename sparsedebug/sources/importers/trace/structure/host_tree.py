"""The CPU-side call tree of a trace: which range encloses which, and which range launched each GPU op.

Host ranges (ops, annotations, module calls) of one thread nest in time. One
sweep per thread over the ranges sorted by (start, -end) with a stack of open
ranges gives every range its parent; a second sweep over the launch times of the
GPU ops gives each op the innermost range around its launch call. Both are
O(n log n).

Clock rounding can make a range end a little after its parent, or start a
little before the previous call on its thread ends. A range that starts inside
another but ends after it is therefore its child only when most of it lies
inside (``encloses``); one that only overlaps the other's last instant is the
next call, not a call made from inside it. Nesting must not depend on which way
a nanosecond was rounded: the op tree is what names layers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from sparsedebug.sources.importers.trace.read.events import HostRange, Thread, TraceEvents

# Tie-break for ranges with identical start and end: the outer kind first.
_KIND_ORDER = {"step": 0, "annotation": 1, "module": 2, "op": 3}


def _sort_key(r: HostRange) -> tuple[float, float, int]:
    return (r.ts, -r.end, _KIND_ORDER.get(r.kind, 4))


def encloses(outer: HostRange, inner: HostRange) -> bool:
    """``inner`` (starting at or after ``outer``) is nested in ``outer``: it starts inside and ends inside, or mostly inside.

    Zero-length ranges at one instant nest in the order ``link_parents`` sorts them.
    """
    if outer.end > inner.ts:
        return inner.end <= outer.end or outer.end - inner.ts > inner.end - outer.end
    return outer.ts == outer.end == inner.ts


def link_parents(ranges: list[HostRange]) -> dict[Thread, list[HostRange]]:
    """Set ``parent`` (an index into ``ranges``, -1 at the root) on every range; return ranges by thread, sorted."""
    by_thread: dict[Thread, list[HostRange]] = defaultdict(list)
    for r in ranges:
        by_thread[r.thread].append(r)
    for items in by_thread.values():
        items.sort(key=_sort_key)
        stack: list[HostRange] = []
        for r in items:
            while stack and not encloses(stack[-1], r):
                stack.pop()
            r.parent = stack[-1].index if stack else -1
            stack.append(r)
    return by_thread


def innermost(items: list[HostRange], points: list[tuple[float, int]]) -> dict[int, HostRange]:
    """For each (time, key) point, the innermost of ``items`` (one thread, sorted by ``link_parents``) containing it.

    A range contains time t when ``ts <= t <= end``.
    """
    result: dict[int, HostRange] = {}
    stack: list[HostRange] = []
    i = 0
    for t, key in sorted(points):
        while i < len(items) and items[i].ts <= t:
            while stack and stack[-1].end < items[i].ts:
                stack.pop()
            stack.append(items[i])
            i += 1
        while stack and stack[-1].end < t:
            stack.pop()
        # a range that outlived its parent may sit under one that already ended: walk down
        j = len(stack) - 1
        while j >= 0 and not (stack[j].ts <= t <= stack[j].end):
            j -= 1
        if j >= 0:
            result[key] = stack[j]
    return result


def link_launches(trace: TraceEvents, by_thread: dict[Thread, list[HostRange]]) -> None:
    """Give each GPU op its launch call (time, thread, name) and the innermost host range around it."""
    for op in trace.gpu:
        if op.correlation is None:
            continue
        launch = trace.launches.get(op.correlation)
        if launch is not None:
            op.launch_ts, op.launch_thread, op.launch_name = launch
        elif op.correlation in trace.flow_starts:
            op.launch_ts, op.launch_thread = trace.flow_starts[op.correlation]
    points: dict[Thread, list[tuple[float, int]]] = defaultdict(list)
    for k, op in enumerate(trace.gpu):
        if op.launch_ts is not None and op.launch_thread in by_thread:
            points[op.launch_thread].append((op.launch_ts, k))
    for thread, pts in points.items():
        for k, host in innermost(by_thread[thread], pts).items():
            trace.gpu[k].host = host.index
            host.launches += 1


def ancestors(ranges: list[HostRange], index: int | None) -> Iterator[HostRange]:
    """The range ``index`` and its ancestors, innermost first."""
    while index is not None and index >= 0:
        host = ranges[index]
        yield host
        index = host.parent


def children(ranges: list[HostRange], by_thread: dict[Thread, list[HostRange]] | None = None) -> list[list[int]]:
    """Child indices of every range, in start order.

    ``by_thread``: what ``link_parents`` returned for ``ranges`` (a range's children are on its thread,
    so its sorted per-thread lists give the same order without sorting again).
    """
    kids: list[list[int]] = [[] for _ in ranges]
    ordered = sorted(ranges, key=_sort_key) if by_thread is None else (r for items in by_thread.values() for r in items)
    for r in ordered:
        if r.parent >= 0:
            kids[r.parent].append(r.index)
    return kids


def gpu_launch_count(ranges: list[HostRange], kids: list[list[int]]) -> list[int]:
    """GPU ops launched inside each range, its descendants included."""
    total = [r.launches for r in ranges]
    order = [r.index for r in ranges if r.parent < 0]  # becomes a pre-order: every range after its parent
    for index in order:
        order.extend(kids[index])
    for index in reversed(order):  # every range before its parent
        parent = ranges[index].parent
        if parent >= 0:
            total[parent] += total[index]
    return total
