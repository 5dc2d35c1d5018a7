"""Small search-state objects, kept apart from any command or replay (as Polygraphy's BisectMarker).

Each object only says what to probe next and takes the probe's outcome; the
caller runs the probe (a replay, a synthetic oracle in tests). That keeps the
search logic testable on pure functions and the expensive probing outside.

- ``BisectMarker``: binary search for the first "bad" index of a monotone
  sequence (good ... good bad ... bad), e.g. the smallest number of blocks that
  still shows a regression.
- ``DDMin``: Zeller and Hildebrandt's delta debugging (ddmin) over a set of
  changes: it finds a 1-minimal subset that still makes the probe fail, keeps
  every change of an interaction that only fails together, and caches outcomes
  so no subset is probed twice.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Sequence
from enum import StrEnum
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class BisectMarker:
    """First bad index in ``[0, count)`` for a monotone good-then-bad sequence.

    Usage::

        marker = BisectMarker(count)
        while not marker.done:
            marker.step(is_good(marker.current))
        marker.first_bad  # None when every index was good

    Index ``count`` is assumed bad (a sentinel) unless ``last_known_bad`` is
    False, in which case ``first_bad`` is ``None`` when nothing failed.
    """

    def __init__(self, count: int, *, last_known_bad: bool = False) -> None:
        if count < 0:
            raise ValueError("count must be >= 0")
        self._lo = 0  # every index below lo is good
        self._hi = count  # every index at or above hi is bad (or the end)
        self._count = count
        self._bad_seen = last_known_bad
        self.steps = 0

    @property
    def done(self) -> bool:
        """Whether the search has converged."""
        return self._lo >= self._hi

    @property
    def current(self) -> int:
        """The index to probe next."""
        if self.done:
            raise ValueError("bisection is done; nothing left to probe")
        return (self._lo + self._hi) // 2

    def step(self, good: bool) -> None:
        """Record the outcome of probing ``current``."""
        index = self.current
        self.steps += 1
        if good:
            self._lo = index + 1
        else:
            self._hi = index
            self._bad_seen = True

    def remaining(self) -> int:
        """Upper bound on the probes still needed."""
        width = self._hi - self._lo
        return 0 if width <= 0 else width.bit_length()

    @property
    def first_bad(self) -> int | None:
        """The first bad index once done; ``None`` when no probe failed and the end is not known bad."""
        if not self.done:
            raise ValueError("bisection is not done")
        if self._hi >= self._count and not self._bad_seen:
            return None
        return self._hi


class Outcome(StrEnum):
    """What one probe of a subset of changes showed."""

    FAIL = "fail"  # the regression reproduces
    PASS = "pass"  # it does not
    UNRESOLVED = "unresolved"  # the probe could not decide (invalid variant, flaky measurement)


class DDMin(Generic[T]):
    """Delta debugging state: propose subsets of ``changes``, take outcomes, end at a 1-minimal failing subset.

    The caller must already know that the full set fails and the empty set
    passes (ddmin's preconditions). Usage::

        search = DDMin(changes)
        while not search.done:
            search.report(probe(search.pending))
        search.result

    Outcomes are cached by subset: a subset seen before is answered from the
    cache and never proposed again. ``probes`` counts real probes.
    """

    def __init__(self, changes: Sequence[T]) -> None:
        if len(set(changes)) != len(changes):
            raise ValueError("changes must be distinct")
        self._order = {change: i for i, change in enumerate(changes)}
        self._cache: dict[frozenset[T], Outcome] = {}
        self.probes = 0
        self.history: list[tuple[tuple[T, ...], Outcome]] = []
        self._result: tuple[T, ...] = tuple(changes)
        self._gen = self._run(list(changes))
        self._pending: tuple[T, ...] | None = None
        self._advance(None)

    @property
    def done(self) -> bool:
        """Whether a 1-minimal failing subset has been found."""
        return self._pending is None

    @property
    def pending(self) -> tuple[T, ...]:
        """The subset to probe next (in the original order of the changes)."""
        if self._pending is None:
            raise ValueError("ddmin is done; nothing left to probe")
        return self._pending

    @property
    def result(self) -> tuple[T, ...]:
        """The smallest failing subset found so far (the final answer once done)."""
        return self._result

    def report(self, outcome: Outcome | bool) -> None:
        """Record the outcome of probing ``pending`` (``True`` means the regression reproduced)."""
        if self._pending is None:
            raise ValueError("ddmin is done; no probe is pending")
        if isinstance(outcome, bool):
            outcome = Outcome.FAIL if outcome else Outcome.PASS
        key = frozenset(self._pending)
        self._cache[key] = outcome
        self.probes += 1
        self.history.append((self._pending, outcome))
        self._advance(outcome)

    def _advance(self, outcome: Outcome | None) -> None:
        try:
            subset = self._gen.send(outcome) if outcome is not None else next(self._gen)
            while frozenset(subset) in self._cache:
                subset = self._gen.send(self._cache[frozenset(subset)])
            self._pending = tuple(sorted(subset, key=self._order.__getitem__))
        except StopIteration:
            self._pending = None

    def _run(self, changes: list[T]) -> Generator[list[T], Outcome, None]:
        current = changes
        granularity = 2
        while len(current) >= 2:
            chunks = _split(current, granularity)
            reduced = False
            for chunk in chunks:
                if (yield chunk) == Outcome.FAIL:
                    current, granularity, reduced = chunk, 2, True
                    break
            if not reduced and granularity > 2:
                for i in range(len(chunks)):
                    complement = [c for j, chunk in enumerate(chunks) if j != i for c in chunk]
                    if (yield complement) == Outcome.FAIL:
                        current, granularity, reduced = complement, max(granularity - 1, 2), True
                        break
            if reduced:
                self._result = tuple(sorted(current, key=self._order.__getitem__))
                continue
            if granularity >= len(current):
                break
            granularity = min(2 * granularity, len(current))
        self._result = tuple(sorted(current, key=self._order.__getitem__))


def _split(items: list[T], parts: int) -> list[list[T]]:
    """Split into ``parts`` contiguous chunks of near-equal size."""
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        chunks.append(items[start:end])
        start = end
    return [chunk for chunk in chunks if chunk]
